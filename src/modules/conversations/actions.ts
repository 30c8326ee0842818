import { Elysia, t } from 'elysia'
import { authPlugin } from '../../core/auth'
import { AppError, notFound } from '../../core/errors'
import type { RateLimiter } from '../../core/rate-limit'
import { recordUsage } from '../../core/usage'
import type { PrometheusMetrics } from '../analytics/prometheus'
import { type AddressOf, auditContextOf } from '../audit/context'
import type { AuthService } from '../auth/service'
import { streamReply, streamResponses } from '../chat'
import { ChatResponse } from '../chat/model'
import { requestedCollections } from '../chat/model'
import { type ChatService, type Exchange, UNTITLED, usageOfChat } from '../chat/service'
import { ErrorResponse } from '../system/model'
import type { ConversationResolver } from './access'
import { attachment, conversationJson, conversationMarkdown, exportFileName } from './export'
import type { ConversationFiles } from './files'
import {
  Conversation,
  ConversationAccessRequest,
  ConversationAccessResponse,
  ConversationParams,
  EditRequest,
  ExportQuery,
  FeedbackRequest,
  FeedbackResponse,
  FileDeleted,
  FileParams,
  FilesAccepted,
  FilesResponse,
  MessageParams,
  NewConversation,
  RatingsResponse,
  RegenerateRequest,
} from './model'
import type { ConversationStore } from './store'

type ChatResponseBody = typeof ChatResponse.static
/** An access list as stored: every entry's role is viewer (the table's CHECK). */
type AccessBody = typeof ConversationAccessResponse.static

const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 429: ErrorResponse }
const STREAMED = 'multipart body, read as a stream by the handler'

export interface ConversationActionsDeps {
  store: ConversationStore
  resolver: ConversationResolver
  chat: ChatService
  files: ConversationFiles
  auth: AuthService
  limiter: RateLimiter
  addressOf: AddressOf
  prometheus?: PrometheusMetrics
  log?: (line: string) => void
}

/** Whether the client asked for server-sent events. */
const wantsEvents = (request: Request) => (request.headers.get('accept') ?? '').includes('text/event-stream')

/**
 * What people do with a conversation besides sending to it: make one empty (to attach files
 * first), regenerate the last reply, edit a message, rate replies, attach files, export it.
 * Who may do what is the conversation resolver's answer (access.ts): the owner everything; a viewer
 * of a shared conversation reads, exports and rates; anyone else gets 404.
 */
export function conversationActionsModule(deps: ConversationActionsDeps) {
  const { store, resolver, chat, files, prometheus } = deps
  const log = deps.log ?? console.error

  /** A reply made by an exchange: streamed as SSE when asked, else whole. */
  const answer = async (exchange: Exchange, request: Request, set: { headers: Record<string, unknown> }, route: string): Promise<ChatResponseBody> => {
    // A Response is sent as it is (the schema describes the JSON answer).
    if (wantsEvents(request)) return streamReply(exchange, set, request, log, route) as unknown as ChatResponseBody
    const result = await exchange.generator.generate(exchange.messages, exchange.options, request.signal)
    const response = await exchange.finish(result.text, { cancelled: result.finishReason === 'cancelled' })
    recordUsage(request, usageOfChat(response))
    return response
  }

  return new Elysia({ name: 'module:conversation-actions', prefix: '/conversations', tags: ['Conversations'] })
    .use(authPlugin(deps.auth, deps.limiter))
    .post(
      '',
      async ({ body, principal, status }) => status(201, await store.create(principal.user.id, body?.title?.trim() || UNTITLED)),
      {
        auth: true,
        body: t.Optional(NewConversation),
        response: { 201: Conversation, ...errors },
        detail: { summary: 'A new, empty conversation (to attach files before the first message); titled by its first message unless given a title' },
      },
    )
    .post(
      '/:id/regenerate',
      async ({ params, body, principal, request, set }) => {
        const { conversation } = await resolver.read(principal.user.id, params.id, 'owner')
        const named = requestedCollections(body?.collection, body?.collections)
        const exchange = await chat.prepareRegenerate(conversation, named.length ? named : undefined)
        return answer(exchange, request, set, 'POST /conversations/:id/regenerate')
      },
      {
        auth: true,
        params: ConversationParams,
        body: RegenerateRequest,
        response: { 200: ChatResponse, ...errors, 503: ErrorResponse, 507: ErrorResponse },
        detail: {
          summary: 'A new reply replacing the last one (to the same question). With Accept: text/event-stream, streamed as GET /stream streams',
          responses: { 200: { description: 'ChatResponse, or text/event-stream of JSON events when asked', content: { 'application/json': { schema: ChatResponse as object }, ...streamResponses[200].content } } },
        },
      },
    )
    .patch(
      '/:id/messages/:messageId',
      async ({ params, body, principal, request, set }) => {
        const { conversation } = await resolver.read(principal.user.id, params.id, 'owner')
        const named = requestedCollections(body.collection, body.collections)
        const exchange = await chat.prepareEdit(conversation, params.messageId, body.content, named.length ? named : undefined)
        return answer(exchange, request, set, 'PATCH /conversations/:id/messages/:messageId')
      },
      {
        auth: true,
        params: MessageParams,
        body: EditRequest,
        response: { 200: ChatResponse, ...errors, 503: ErrorResponse, 507: ErrorResponse },
        detail: { summary: 'Edit one of your messages: it is replaced (keeping its id), the messages after it dropped, and a new reply made (SSE with Accept: text/event-stream)' },
      },
    )
    .post(
      '/:id/messages/:messageId/feedback',
      async ({ params, body, principal }) => {
        const { conversation } = await resolver.read(principal.user.id, params.id, 'viewer')
        const message = conversation.messages.find((m) => m.id === params.messageId)
        if (!message) throw notFound(`Message ${params.messageId}`)
        if (message.role !== 'assistant') throw new AppError('VALIDATION_ERROR', `Message ${params.messageId} is not a reply: only replies are rated`)
        const note = body.note?.trim() || null
        const rated = await store.rate(conversation.id, message.id, principal.user.id, { rating: body.rating, note })
        if (!rated) throw notFound(`Message ${params.messageId}`)
        prometheus?.rated(body.rating, rated.model)
        return { success: true, messageId: message.id, rating: body.rating, note, model: rated.model }
      },
      {
        auth: true,
        params: MessageParams,
        body: FeedbackRequest,
        response: { 200: FeedbackResponse, ...errors },
        detail: { summary: 'Rate a reply up or down (with an optional note): one rating per user and reply, a second replaces the first' },
      },
    )
    .get(
      '/:id/feedback',
      async ({ params, principal }) => {
        const reached = await resolver.resolve(principal.user.id, params.id, 'viewer')
        return { ratings: await store.ratingsOf(reached.id, principal.user.id) }
      },
      {
        auth: true,
        params: ConversationParams,
        response: { 200: RatingsResponse, ...errors },
        detail: { summary: "Your ratings of the conversation's replies, by message id" },
      },
    )
    .post(
      '/:id/files',
      async ({ params, principal, request, status }) => {
        const reached = await resolver.resolve(principal.user.id, params.id, 'owner')
        const result = await files.attach(reached.ownerId, reached.id, request, auditContextOf(request, principal, deps.addressOf))
        return result.kind === 'job' ? status(202, { jobId: result.jobId, status: result.status, files: result.files }) : { files: result.files }
      },
      {
        auth: true,
        // Read as a stream by the upload path (see the knowledge base's upload route).
        parse: () => STREAMED,
        params: ConversationParams,
        response: { 200: FilesResponse, 202: FilesAccepted, ...errors, 413: ErrorResponse, 503: ErrorResponse, 507: ErrorResponse },
        detail: {
          summary:
            "Attach files to a conversation (multipart/form-data, field files): read as uploads to the knowledge base are (same formats and limits; slow ones as a 202 ingestion job); the conversation's later replies are grounded in them",
          requestBody: { required: true, content: { 'multipart/form-data': { schema: t.Object({ files: t.Files() }) as object } } },
        },
      },
    )
    .get(
      '/:id/files',
      async ({ params, principal }) => {
        const reached = await resolver.resolve(principal.user.id, params.id, 'viewer')
        return { files: await files.list(reached.ownerId, reached.id) }
      },
      {
        auth: true,
        params: ConversationParams,
        response: { 200: FilesResponse, ...errors },
        detail: { summary: "A conversation's files: ready, still being read (queued, running) or failed (with the reason)" },
      },
    )
    .delete(
      '/:id/files/:fileId',
      async ({ params, principal, request }) => {
        const reached = await resolver.resolve(principal.user.id, params.id, 'owner')
        await files.remove(reached.ownerId, reached.id, params.fileId, auditContextOf(request, principal, deps.addressOf))
        return { success: true, id: params.fileId }
      },
      {
        auth: true,
        params: FileParams,
        response: { 200: FileDeleted, ...errors },
        detail: { summary: 'Remove a file from a conversation' },
      },
    )
    .get('/:id/access', async ({ params, principal }) => (await resolver.access(principal.user.id, params.id)) as AccessBody, {
      auth: true,
      params: ConversationParams,
      response: { 200: ConversationAccessResponse, ...errors },
      detail: { summary: "A conversation's owner and access list (its owner only)" },
    })
    .put(
      '/:id/access',
      async ({ params, body, principal, request }) =>
        (await resolver.replaceAccess({ ...auditContextOf(request, principal, deps.addressOf), userId: principal.user.id }, params.id, body.shares)) as AccessBody,
      {
        auth: true,
        params: ConversationParams,
        body: ConversationAccessRequest,
        response: { 200: ConversationAccessResponse, ...errors },
        detail: {
          summary:
            'Share a conversation to read: replaces its access list (users by id or email, groups, everyone; role viewer). Viewers read, export and rate it; revocation counts at their next request',
        },
      },
    )
    .get(
      '/:id/export',
      async ({ params, query, principal, set }) => {
        const { conversation } = await resolver.read(principal.user.id, params.id, 'viewer')
        const json = query.format === 'json'
        set.headers['content-type'] = json ? 'application/json; charset=utf-8' : 'text/markdown; charset=utf-8'
        set.headers['content-disposition'] = attachment(exportFileName(conversation, json ? 'json' : 'md'))
        return json ? conversationJson(conversation) : conversationMarkdown(conversation)
      },
      {
        auth: true,
        params: ConversationParams,
        query: ExportQuery,
        response: { 200: t.String(), ...errors },
        detail: {
          summary: 'Download a conversation: format=markdown (text/markdown, sources as footnotes; the default) or format=json (the conversation with its sources)',
          responses: {
            200: {
              description: 'The conversation as a file (Content-Disposition: attachment)',
              content: { 'text/markdown': { schema: { type: 'string' as const } }, 'application/json': { schema: Conversation as object } },
            },
          },
        },
      },
    )
}
