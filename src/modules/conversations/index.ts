import { Elysia } from 'elysia'
import { actingUserId, authPlugin } from '../../core/auth'
import type { RateLimiter } from '../../core/rate-limit'
import type { AuthService } from '../auth/service'
import { ErrorResponse } from '../system/model'
import type { ConversationResolver } from './access'
import type { ConversationFiles } from './files'
import { ConversationParams, ConversationsQuery, ConversationsResponse, DeletedResponse, ListedConversation, OwnerQuery, RenameRequest } from './model'
import { searchTerms } from './search'
import type { Conversation, ConversationStore } from './store'

const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 429: ErrorResponse }

/** What the conversation routes use when the app has it: the files deleted with a conversation, and who reaches a shared one. */
export interface ConversationsExtras {
  files?: ConversationFiles
  resolver?: ConversationResolver
}

export function conversationsModule(store: ConversationStore, auth: AuthService, limiter: RateLimiter, extras: ConversationsExtras = {}) {
  const { resolver } = extras
  /** Conversations as listed: each with the caller's access and its owner (id and email). */
  const withOwners = async <C extends Conversation>(conversations: C[], userId: string, known?: { id: string; email: string }) => {
    const owners = new Map<string, { id: string; email: string }>(known ? [[known.id, known]] : [])
    for (const id of new Set(conversations.map((c) => c.userId))) {
      if (!owners.has(id)) owners.set(id, (await resolver?.lookup.owner(id)) ?? { id, email: '' })
    }
    return conversations.map((conversation) => ({ ...conversation, access: conversation.userId === userId ? ('owner' as const) : ('viewer' as const), owner: owners.get(conversation.userId)! }))
  }
  /** The caller itself, or (an admin naming `userId`) that user: the one whose conversations a route acts on. */
  // A copy, never the principal's user: the response is cleaned to its schema in place, and the
  // user object is the one the auth cache hands every later request (its roles would be stripped).
  const actingAs = (principal: { user: { id: string; email: string } }, userId: string) => (userId === principal.user.id ? { id: principal.user.id, email: principal.user.email } : undefined)

  return new Elysia({ name: 'module:conversations', prefix: '/conversations', tags: ['Conversations'] })
    .use(authPlugin(auth, limiter))
    .get(
      '',
      async ({ query, principal }) => {
        const limit = query.limit ?? 50
        const offset = query.offset ?? 0
        const userId = actingUserId(principal, query.userId)
        const { conversations, total } = query.q !== undefined ? await store.search(userId, searchTerms(query.q), limit, offset) : await store.list(userId, limit, offset)
        return { conversations: await withOwners(conversations, userId, actingAs(principal, userId)), total, hasMore: offset + conversations.length < total }
      },
      {
        auth: true,
        query: ConversationsQuery,
        response: { 200: ConversationsResponse, ...errors },
        detail: {
          summary:
            'Your conversations and those shared with you (access, owner), newest activity first (limit 1..100, offset); with q, those whose title or a message holds its words, each with a match excerpt',
        },
      },
    )
    .get(
      '/:id',
      async ({ params, query, principal }) => {
        const userId = actingUserId(principal, query.userId)
        const conversation = resolver ? (await resolver.read(userId, params.id)).conversation : await store.get(params.id, userId)
        return (await withOwners([conversation], userId, actingAs(principal, userId)))[0]!
      },
      {
        auth: true,
        params: ConversationParams,
        query: OwnerQuery,
        response: { 200: ListedConversation, ...errors },
        detail: { summary: 'One conversation with its messages (yours, or one shared with you)' },
      },
    )
    .patch(
      '/:id',
      async ({ params, query, body, principal }) => {
        const userId = actingUserId(principal, query.userId)
        await resolver?.resolve(userId, params.id, 'owner')
        return store.rename(params.id, userId, body.title)
      },
      {
        auth: true,
        params: ConversationParams,
        query: OwnerQuery,
        body: RenameRequest,
        response: { 200: ListedConversation, ...errors, 507: ErrorResponse },
        detail: { summary: 'Rename a conversation ({ title })' },
      },
    )
    .delete(
      '/:id',
      async ({ params, query, principal }) => {
        const userId = actingUserId(principal, query.userId)
        await resolver?.resolve(userId, params.id, 'owner')
        // Its files first: a conversation is deleted only once they are gone (a failure leaves both, to try again).
        await extras.files?.removeAll(userId, params.id)
        await store.delete(params.id, userId)
        return { success: true, id: params.id }
      },
      {
        auth: true,
        params: ConversationParams,
        query: OwnerQuery,
        response: { 200: DeletedResponse, ...errors },
        detail: { summary: 'Delete a conversation (with its files and its access list)' },
      },
    )
}
