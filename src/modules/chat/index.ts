import { Elysia } from 'elysia'
import { actingUserId, authPlugin } from '../../core/auth'
import type { RateLimiter } from '../../core/rate-limit'
import { AppError } from '../../core/errors'
import { sseResponse } from '../../core/sse'
import { recordUsage } from '../../core/usage'
import type { AuthService } from '../auth/service'
import { ErrorResponse } from '../system/model'
import { ChatRequest, ChatResponse as ChatResponseSchema, requestedCollections, StreamQuery } from './model'
import { type ChatResponse, type ChatService, describeFailure, type Exchange, usageOfChat } from './service'

const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 429: ErrorResponse, 503: ErrorResponse, 507: ErrorResponse }

export function chatModule(chat: ChatService, auth: AuthService, limiter: RateLimiter, log: (line: string) => void = console.error) {
  return new Elysia({ name: 'module:chat', tags: ['Chat'] })
    .use(authPlugin(auth, limiter))
    .post(
      '/chat',
      async ({ body, principal, request }) => {
        const response = await chat.chat(
          {
            userId: actingUserId(principal, body.userId),
            message: body.message,
            context: body.context,
            optimizePrompt: body.optimizePrompt,
            conversationId: body.conversationId,
            collections: requestedCollections(body.collection, body.collections),
            assistant: body.assistant,
          },
          request.signal,
        )
        recordUsage(request, usageOfChat(response))
        return response
      },
      {
        auth: true,
        body: ChatRequest,
        response: { 200: ChatResponseSchema, ...errors },
        detail: { summary: 'Chat: one message in, the whole reply out (continues a conversation with conversationId)' },
      },
    )
    .get(
      '/stream',
      async ({ query, principal, request, set }) => {
        const exchange = await chat.prepare({
          userId: principal.user.id,
          message: query.message,
          context: query.context,
          optimizePrompt: query.optimizePrompt,
          conversationId: query.conversationId,
          collections: requestedCollections(query.collection, query.collections),
          assistant: query.assistant,
        })
        return streamReply(exchange, set, request, log, 'GET /stream')
      },
      {
        auth: true,
        query: StreamQuery,
        detail: { summary: 'Streaming chat over server-sent events: start, chunk…, end (or error)', responses: streamResponses },
      },
    )
    .post(
      '/chat/stream',
      async ({ body, principal, request, set }) => {
        const exchange = await chat.prepare({
          userId: actingUserId(principal, body.userId),
          message: body.message,
          context: body.context,
          optimizePrompt: body.optimizePrompt,
          conversationId: body.conversationId,
          collections: requestedCollections(body.collection, body.collections),
          assistant: body.assistant,
        })
        return streamReply(exchange, set, request, log, 'POST /chat/stream')
      },
      {
        auth: true,
        body: ChatRequest,
        detail: { summary: 'Streaming chat with a JSON body (as POST /chat) over server-sent events: start, chunk…, end (or error)', responses: streamResponses },
      },
    )
}

// Documented only: the response is a stream, so no schema is checked at run time.
export const streamResponses = {
  200: { description: 'text/event-stream of JSON events', content: { 'text/event-stream': { schema: { type: 'string' as const } } } },
  ...Object.fromEntries(
    Object.keys(errors).map((status) => [status, { description: 'ErrorResponse', content: { 'application/json': { schema: ErrorResponse as object } } }]),
  ),
}

/** The SSE events of one prepared exchange: start, chunk…, end (or error); stored when it ends. */
export function streamReply(exchange: Exchange, set: { headers: Record<string, unknown> }, request: Request, log: (line: string) => void, route: string) {
  return sseResponse(
    async function* (signal) {
      yield {
        type: 'start',
        conversationId: exchange.conversationId,
        model: exchange.model,
        ...(exchange.sources ? { sources: exchange.sources } : {}),
        ...(exchange.assistant ? { assistant: exchange.assistant, collectionsSkipped: exchange.collectionsSkipped } : {}),
      }
      let reply = ''
      let failure: { code: string; message: string } | null = null
      let stored: ChatResponse | undefined
      try {
        for await (const piece of exchange.generator.stream(exchange.messages, exchange.options, signal)) {
          reply += piece
          yield { type: 'chunk', content: piece }
        }
      } catch (error) {
        // A client that went away cancelled the reply; that is not a failure to report.
        if (!signal.aborted) {
          failure = describeFailure(error)
          if (!(error instanceof AppError)) log(`[${set.headers['x-request-id'] ?? '-'}] ${route} generation failed: ${(error as Error)?.stack ?? String(error)}`)
        }
      } finally {
        // Stored whatever happened: a cancelled or failed exchange as far as it got, marked so.
        // A failure to store (the conversation was deleted meanwhile) is told as an error event.
        try {
          stored = await exchange.finish(reply, { cancelled: signal.aborted, error: failure?.message })
          recordUsage(request, usageOfChat(stored))
        } catch (error) {
          failure ??= describeFailure(error)
        }
      }
      if (failure) {
        yield { type: 'error', ...failure }
        return
      }
      yield {
        type: 'end',
        conversationId: exchange.conversationId,
        tokens: stored!.metadata.tokens,
        responseTime: stored!.metadata.responseTime,
        ...(exchange.sources ? { sources: exchange.sources } : {}),
      }
    },
    set.headers as Record<string, string>,
    request.signal,
  )
}
