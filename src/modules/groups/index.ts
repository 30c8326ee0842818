import { Elysia } from 'elysia'
import { authPlugin } from '../../core/auth'
import type { RateLimiter } from '../../core/rate-limit'
import { type AddressOf, auditContextOf } from '../audit/context'
import type { AuthService } from '../auth/service'
import { ErrorResponse } from '../system/model'
import { AddMemberRequest, CreateGroupRequest, DeletedGroup, Group, GroupDetail, GroupParams, GroupsResponse, MemberParams, UpdateGroupRequest } from './model'
import type { GroupService } from './service'

const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 429: ErrorResponse }

/** Groups: admins manage them; a user sees the groups they are in. */
export function groupsModule(groups: GroupService, auth: AuthService, limiter: RateLimiter, addressOf: AddressOf) {
  return new Elysia({ name: 'module:groups', prefix: '/groups', tags: ['Groups'] })
    .use(authPlugin(auth, limiter))
    .post('', async ({ body, principal, request, status }) => status(201, await groups.create(auditContextOf(request, principal, addressOf), body)), {
      admin: true,
      body: CreateGroupRequest,
      response: { 201: Group, ...errors, 409: ErrorResponse },
      detail: { summary: 'Create a group (admin); 409 when the name is taken' },
    })
    .get(
      '',
      async ({ principal }) => {
        const list = await groups.list(principal)
        return { groups: list, total: list.length }
      },
      {
        auth: true,
        response: { 200: GroupsResponse, ...errors },
        detail: { summary: 'Groups: every group for an admin, the groups you are in for anyone else' },
      },
    )
    .get('/:id', ({ params, principal }) => groups.get(principal, params.id), {
      auth: true,
      params: GroupParams,
      response: { 200: GroupDetail, ...errors },
      detail: { summary: 'One group with its members (an admin, or a member of it; 404 to anyone else)' },
    })
    .patch('/:id', ({ params, body, principal, request }) => groups.update(auditContextOf(request, principal, addressOf), params.id, body), {
      admin: true,
      params: GroupParams,
      body: UpdateGroupRequest,
      response: { 200: Group, ...errors, 409: ErrorResponse },
      detail: { summary: 'Rename a group or change its description (admin); 409 when the name is taken' },
    })
    .delete('/:id', ({ params, principal, request }) => groups.remove(auditContextOf(request, principal, addressOf), params.id), {
      admin: true,
      params: GroupParams,
      response: { 200: DeletedGroup, ...errors },
      detail: { summary: 'Delete a group (admin): its members lose what it was given at their next request' },
    })
    .post('/:id/members', ({ params, body, principal, request }) => groups.addMember(auditContextOf(request, principal, addressOf), params.id, body), {
      admin: true,
      params: GroupParams,
      body: AddMemberRequest,
      response: { 200: GroupDetail, ...errors },
      detail: { summary: 'Add a member by userId or email (admin); adding a member again changes nothing' },
    })
    .delete('/:id/members/:userId', ({ params, principal, request }) => groups.removeMember(auditContextOf(request, principal, addressOf), params.id, params.userId), {
      admin: true,
      params: MemberParams,
      response: { 200: GroupDetail, ...errors },
      detail: { summary: 'Remove a member (admin): effective at their next request, on every replica' },
    })
}
