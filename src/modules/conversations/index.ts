import { Elysia } from 'elysia'
import { actingUserId, authPlugin } from '../../core/auth'
import type { RateLimiter } from '../../core/rate-limit'
import type { AuthService } from '../auth/service'
import { ErrorResponse } from '../system/model'
import { Conversation, ConversationParams, ConversationsQuery, ConversationsResponse, DeletedResponse, OwnerQuery, RenameRequest } from './model'
import type { ConversationFiles } from './files'
import { searchTerms } from './search'
import type { ConversationStore } from './store'

const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 429: ErrorResponse }

/** What the listing adds when the app has it: the files deleted with a conversation. */
export interface ConversationsExtras {
  files?: ConversationFiles
}

export function conversationsModule(store: ConversationStore, auth: AuthService, limiter: RateLimiter, extras: ConversationsExtras = {}) {
  return new Elysia({ name: 'module:conversations', prefix: '/conversations', tags: ['Conversations'] })
    .use(authPlugin(auth, limiter))
    .get(
      '',
      async ({ query, principal }) => {
        const limit = query.limit ?? 50
        const offset = query.offset ?? 0
        const userId = actingUserId(principal, query.userId)
        const { conversations, total } = query.q !== undefined ? await store.search(userId, searchTerms(query.q), limit, offset) : await store.list(userId, limit, offset)
        const own = userId === principal.user.id ? { id: userId, email: principal.user.email } : undefined
        return {
          conversations: conversations.map((conversation) => ({ ...conversation, access: 'owner' as const, ...(own ? { owner: own } : {}) })),
          total,
          hasMore: offset + conversations.length < total,
        }
      },
      {
        auth: true,
        query: ConversationsQuery,
        response: { 200: ConversationsResponse, ...errors },
        detail: { summary: 'Your conversations, newest activity first (limit 1..100, offset); with q, those holding its words, each with a match excerpt' },
      },
    )
    .get('/:id', ({ params, query, principal }) => store.get(params.id, actingUserId(principal, query.userId)), {
      auth: true,
      params: ConversationParams,
      query: OwnerQuery,
      response: { 200: Conversation, ...errors },
      detail: { summary: 'One conversation with its messages' },
    })
    .patch('/:id', ({ params, query, body, principal }) => store.rename(params.id, actingUserId(principal, query.userId), body.title), {
      auth: true,
      params: ConversationParams,
      query: OwnerQuery,
      body: RenameRequest,
      response: { 200: Conversation, ...errors, 507: ErrorResponse },
      detail: { summary: 'Rename a conversation ({ title })' },
    })
    .delete(
      '/:id',
      async ({ params, query, principal }) => {
        const userId = actingUserId(principal, query.userId)
        // Its files first: a conversation is deleted only once they are gone (a failure leaves both, to try again).
        if (extras.files && (await store.ownerOf(params.id)) === userId) await extras.files.removeAll(userId, params.id)
        await store.delete(params.id, userId)
        return { success: true, id: params.id }
      },
      {
        auth: true,
        params: ConversationParams,
        query: OwnerQuery,
        response: { 200: DeletedResponse, ...errors },
        detail: { summary: 'Delete a conversation' },
      },
    )
}
