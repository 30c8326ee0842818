import { Elysia } from 'elysia'
import { authPlugin } from '../../core/auth'
import type { RateLimiter } from '../../core/rate-limit'
import type { AuthService } from '../auth/service'
import { type AddressOf, auditContextOf } from '../audit/context'
import { ErrorResponse } from '../system/model'
import { AssistantAccessRequest, AssistantAccessResponse, AssistantList, AssistantParams, AssistantView, CreateAssistant, DeletedAssistant, UpdateAssistant } from './model'
import type { AssistantService } from './service'

const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 429: ErrorResponse, 503: ErrorResponse }

/** /assistants: presets a team shares (see docs/assistants.md); every {ref} goes through the one resolver. */
export function assistantsModule(assistants: AssistantService, auth: AuthService, limiter: RateLimiter, addressOf: AddressOf) {
  const context = (request: Request, principal: Parameters<typeof auditContextOf>[1] & { user: { id: string } }) => ({ ...auditContextOf(request, principal, addressOf), userId: principal.user.id })
  return new Elysia({ name: 'module:assistants', prefix: '/assistants', tags: ['Assistants'] })
    .use(authPlugin(auth, limiter))
    .get('/', ({ principal }) => assistants.list(principal.user.id), {
      auth: true,
      response: { 200: AssistantList, ...errors },
      detail: { summary: 'Your assistants, those shared with you, and the built-in agents (read-only)' },
    })
    .post(
      '/',
      async ({ body, principal, request, set }) => {
        const made = await assistants.create(context(request, principal), body)
        set.status = 201
        return made
      },
      {
        auth: true,
        body: CreateAssistant,
        response: { 201: AssistantView, ...errors },
        detail: { summary: 'Make an assistant: instructions, collections, tools, model, temperature, starters' },
      },
    )
    .get('/:ref', ({ params, principal }) => assistants.get(principal.user.id, params.ref), {
      auth: true,
      params: AssistantParams,
      response: { 200: AssistantView, ...errors },
      detail: { summary: 'One assistant (by name, id, <owner email>/<name> or a name shared with you)' },
    })
    .patch('/:ref', ({ params, body, principal, request }) => assistants.update(context(request, principal), params.ref, body), {
      auth: true,
      params: AssistantParams,
      body: UpdateAssistant,
      response: { 200: AssistantView, ...errors },
      detail: { summary: 'Change an assistant (owner, editor, manager, admin)' },
    })
    .delete('/:ref', ({ params, principal, request }) => assistants.delete(context(request, principal), params.ref), {
      auth: true,
      params: AssistantParams,
      response: { 200: DeletedAssistant, ...errors },
      detail: { summary: 'Delete an assistant (owner, manager, admin)' },
    })
    .get('/:ref/access', ({ params, principal }) => assistants.access(principal.user.id, params.ref), {
      auth: true,
      params: AssistantParams,
      response: { 200: AssistantAccessResponse, ...errors },
      detail: { summary: "An assistant's owner and access list (owner, manager, admin)" },
    })
    .put('/:ref/access', ({ params, body, principal, request }) => assistants.replaceAccess(context(request, principal), params.ref, body.shares, body.shareCollections === true), {
      auth: true,
      params: AssistantParams,
      body: AssistantAccessRequest,
      response: { 200: AssistantAccessResponse, ...errors },
      detail: { summary: "Replace an assistant's access list; shareCollections: true also gives the same people viewer on its collections you manage" },
    })
}
