import { randomUUID } from 'node:crypto'
import { storageFull, STORAGE_FULL_MESSAGE } from '../../core/storage'
import { AppError, notFound } from '../../core/errors'
import type { ModelUsage } from '../../core/usage'
import { type ChatMessage, type GenerateOptions, type Generator, replyBudget } from '../../ml'
import { countTextTokens, streamText, textPieces } from '../../ml/stream-text'
import type { Grounding, GroundingSource } from '../rag/answer/grounding'
import { titleFrom } from '../conversations/service'
import { conversationAssistant } from '../conversations/store'
import type { ConversationStore } from '../conversations/store'
import { assemblePrompt, optimizePrompt } from './prompt'

export interface ChatInput {
  userId: string
  message: string
  context?: string | null
  optimizePrompt?: boolean
  conversationId?: string | null
  /** Collections to ground the reply in (extension). */
  collections?: string[]
  /** An assistant reference: its instructions, collections and temperature shape the reply (issue 55). */
  assistant?: string | null
}

/** An assistant as chat uses it (AssistantService.persona): what the caller may read of it, now. */
export interface ChatPersona {
  id: string
  name: string
  instructions: string
  /** Its collections the caller can read, as collection references. */
  collections: string[]
  collectionsSkipped: number
  temperature: number | null
  /** Its collections are not checked yet: grounding checks them, leaving out (and counting) those the caller cannot read. */
  deferred?: boolean
}

/** Finds assistants for chat (set by the app; chat works without it, but not with `assistant`). */
export interface AssistantDirectory {
  persona(userId: string, ref: string, options?: { deferCollections?: boolean }): Promise<ChatPersona>
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
    /** The passages a grounded reply was given; `[n]` in the reply is sources[n-1]. */
    sources?: GroundingSource[]
    /** The assistant the reply came from. */
    assistant?: { id: string; name: string }
    /** How many of the assistant's collections the caller cannot read (left out; never named). */
    collectionsSkipped?: number
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
  /** For a reply grounded in collections: the passages given to the model. */
  sources?: GroundingSource[]
  /** The assistant answering, and how many of its collections were left out. */
  assistant?: { id: string; name: string }
  collectionsSkipped?: number
  /** What to generate with: the reply budget, and the assistant's temperature when it has one. */
  options: GenerateOptions
  /** Stores the user message and the reply (as far as it got) and returns the response. */
  finish(reply: string, options?: { cancelled?: boolean; error?: string }): Promise<ChatResponse>
}

export interface ChatDeps {
  conversations: ConversationStore
  generator: () => Promise<Generator>
  /** A promise when the accounts are in PostgreSQL. */
  userExists: (id: string) => boolean | Promise<boolean>
}

/** Chat: prompt assembly, generation (whole or streamed), and storing both turns. */
export class ChatService {
  /** Grounds replies in RAG collections; set by the app (chat works without it, but not with `collection`). */
  grounding: Grounding | null = null
  /** Finds assistants (`assistant` in a request); set by the app. */
  assistants: AssistantDirectory | null = null

  constructor(private readonly deps: ChatDeps) {}

  /** The engine replies come from. */
  generator(): Promise<Generator> {
    return this.deps.generator()
  }

  async prepare(raw: ChatInput): Promise<Exchange> {
    const startedAt = performance.now()
    // Lone UTF-16 surrogates cannot be stored (SQLite keeps UTF-8): made U+FFFD up front, so the
    // reply streamed and the reply stored are the same text.
    const input = { ...raw, message: raw.message.toWellFormed(), context: raw.context?.toWellFormed() }
    const { conversations } = this.deps
    const exists = this.deps.userExists(input.userId)
    if (!(exists instanceof Promise ? await exists : exists)) throw notFound(`User ${input.userId}`)
    const existing = input.conversationId ? await conversations.get(input.conversationId, input.userId) : null
    const generator = await this.deps.generator()
    const optimized = input.optimizePrompt === true
    const userMessage = optimized ? optimizePrompt(input.message) : input.message
    const history: ChatMessage[] = (existing?.messages ?? [])
      .filter((m) => m.role !== 'system' && m.content)
      .map((m) => ({ role: m.role, content: m.content }))
    const persona = await this.personaFor(input.userId, input.assistant, existing?.messages)
    const collections = [...new Set([...(persona?.collections ?? []), ...(input.collections ?? [])])]
    let grounded: Awaited<ReturnType<Grounding['ground']>> | null = null
    if (collections.length) {
      if (!this.grounding) throw new AppError('VALIDATION_ERROR', 'collection: this server has no knowledge base')
      const earlierQuestions = history.filter((m) => m.role === 'user').map((m) => m.content)
      const optional = persona?.deferred ? { optional: new Set(persona.collections) } : undefined
      grounded = await this.grounding.ground(input.userId, collections, userMessage, earlierQuestions, generator, optional)
    }
    const context = grounded?.context ? [input.context?.trim(), grounded.context].filter(Boolean).join('\n\n') : input.context
    const { messages, promptTokens } = await assemblePrompt(generator, { context, history, message: userMessage, optimized, ...(persona?.instructions.trim() ? { instructions: persona.instructions } : {}) })
    const conversationId = existing?.id ?? randomUUID()
    // Nothing relevant in the collections: the reply says so rather than letting a model answer from nowhere.
    const replier =
      grounded && !grounded.context && collections.length > (grounded.skipped ?? 0)
        ? new FixedReply(
            persona
              ? `I could not find anything relevant to that in what ${persona.name} answers from.`
              : `I could not find anything relevant to that in the collection${collections.length > 1 ? 's' : ''} ${collections.map((c) => `"${c}"`).join(', ')}.`,
            generator,
          )
        : generator
    const sources = grounded ? grounded.sources : undefined
    const assistant = persona ? { id: persona.id, name: persona.name } : undefined
    const withAssistant = persona ? { assistant: assistant!, collectionsSkipped: persona.collectionsSkipped + (grounded?.skipped ?? 0) } : {}
    const maxTokens = replyBudget(generator)
    return {
      conversationId,
      model: generator.id,
      generator: replier,
      ...(sources ? { sources } : {}),
      messages,
      maxTokens,
      options: { maxTokens, ...(persona?.temperature != null ? { temperature: persona.temperature } : {}) },
      ...withAssistant,
      promptTokens,
      optimized,
      userMessage,
      startedAt,
      finish: async (reply, options = {}) => {
        const completionTokens = await generator.countTokens(reply)
        await conversations.append(conversationId, [
          { role: 'user', content: input.message, tokens: promptTokens, metadata: optimized || assistant ? { ...(optimized ? { optimizedPrompt: userMessage } : {}), ...(assistant ? { assistant } : {}) } : undefined },
          {
            role: 'assistant',
            content: reply,
            tokens: completionTokens,
            metadata: {
              model: generator.id,
              ...(sources ? { sources } : {}),
              ...(assistant ? { assistant } : {}),
              ...(options.cancelled ? { cancelled: true } : {}),
              ...(options.error ? { error: options.error } : {}),
            },
          },
        ], existing ? undefined : { userId: input.userId, title: titleFrom(input.message) })
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
            ...(sources ? { sources } : {}),
            ...withAssistant,
          },
        }
      },
    }
  }

  /** POST /chat: the whole reply at once. */
  async chat(input: ChatInput, signal?: AbortSignal): Promise<ChatResponse> {
    const exchange = await this.prepare(input)
    const result = await exchange.generator.generate(exchange.messages, exchange.options, signal)
    return exchange.finish(result.text, { cancelled: result.finishReason === 'cancelled' })
  }

  /**
   * The assistant of an exchange: the one the conversation started with (a request naming another
   * is a 400), else the one the request names; resolved with the caller's rights at every request.
   */
  private async personaFor(userId: string, ref: string | null | undefined, history: { metadata?: Record<string, unknown> }[] | undefined): Promise<ChatPersona | null> {
    const kept = history ? conversationAssistant(history) : null
    if (!ref && !kept) return null
    if (!this.assistants) throw new AppError('VALIDATION_ERROR', 'assistant: this server has no assistants')
    const persona = await this.assistants.persona(userId, ref || kept!.id, { deferCollections: true })
    if (kept && persona.id !== kept.id) throw new AppError('VALIDATION_ERROR', `assistant: this conversation is with the assistant ${kept.name}; start a new conversation to talk to ${persona.name}`)
    return persona
  }
}

/** A reply decided without the model (nothing relevant to ground it in), streamed like a model's. */
class FixedReply implements Generator {
  readonly id: string
  readonly contextLength: number

  constructor(
    private readonly text: string,
    private readonly model: Generator,
  ) {
    this.id = model.id
    this.contextLength = model.contextLength
  }

  countTokens(text: string) {
    return this.model.countTokens(text)
  }

  async generate(_messages: ChatMessage[], options: GenerateOptions = {}, signal?: AbortSignal) {
    const text = signal?.aborted ? '' : textPieces(this.text, options.maxTokens).join('')
    return { text, promptTokens: 0, completionTokens: countTextTokens(text), finishReason: signal?.aborted ? ('cancelled' as const) : ('stop' as const) }
  }

  stream(_messages: ChatMessage[], options: GenerateOptions = {}, signal?: AbortSignal) {
    return streamText(this.text, options.maxTokens, signal)
  }
}

/** A reply's model and token counts, as analytics records them (see recordUsage). */
export function usageOfChat(response: ChatResponse): ModelUsage {
  return { model: response.metadata.model, promptTokens: response.metadata.promptTokens, completionTokens: response.metadata.completionTokens }
}

/** An error's code and message as the stream and the WebSocket report them. */
export function describeFailure(error: unknown): { code: string; message: string } {
  if (error instanceof AppError) return { code: error.code, message: error.message }
  if (storageFull(error)) return { code: 'INSUFFICIENT_STORAGE', message: STORAGE_FULL_MESSAGE }
  return { code: 'INTERNAL_ERROR', message: 'Generation failed' }
}
