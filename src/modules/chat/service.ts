import { randomUUID } from 'node:crypto'
import { AppError, notFound } from '../../core/errors'
import type { ModelUsage } from '../../core/usage'
import { type ChatMessage, type Generator, replyBudget } from '../../ml'
import { type ConversationStore, titleFrom } from '../conversations/service'
import { assemblePrompt, optimizePrompt } from './prompt'

export interface ChatInput {
  userId: string
  message: string
  context?: string | null
  optimizePrompt?: boolean
  conversationId?: string | null
}

export interface ChatResponse {
  response: string
  metadata: {
    model: string
    tokens: number
    responseTime: number
    optimized: boolean
    conversationId: string
    promptTokens: number
    completionTokens: number
    optimizedPrompt?: string
  }
}

/** One exchange, prepared: the prompt is assembled and the generator chosen, nothing stored yet. */
export interface Exchange {
  conversationId: string
  model: string
  generator: Generator
  messages: ChatMessage[]
  /** The longest reply to ask for: what the model's context leaves (see replyBudget). */
  maxTokens: number
  promptTokens: number
  optimized: boolean
  userMessage: string
  startedAt: number
  /** Stores the user message and the reply (as far as it got) and returns the response. */
  finish(reply: string, options?: { cancelled?: boolean; error?: string }): Promise<ChatResponse>
}

export interface ChatDeps {
  conversations: ConversationStore
  generator: () => Promise<Generator>
  userExists: (id: string) => boolean
}

/** Chat: prompt assembly, generation (whole or streamed), and storing both turns. */
export class ChatService {
  constructor(private readonly deps: ChatDeps) {}

  async prepare(raw: ChatInput): Promise<Exchange> {
    const startedAt = performance.now()
    // Lone UTF-16 surrogates cannot be stored (SQLite keeps UTF-8): made U+FFFD up front, so the
    // reply streamed and the reply stored are the same text.
    const input = { ...raw, message: raw.message.toWellFormed(), context: raw.context?.toWellFormed() }
    const { conversations } = this.deps
    if (!this.deps.userExists(input.userId)) throw notFound(`User ${input.userId}`)
    const existing = input.conversationId ? conversations.get(input.conversationId, input.userId) : null
    const generator = await this.deps.generator()
    const optimized = input.optimizePrompt === true
    const userMessage = optimized ? optimizePrompt(input.message) : input.message
    const history: ChatMessage[] = (existing?.messages ?? [])
      .filter((m) => m.role !== 'system' && m.content)
      .map((m) => ({ role: m.role, content: m.content }))
    const { messages, promptTokens } = await assemblePrompt(generator, { context: input.context, history, message: userMessage, optimized })
    const conversationId = existing?.id ?? randomUUID()
    return {
      conversationId,
      model: generator.id,
      generator,
      messages,
      maxTokens: replyBudget(generator),
      promptTokens,
      optimized,
      userMessage,
      startedAt,
      finish: async (reply, options = {}) => {
        const completionTokens = await generator.countTokens(reply)
        if (!existing) conversations.create(input.userId, titleFrom(input.message), conversationId)
        conversations.append(conversationId, [
          { role: 'user', content: input.message, tokens: promptTokens, metadata: optimized ? { optimizedPrompt: userMessage } : undefined },
          {
            role: 'assistant',
            content: reply,
            tokens: completionTokens,
            metadata: {
              model: generator.id,
              ...(options.cancelled ? { cancelled: true } : {}),
              ...(options.error ? { error: options.error } : {}),
            },
          },
        ])
        return {
          response: reply,
          metadata: {
            model: generator.id,
            tokens: promptTokens + completionTokens,
            responseTime: Math.round(performance.now() - startedAt),
            optimized,
            conversationId,
            promptTokens,
            completionTokens,
            ...(optimized ? { optimizedPrompt: userMessage } : {}),
          },
        }
      },
    }
  }

  /** POST /chat: the whole reply at once. */
  async chat(input: ChatInput, signal?: AbortSignal): Promise<ChatResponse> {
    const exchange = await this.prepare(input)
    const result = await exchange.generator.generate(exchange.messages, { maxTokens: exchange.maxTokens }, signal)
    return exchange.finish(result.text, { cancelled: result.finishReason === 'cancelled' })
  }
}

/** A reply's model and token counts, as analytics records them (see recordUsage). */
export function usageOfChat(response: ChatResponse): ModelUsage {
  return { model: response.metadata.model, promptTokens: response.metadata.promptTokens, completionTokens: response.metadata.completionTokens }
}

/** An error's code and message as the stream and the WebSocket report them. */
export function describeFailure(error: unknown): { code: string; message: string } {
  if (error instanceof AppError) return { code: error.code, message: error.message }
  return { code: 'INTERNAL_ERROR', message: 'Generation failed' }
}
