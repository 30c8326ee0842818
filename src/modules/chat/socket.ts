import { AppError } from '../../core/errors'
import { recordUsage } from '../../core/usage'
import type { SocketHandlers } from '../ws/registry'
import { MAX_MESSAGE, requestedCollections } from './model'
import { type ChatService, describeFailure, usageOfChat } from './service'

function optionalString(message: Record<string, unknown>, field: string, max: number): string | undefined {
  const value = message[field]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string' || value.length > max) throw new AppError('VALIDATION_ERROR', `${field} must be a string of at most ${max} characters`)
  return value
}

/** `stream_chat {message, conversationId?, context?, optimizePrompt?, collection?, collections?, assistant?}` → `stream_chunk {content}`… then `chat_response {data: ChatResponse}`. */
export function registerChatSocket(handlers: SocketHandlers, chat: ChatService): void {
  handlers.register('stream_chat', async (context, message) => {
    const { principal, signal, send } = context
    const text = message.message
    if (typeof text !== 'string' || text.length > MAX_MESSAGE || !/\S/.test(text)) {
      throw new AppError('VALIDATION_ERROR', `message must be a string of 1..${MAX_MESSAGE} characters, not blank`)
    }
    if (message.optimizePrompt !== undefined && typeof message.optimizePrompt !== 'boolean') {
      throw new AppError('VALIDATION_ERROR', 'optimizePrompt must be true or false')
    }
    const collections = message.collections
    if (collections !== undefined && collections !== null && (!Array.isArray(collections) || collections.length > 10 || collections.some((c) => typeof c !== 'string'))) {
      throw new AppError('VALIDATION_ERROR', 'collections must be an array of at most 10 collection names')
    }
    const exchange = await chat.prepare({
      userId: principal.user.id,
      message: text,
      conversationId: optionalString(message, 'conversationId', 100),
      context: optionalString(message, 'context', 100_000),
      optimizePrompt: message.optimizePrompt === true,
      collections: requestedCollections(optionalString(message, 'collection', 400), collections as string[] | undefined),
      assistant: optionalString(message, 'assistant', 400),
    })
    let reply = ''
    let failure: unknown = null
    try {
      for await (const piece of exchange.generator.stream(exchange.messages, exchange.options, signal)) {
        reply += piece
        send({ type: 'stream_chunk', content: piece })
      }
    } catch (error) {
      failure = error
    }
    // What is stored of a failure is what the client is told, never an internal error's text.
    const failed = failure !== null && !signal.aborted
    const response = await exchange.finish(reply, { cancelled: signal.aborted, error: failed ? describeFailure(failure).message : undefined })
    recordUsage(context, usageOfChat(response))
    if (failed) throw failure
    return response
  })
}
