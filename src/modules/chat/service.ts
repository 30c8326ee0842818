import { randomUUID } from 'node:crypto'
import { storageFull, STORAGE_FULL_MESSAGE } from '../../core/storage'
import { AppError, notFound } from '../../core/errors'
import type { ModelUsage } from '../../core/usage'
import { type ChatMessage, type GenerateOptions, type Generator, replyBudget } from '../../ml'
import { countTextTokens, streamText, textPieces } from '../../ml/stream-text'
import type { Grounding, GroundingSource } from '../rag/answer/grounding'
import { titleFrom } from '../conversations/service'
import { conversationAssistant, mayHaveFiles } from '../conversations/store'
import type { Conversation, ConversationStore, Message, NewMessage } from '../conversations/store'
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

/**
 * A reply made again (regenerate, edit): the conversation's messages from `fromId` on are replaced
 * by the exchange; `history` is what came before, `keepUserId` the id the (edited) user message
 * keeps, `storeUser` false when the user message stays as it is (a regeneration).
 */
export interface Rework {
  conversation: Conversation
  fromId: string
  history: Message[]
  storeUser: boolean
  keepUserId?: string
}

/** Files attached to conversations (conversations/files.ts): the collection holding a conversation's files, when it has any. */
export interface ConversationFilesLookup {
  groundingCollection(ownerId: string, conversationId: string): Promise<string | null>
  isFilesCollection(name: string): boolean
}

/** A new conversation's title until its first message names it (POST /conversations without a title). */
export const UNTITLED = 'New chat'

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
    sources?: (GroundingSource & { file?: boolean })[]
    /** The stored user message's and reply's ids. */
    messageId?: string
    replyId?: string
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
  sources?: (GroundingSource & { file?: boolean })[]
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
  /** The files attached to conversations; set by the app. */
  files: ConversationFilesLookup | null = null
  /** Finds assistants (`assistant` in a request); set by the app. */
  assistants: AssistantDirectory | null = null
  /** Who may post to a conversation (its owner; a viewer of a shared one gets 403, anyone else 404); set by the app. */
  conversationAccess: ((userId: string, conversationId: string) => Promise<unknown>) | null = null

  constructor(private readonly deps: ChatDeps) {}

  /**
   * The caller's own conversation to post to. One that is not theirs is asked of the resolver, to
   * answer as it does: 403 to a viewer of a shared conversation, 404 to anyone else. (The owner's
   * common case costs no extra query.)
   */
  private async ownConversation(userId: string, conversationId: string) {
    try {
      return await this.deps.conversations.get(conversationId, userId)
    } catch (error) {
      if (error instanceof AppError && error.code === 'NOT_FOUND' && this.conversationAccess) await this.conversationAccess(userId, conversationId)
      throw error
    }
  }

  /** The engine replies come from. */
  generator(): Promise<Generator> {
    return this.deps.generator()
  }

  async prepare(raw: ChatInput, rework?: Rework): Promise<Exchange> {
    const startedAt = performance.now()
    // Lone UTF-16 surrogates cannot be stored (SQLite keeps UTF-8): made U+FFFD up front, so the
    // reply streamed and the reply stored are the same text.
    const input = { ...raw, message: raw.message.toWellFormed(), context: raw.context?.toWellFormed() }
    const { conversations } = this.deps
    const exists = this.deps.userExists(input.userId)
    if (!(exists instanceof Promise ? await exists : exists)) throw notFound(`User ${input.userId}`)
    const existing = rework?.conversation ?? (input.conversationId ? await this.ownConversation(input.userId, input.conversationId) : null)
    const generator = await this.deps.generator()
    const optimized = input.optimizePrompt === true
    const userMessage = optimized ? optimizePrompt(input.message) : input.message
    const history: ChatMessage[] = (rework?.history ?? existing?.messages ?? [])
      .filter((m) => m.role !== 'system' && m.content)
      .map((m) => ({ role: m.role, content: m.content }))
    const persona = await this.personaFor(input.userId, input.assistant, existing?.messages)
    const requested = [...new Set(input.collections ?? [])]
    const collections = [...new Set([...(persona?.collections ?? []), ...requested])]
    // The conversation's own files ground its replies too (once one is ready). Whether it has any
    // was read with it (mayHaveFiles): most have none, and cost no look-up.
    const files = existing && this.files && mayHaveFiles(existing) ? await this.files.groundingCollection(existing.userId, existing.id) : null
    let grounded: Awaited<ReturnType<Grounding['ground']>> | null = null
    if (collections.length || files) {
      if (!this.grounding) throw new AppError('VALIDATION_ERROR', 'collection: this server has no knowledge base')
      const earlierQuestions = history.filter((m) => m.role === 'user').map((m) => m.content)
      const optional = persona?.deferred ? { optional: new Set(persona.collections) } : undefined
      grounded = await this.grounding.ground(input.userId, files ? [...collections, files] : collections, userMessage, earlierQuestions, generator, optional)
    }
    const context = grounded?.context ? [input.context?.trim(), grounded.context].filter(Boolean).join('\n\n') : input.context
    const { messages, promptTokens } = await assemblePrompt(generator, { context, history, message: userMessage, optimized, ...(persona?.instructions.trim() ? { instructions: persona.instructions } : {}) })
    const conversationId = existing?.id ?? randomUUID()
    // Nothing relevant in the collections: the reply says so rather than letting a model answer
    // from nowhere. (A conversation's files alone that hold nothing relevant: the model answers
    // as it would without them — people attach a file and go on talking about other things too.)
    const replier =
      grounded && !grounded.context && collections.length > (grounded.skipped ?? 0)
        ? new FixedReply(
            persona
              ? `I could not find anything relevant to that in what ${persona.name} answers from${files ? " or this conversation's files" : ''}.`
              : `I could not find anything relevant to that in the collection${collections.length > 1 ? 's' : ''} ${collections.map((c) => `"${c}"`).join(', ')}${files ? " or this conversation's files" : ''}.`,
            generator,
          )
        : generator
    const sources = grounded && (grounded.context || collections.length) ? grounded.sources.map((source) => (files && source.collection === files ? { ...source, title: source.id, collection: 'conversation', file: true } : source)) : undefined
    const replaced = rework
      ? (stored: NewMessage[]) => conversations.replaceFrom(conversationId, rework.fromId, rework.storeUser ? stored : stored.slice(1))
      : null
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
        const stored: NewMessage[] = [
          {
            ...(rework?.keepUserId ? { id: rework.keepUserId } : {}),
            role: 'user',
            content: input.message,
            tokens: promptTokens,
            metadata: optimized || assistant ? { ...(optimized ? { optimizedPrompt: userMessage } : {}), ...(assistant ? { assistant } : {}) } : undefined,
          },
          {
            role: 'assistant',
            content: reply,
            tokens: completionTokens,
            metadata: {
              model: generator.id,
              ...(sources ? { sources } : {}),
              ...(requested.length ? { collections: requested } : {}),
              ...(assistant ? { assistant } : {}),
              ...(options.cancelled ? { cancelled: true } : {}),
              ...(options.error ? { error: options.error } : {}),
            },
          },
        ]
        // A conversation made empty (to attach files first) is named by its first message.
        if (existing && !existing.messages.length && existing.title === UNTITLED && !rework) await conversations.rename(existing.id, existing.userId, titleFrom(input.message))
        const ids = replaced ? await replaced(stored) : await conversations.append(conversationId, stored, existing ? undefined : { userId: input.userId, title: titleFrom(input.message) })
        const messageId = rework && !rework.storeUser ? undefined : ids[0]
        const replyId = ids[ids.length - 1]
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
            ...(messageId ? { messageId } : {}),
            ...(replyId ? { replyId } : {}),
            ...withAssistant,
          },
        }
      },
    }
  }

  /**
   * A new reply to the conversation's last question, replacing its last reply: prepared like a
   * chat message (the question, the history before it, the collections the replaced reply was
   * grounded in unless `collections` is given, the conversation's files). 409 when the
   * conversation does not end with a reply.
   */
  async prepareRegenerate(conversation: Conversation, collections?: string[]): Promise<Exchange> {
    const last = conversation.messages.at(-1)
    const question = conversation.messages.at(-2)
    if (!last || last.role !== 'assistant' || !question || question.role !== 'user') {
      throw new AppError('CONFLICT', 'Nothing to regenerate: the conversation does not end with a reply to a message')
    }
    return this.prepare(
      { userId: conversation.userId, message: question.content, conversationId: conversation.id, collections: collections ?? collectionsOf(last) },
      { conversation, fromId: last.id, history: conversation.messages.slice(0, -2), storeUser: false },
    )
  }

  /**
   * Replaces one of the conversation's user messages with `content`, drops the messages after it
   * and answers again (the message keeps its id). 404 when the conversation has no user message of
   * that id.
   */
  async prepareEdit(conversation: Conversation, messageId: string, content: string, collections?: string[]): Promise<Exchange> {
    const index = conversation.messages.findIndex((message) => message.id === messageId)
    const message = conversation.messages[index]
    if (!message) throw notFound(`Message ${messageId}`)
    if (message.role !== 'user') throw new AppError('VALIDATION_ERROR', `Message ${messageId} is a reply: only your own messages can be edited (regenerate a reply instead)`)
    const next = conversation.messages[index + 1]
    return this.prepare(
      { userId: conversation.userId, message: content, conversationId: conversation.id, collections: collections ?? (next?.role === 'assistant' ? collectionsOf(next) : []) },
      { conversation, fromId: messageId, history: conversation.messages.slice(0, index), storeUser: true, keepUserId: messageId },
    )
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

/** The collections a stored reply was grounded in (`metadata.collections`). */
function collectionsOf(reply: Message): string[] {
  const named = reply.metadata?.collections
  return Array.isArray(named) ? named.filter((name): name is string => typeof name === 'string') : []
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
