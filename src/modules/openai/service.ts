import { randomUUID } from 'node:crypto'
import type { Static } from 'elysia'
import { AppError } from '../../core/errors'
import { OpenAiParamError } from '../../core/openai-error'
import { type ChatMessage, type Embedder, type GenerateOptions, type Generator, replyBudget } from '../../ml'
import { applyStops, countTextTokens, streamText, textPieces } from '../../ml/stream-text'
import { UpstreamGenerator } from '../../ml/upstream'
import { answerPrompt, answerQuestion } from '../rag/answer/answer'
import { collectionRef, type RagService } from '../rag/service'
import type { RagStore } from '../rag/store'
import { ASSISTANT_MODEL_PREFIX, type AssistantService } from '../assistants/service'
import type { ChatCompletion } from './model'
import { type CompletionRequest, earlierTurns, generateOptions, lastQuestion, refuseUnsupported, relayBody, systemInstructions, toChatMessages, wantsTools } from './request'

export interface OpenAiDeps {
  generator: () => Promise<Generator>
  embedder: () => Promise<Embedder>
  rag: () => RagService<RagStore>
  /** Assistants answer as `assistant:<owner email>/<name>` models (absent: no such models). */
  assistants?: () => AssistantService
  /** Unix seconds: the `created` of the engines. */
  startedAt: number
}

export interface ModelObject {
  id: string
  object: 'model'
  created: number
  owned_by: string
}

export interface Usage {
  prompt_tokens: number
  completion_tokens: number
  total_tokens: number
}

export interface Source {
  id: string
  title: string
  relevanceScore: number
}

/** A chat completion, resolved and checked, not yet run. */
export type CompletionPlan =
  | { kind: 'engine'; model: string; generator: Generator; messages: ChatMessage[]; options: GenerateOptions; includeUsage: boolean; sources?: Source[] }
  | { kind: 'rag'; model: string; collection: string; label: string; userId: string; question: string; conversation: ChatMessage[]; instructions: string; options: GenerateOptions; includeUsage: boolean }
  | { kind: 'relay'; model: string; generator: UpstreamGenerator; body: Record<string, unknown> }

export type ChatCompletionObject = Static<typeof ChatCompletion>

/** What a streamed completion hands the SSE response: chunk objects, then the closing `[DONE]`. */
export type StreamEvent = Record<string, unknown> | '[DONE]'

const RAG_PREFIX = 'rag:'
/** Passages a rag:<collection> model answers from, as POST /rag/answer's default. */
const RAG_PASSAGES = 3

const unknownModel = (id: string, why: string) => new OpenAiParamError('NOT_FOUND', `The model \`${id}\` does not exist: ${why}`, 'model', 'model_not_found')

function completionId(): string {
  return `chatcmpl-${randomUUID().replaceAll('-', '')}`
}

/** Tokens of a prompt the way the engine itself counts them: its chat template when it has one. */
async function promptTokens(generator: Generator, messages: ChatMessage[]): Promise<number> {
  const templated = (generator as { prompt?: (messages: ChatMessage[]) => string }).prompt
  if (typeof templated === 'function') return generator.countTokens(templated.call(generator, messages))
  return generator.countTokens(messages.map((m) => m.content).join('\n'))
}

const usage = (prompt: number, completion: number): Usage => ({ prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion })

/**
 * The OpenAI-compatible API over this server's engines: model listing, chat completions (whole
 * or streamed, grounded in a collection for rag:<collection>, relayed to the upstream model
 * server when tools are involved) and embeddings. Stateless: nothing is stored in conversations.
 */
export class OpenAiService {
  constructor(private readonly deps: OpenAiDeps) {}

  /** The active chat and embedding engines that load, and one rag:<collection> per collection of the caller. */
  async listModels(userId: string): Promise<ModelObject[]> {
    const engines = await Promise.allSettled([this.deps.generator(), this.deps.embedder()])
    const models: ModelObject[] = []
    for (const engine of engines) {
      if (engine.status === 'fulfilled' && !models.some((m) => m.id === engine.value.id)) {
        models.push({ id: engine.value.id, object: 'model', created: this.deps.startedAt, owned_by: 'universal-agent' })
      }
    }
    for (const collection of (await this.deps.rag().listCollections(userId)).collections) {
      models.push({ id: `${RAG_PREFIX}${collectionRef(collection)}`, object: 'model', created: Math.floor(Date.parse(collection.createdAt) / 1000), owned_by: collection.owner.id })
    }
    for (const assistant of (await this.deps.assistants?.().models(userId)) ?? []) {
      models.push({ id: assistant.id, object: 'model', created: assistant.created, owned_by: assistant.owner })
    }
    return models
  }

  async getModel(userId: string, id: string): Promise<ModelObject> {
    const found = (await this.listModels(userId)).find((m) => m.id === id)
    if (!found) throw unknownModel(id, 'GET /v1/models lists the models you can use')
    return found
  }

  /** Resolves the model, checks every parameter, and builds the prompt: all failures happen here, before any output. */
  async plan(userId: string, body: CompletionRequest): Promise<CompletionPlan> {
    refuseUnsupported(body)
    const includeUsage = body.stream_options?.include_usage === true
    const tools = wantsTools(body)
    if (body.model.startsWith(RAG_PREFIX)) {
      const collection = body.model.slice(RAG_PREFIX.length)
      const label = `${RAG_PREFIX}${await this.reachableCollection(userId, collection, body.model)}`
      if (tools) throw new OpenAiParamError('VALIDATION_ERROR', `${body.model} answers from a collection and cannot call tools`, 'tools')
      const question = lastQuestion(body)
      return { kind: 'rag', model: body.model, collection, label, userId, question, conversation: earlierTurns(body), instructions: systemInstructions(body), options: generateOptions(body, Number.POSITIVE_INFINITY), includeUsage }
    }
    if (body.model.startsWith(ASSISTANT_MODEL_PREFIX) && this.deps.assistants) return this.assistantPlan(userId, body, includeUsage, tools)
    const generator = await this.deps.generator()
    if (body.model !== generator.id) await this.explainUnknown(body.model, 'chat')
    if (tools) {
      if (!(generator instanceof UpstreamGenerator)) {
        throw new OpenAiParamError(
          'VALIDATION_ERROR',
          `Tool calling is not supported by ${generator.id}: it needs an OpenAI-compatible model server that supports tools (set UAGENT_LLM_URL)`,
          'tools',
        )
      }
      return { kind: 'relay', model: body.model, generator, body: relayBody(body) }
    }
    return { kind: 'engine', model: body.model, generator, messages: toChatMessages(body), options: generateOptions(body, replyBudget(generator)), includeUsage }
  }

  /**
   * `assistant:<ref>`: the assistant's instructions and its collections' passages (those the caller
   * can read) before the conversation; its temperature unless the request sets one. 404 (an unknown
   * model) for an assistant the caller cannot use.
   */
  private async assistantPlan(userId: string, body: CompletionRequest, includeUsage: boolean, tools: boolean): Promise<CompletionPlan> {
    const assistants = this.deps.assistants!()
    const ref = body.model.slice(ASSISTANT_MODEL_PREFIX.length)
    let persona
    try {
      persona = await assistants.persona(userId, ref, { deferCollections: true })
    } catch (error) {
      if (error instanceof AppError && error.code === 'NOT_FOUND') throw unknownModel(body.model, `you have no assistant "${ref}" (your own or one shared with you)`)
      throw error
    }
    if (tools) throw new OpenAiParamError('VALIDATION_ERROR', `${body.model} answers as an assistant and does not relay tools`, 'tools')
    const generator = await this.deps.generator()
    const { messages, sources } = await assistants.prompt(persona, userId, toChatMessages(body), generator)
    const options = generateOptions(body, replyBudget(generator))
    if (options.temperature === undefined && persona.temperature !== null) options.temperature = persona.temperature
    // The passages it was given, as rag: models list theirs (the reply cites them as [1], [2]…).
    const cited = sources.length ? { sources: sources.map((source) => ({ id: source.id, title: source.title, relevanceScore: source.score })) } : {}
    return { kind: 'engine', model: body.model, generator, messages, options, includeUsage, ...cited }
  }

  /** A non-streamed completion: the `chat.completion` object (a relayed one is the model server's own). */
  async complete(plan: CompletionPlan, signal?: AbortSignal): Promise<ChatCompletionObject | Record<string, unknown>> {
    if (plan.kind === 'relay') return plan.generator.relay.complete(plan.body, signal)
    let text: string
    let finishReason: 'stop' | 'length'
    let counted: Usage
    let sources: Source[] | undefined
    if (plan.kind === 'engine') {
      const result = await plan.generator.generate(plan.messages, plan.options, signal)
      text = result.text
      finishReason = result.finishReason === 'length' ? 'length' : 'stop'
      counted = usage(result.promptTokens, result.completionTokens)
      sources = plan.sources
    } else {
      const answer = await this.ragAnswer(plan)
      ;({ text, finishReason, usage: counted, sources } = answer)
    }
    return {
      id: completionId(),
      object: 'chat.completion' as const,
      created: Math.floor(Date.now() / 1000),
      model: plan.model,
      choices: [{ index: 0, message: { role: 'assistant' as const, content: text, refusal: null }, logprobs: null, finish_reason: finishReason }],
      usage: counted,
      system_fingerprint: null,
      ...(sources ? { sources } : {}),
    }
  }

  /**
   * A streamed completion. The first event is only ready once the engine has produced its first
   * piece (so a failure to start is an HTTP error, not an event); a failure later becomes an
   * `error` event. Aborting `signal` stops the generation.
   */
  async *stream(plan: CompletionPlan, signal: AbortSignal, onUsage?: (usage: Usage) => void): AsyncGenerator<StreamEvent> {
    if (plan.kind === 'relay') {
      yield* this.relayEvents(plan, signal, onUsage)
      return
    }
    const id = completionId()
    const created = Math.floor(Date.now() / 1000)
    const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
      id,
      object: 'chat.completion.chunk',
      created,
      model: plan.model,
      system_fingerprint: null,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      ...(plan.includeUsage ? { usage: null } : {}),
    })
    let pieces: AsyncIterator<string>
    let sources: Source[] | undefined
    let ragResult: { text: string; finishReason: 'stop' | 'length'; usage: Usage } | undefined
    if (plan.kind === 'engine') {
      sources = plan.sources
      pieces = plan.generator.stream(plan.messages, plan.options, signal)[Symbol.asyncIterator]()
    } else {
      const answer = await this.ragAnswer(plan)
      ragResult = answer
      sources = answer.sources
      pieces = streamText(answer.text, undefined, signal)
    }
    let next = await pieces.next()
    yield { ...chunk({ role: 'assistant', content: '' }), ...(sources ? { sources } : {}) }
    let text = ''
    try {
      while (!next.done) {
        text += next.value
        yield chunk({ content: next.value })
        next = await pieces.next()
      }
    } catch (error) {
      if (signal.aborted) return
      yield streamFailure(error)
      return
    } finally {
      await pieces.return?.()
    }
    if (signal.aborted) return
    let finishReason: 'stop' | 'length'
    let counted: Usage
    if (plan.kind === 'engine') {
      const completion = await plan.generator.countTokens(text)
      counted = usage(await promptTokens(plan.generator, plan.messages), completion)
      finishReason = plan.options.maxTokens !== undefined && completion >= plan.options.maxTokens ? 'length' : 'stop'
    } else {
      ;({ finishReason, usage: counted } = ragResult!)
    }
    onUsage?.(counted)
    yield chunk({}, finishReason)
    if (plan.includeUsage) yield { id, object: 'chat.completion.chunk', created, model: plan.model, system_fingerprint: null, choices: [], usage: counted }
    yield '[DONE]'
  }

  private async *relayEvents(plan: Extract<CompletionPlan, { kind: 'relay' }>, signal: AbortSignal, onUsage?: (usage: Usage) => void): AsyncGenerator<StreamEvent> {
    const events = plan.generator.relay.stream(plan.body, signal)[Symbol.asyncIterator]()
    let next = await events.next()
    try {
      while (!next.done) {
        const usage = next.value.usage as Usage | null | undefined
        if (usage && typeof usage === 'object') onUsage?.(usage)
        yield next.value
        next = await events.next()
      }
    } catch (error) {
      if (signal.aborted) return
      yield streamFailure(error)
      return
    } finally {
      await events.return?.()
    }
    if (!signal.aborted) yield '[DONE]'
  }

  /** A grounded answer from the collection, cut by `stop` and `max_tokens` as a generated reply would be. */
  private async ragAnswer(plan: Extract<CompletionPlan, { kind: 'rag' }>) {
    const result = await answerQuestion(this.deps.rag(), plan.userId, { question: plan.question, conversation: plan.conversation, instructions: plan.instructions, collection: plan.collection, maxContext: RAG_PASSAGES, includeContext: true })
    const pieces = textPieces(applyStops(result.answer, plan.options.stop))
    const limit = plan.options.maxTokens ?? Number.POSITIVE_INFINITY
    const text = pieces.slice(0, limit).join('')
    const generator = await this.deps.rag().generator()
    const passages = (result.context ?? []).map((c) => ({ id: c.source, content: c.content, score: c.confidence, metadata: {} }))
    const prompt = passages.length ? await promptTokens(generator, answerPrompt(plan.question, passages, plan.conversation, plan.instructions)) : 0
    return {
      text,
      finishReason: pieces.length > limit ? ('length' as const) : ('stop' as const),
      usage: usage(prompt, await generator.countTokens(text)),
      sources: result.sources,
    }
  }

  /** Embeddings of a string or an array of strings, as floats or base64 of little-endian float32s; `signal` stops them (see Embedder.embed). */
  async embeddings(body: { model: string; input: string | string[]; encoding_format?: 'float' | 'base64'; dimensions?: number }, signal?: AbortSignal) {
    // Token arrays are refused by the request schema, with a message saying so.
    const inputs = typeof body.input === 'string' ? [body.input] : body.input
    inputs.forEach((input, i) => {
      if (!input) throw new OpenAiParamError('VALIDATION_ERROR', `input${typeof body.input === 'string' ? '' : `[${i}]`} is empty: every input must be a non-empty string`, 'input')
    })
    const texts = inputs.map((text) => text.toWellFormed())
    const embedder = await this.deps.embedder()
    if (body.model !== embedder.id) await this.explainUnknown(body.model, 'embedding')
    if (body.dimensions !== undefined && body.dimensions !== embedder.dimensions) {
      throw new OpenAiParamError('VALIDATION_ERROR', `${embedder.id} makes ${embedder.dimensions}-dimensional vectors and cannot shorten them: leave dimensions out or send ${embedder.dimensions}`, 'dimensions')
    }
    const vectors = await embedder.embed(texts, { signal })
    let tokens = 0
    for (const text of texts) tokens += embedder.countTokens ? await embedder.countTokens(text) : countTextTokens(text)
    const base64 = body.encoding_format === 'base64'
    return {
      object: 'list' as const,
      data: vectors.map((vector, index) => ({
        object: 'embedding' as const,
        index,
        embedding: base64 ? Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64') : Array.from(vector),
      })),
      model: embedder.id,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    }
  }

  /** 404 for a model that is not the one this endpoint serves, saying where it belongs when it exists. */
  private async explainUnknown(id: string, wanted: 'chat' | 'embedding'): Promise<never> {
    const other = await (wanted === 'chat' ? this.deps.embedder() : this.deps.generator()).then(
      (engine) => engine.id,
      () => null,
    )
    if (id === other) {
      throw unknownModel(id, wanted === 'chat' ? 'it is an embedding model; use POST /v1/embeddings' : 'it is a chat model; use POST /v1/chat/completions')
    }
    if (id.startsWith(RAG_PREFIX) && wanted === 'embedding') throw unknownModel(id, 'rag:<collection> models answer chat completions, they do not embed')
    throw unknownModel(id, 'GET /v1/models lists the models you can use')
  }

  /** The collection's qualified name (`<owner email>/<name>`, its analytics label); 404 (as an unknown model) for a collection the caller cannot reach (its reference as the resolver reads it: `rag:<owner email>/<name>` too). */
  private async reachableCollection(userId: string, ref: string, model: string): Promise<string> {
    try {
      return await this.deps.rag().resolver.qualifiedName(userId, ref)
    } catch (error) {
      if (error instanceof AppError && error.code === 'NOT_FOUND') throw unknownModel(model, `you have no collection "${ref}" (your own or one shared with you)`)
      throw error
    }
  }
}

/** A failure after a stream has started, as the event OpenAI's clients read as an error. */
function streamFailure(error: unknown) {
  const failure = error instanceof AppError ? error : new AppError('INTERNAL_ERROR', 'Generation failed')
  return { error: { message: failure.message, type: 'server_error', param: null, code: failure.code.toLowerCase() } }
}
