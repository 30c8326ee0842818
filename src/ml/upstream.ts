import { AppError } from '../core/errors'
import { readEventData } from '../core/sse-reader'
import type { ChatMessage, Embedder, GenerateOptions, GenerateResult, Generator } from './types'
import { IdleTimer } from './idle-timer'
import { PieceQueue } from './piece-queue'
import { countTextTokens } from './stream-text'
import type { ToolCallingGenerator, ToolCallRequest, ToolSpec, ToolTurnMessage, ToolTurnOptions, ToolTurnResult } from './tool-calls'

/** Longest silence from the model server: before its headers, and between two pieces of a stream. */
const IDLE_MS = 120_000
/** A reply that is not streamed arrives all at once, after the whole generation. */
const WHOLE_REPLY_MS = 600_000

export interface UpstreamConfig {
  url: string
  model?: string
  apiKey?: string
  /** Longest silence before headers or between streamed pieces (default 120 s). */
  idleMs?: number
  /** Longest wait for a reply that is not streamed (default 600 s). */
  wholeReplyMs?: number
}

/** The server's base URL without a trailing slash or /v1 (both forms of UAGENT_LLM_URL are accepted). */
export function upstreamBase(url: string): string {
  return url.replace(/\/+$/, '').replace(/\/v1$/i, '')
}

/** Reachability as last observed, for /health. */
export type UpstreamState = 'ready' | 'unreachable'

/** The server's address as API clients may see it: never the user name or password it may carry. */
function shown(url: string): string {
  try {
    const parsed = new URL(url)
    parsed.username = ''
    parsed.password = ''
    return parsed.toString().replace(/\/$/, '')
  } catch {
    return 'UAGENT_LLM_URL'
  }
}

/**
 * 503 MODEL_UNAVAILABLE. What the model server itself said (bodies, tracebacks, paths) is never
 * passed on: only what went wrong, in our words.
 */
function unavailable(url: string, detail: string): AppError {
  return new AppError('MODEL_UNAVAILABLE', `The model server at ${shown(url)} ${detail}. Check that it is running and that UAGENT_LLM_URL points at it.`)
}

/**
 * An OpenAI-compatible server (Ollama, llama.cpp's server, vLLM): `/v1/chat/completions`,
 * streamed as server-sent events, and `/v1/embeddings`. Failures and timeouts are 503.
 */
export class UpstreamClient {
  state: UpstreamState = 'ready'
  /** Why the upstream is not usable, as last observed (for /health); null when it is. */
  reason: string | null = null
  private lastCheck: { at: number; done: Promise<void> } | null = null

  constructor(readonly config: UpstreamConfig) {
    // The OpenAI-compatible paths are asked for with their /v1; a URL given with it is the same server.
    this.config = { ...config, url: upstreamBase(config.url) }
  }

  /**
   * Asks the server which models it serves (at most every `maxAgeMs`), so /health can say
   * whether it can be reached and whether it has the configured model.
   */
  check(maxAgeMs = 10_000): Promise<void> {
    if (this.lastCheck && Date.now() - this.lastCheck.at < maxAgeMs) return this.lastCheck.done
    const done = this.json<{ data?: { id?: unknown }[] } | null>('/v1/models', undefined, { idleMs: 3000 }).then(
      (listing) => {
        const ids = (listing?.data ?? []).map((entry) => entry?.id).filter((id): id is string => typeof id === 'string')
        const wanted = this.config.model
        if (wanted && ids.length && !ids.includes(wanted)) {
          this.state = 'unreachable'
          this.reason = `the model server at ${shown(this.config.url)} does not serve model "${wanted}" (it serves: ${ids.slice(0, 10).join(', ')}); set UAGENT_LLM_MODEL`
        } else if (!wanted && !ids.length) {
          this.state = 'unreachable'
          this.reason = `the model server at ${shown(this.config.url)} lists no models; set UAGENT_LLM_MODEL`
        } else {
          this.state = 'ready'
          this.reason = null
        }
      },
      (error) => {
        this.state = 'unreachable'
        this.reason = error instanceof AppError ? error.message : `the model server at ${shown(this.config.url)} cannot be reached`
      },
    )
    this.lastCheck = { at: Date.now(), done }
    return done
  }

  private headers(): Record<string, string> {
    return { 'content-type': 'application/json', ...(this.config.apiKey ? { authorization: `Bearer ${this.config.apiKey}` } : {}) }
  }

  /**
   * Sends a request and hands `read` the response. Any failure on the way — no answer, a non-2xx,
   * a body that breaks off or does not parse, silence longer than the idle limit — is 503; a
   * cancellation by the caller's `signal` is passed on as it is.
   */
  async exchange<T>(
    path: string,
    body: unknown,
    read: (response: Response, idle: IdleTimer) => Promise<T>,
    options: { signal?: AbortSignal; idleMs?: number } = {},
  ): Promise<T> {
    const idleMs = options.idleMs ?? this.config.idleMs ?? IDLE_MS
    const idle = new IdleTimer(idleMs)
    const { signal } = options
    try {
      let response: Response
      try {
        response = await fetch(`${this.config.url}${path}`, {
          method: body === undefined ? 'GET' : 'POST',
          headers: this.headers(),
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: signal ? AbortSignal.any([signal, idle.signal]) : idle.signal,
        })
      } catch (error) {
        if (signal?.aborted) throw error
        this.state = 'unreachable'
        this.reason = `the model server at ${shown(this.config.url)} cannot be reached`
        throw unavailable(this.config.url, idle.fired ? `did not answer within ${idleMs / 1000} s` : 'cannot be reached')
      }
      if (!response.ok) {
        await response.body?.cancel().catch(() => {})
        this.state = response.status >= 500 ? 'unreachable' : this.state
        if (response.status === 404 && path !== '/v1/models' && this.config.model) {
          throw unavailable(this.config.url, `answered 404 to ${path} (is model "${this.config.model}" served there? set UAGENT_LLM_MODEL)`)
        }
        throw unavailable(this.config.url, `answered ${response.status} to ${path}`)
      }
      idle.touch()
      try {
        const result = await read(response, idle)
        this.state = 'ready'
        return result
      } catch (error) {
        if (signal?.aborted || error instanceof AppError) throw error
        this.state = 'unreachable'
        throw unavailable(this.config.url, idle.fired ? `went silent for ${idleMs / 1000} s` : `sent a broken or unreadable answer to ${path}`)
      }
    } finally {
      idle.clear()
    }
  }

  /** A JSON request, its parsed answer (non-JSON is 503 like any other failure). */
  json<T>(path: string, body: unknown, options: { signal?: AbortSignal; idleMs?: number } = {}): Promise<T> {
    return this.exchange(path, body, async (response) => (await response.json()) as T, options)
  }

  /** The configured model, else the first the server lists. */
  async modelName(): Promise<string> {
    if (this.config.model) return this.config.model
    const listing = await this.json<{ data?: { id?: unknown }[] } | null>('/v1/models', undefined)
    const first = listing?.data?.[0]?.id
    if (typeof first !== 'string' || !first) throw unavailable(this.config.url, 'lists no models; set UAGENT_LLM_MODEL')
    this.config.model = first
    return first
  }
}

export class UpstreamGenerator implements Generator, ToolCallingGenerator {
  readonly contextLength = 8192

  constructor(
    private readonly client: UpstreamClient,
    readonly id: string,
  ) {}

  async countTokens(text: string): Promise<number> {
    return countTextTokens(text)
  }

  private body(messages: ChatMessage[], options: GenerateOptions, stream: boolean) {
    return {
      model: this.id,
      messages,
      stream,
      ...(options.maxTokens !== undefined ? { max_tokens: options.maxTokens } : {}),
      ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
      ...(options.stop?.length ? { stop: options.stop } : {}),
    }
  }

  async generate(messages: ChatMessage[], options: GenerateOptions = {}, signal?: AbortSignal): Promise<GenerateResult> {
    const data = await this.client.json<{
      choices?: { message?: { content?: unknown }; finish_reason?: string }[]
      usage?: { prompt_tokens?: number; completion_tokens?: number }
    } | null>('/v1/chat/completions', this.body(messages, options, false), { signal, idleMs: this.client.config.wholeReplyMs ?? WHOLE_REPLY_MS })
    const choice = data?.choices?.[0]
    const text = choice?.message?.content
    if (typeof text !== 'string') throw unavailable(this.client.config.url, 'answered without a reply (no choices[0].message.content)')
    return {
      text,
      promptTokens: data?.usage?.prompt_tokens ?? countTextTokens(messages.map((m) => m.content).join('\n')),
      completionTokens: data?.usage?.completion_tokens ?? countTextTokens(text),
      finishReason: choice?.finish_reason === 'length' ? 'length' : 'stop',
    }
  }

  /**
   * One turn with tools offered (OpenAI `tools`), not streamed: the reply text and the calls the
   * model asks for (`choices[0].message.tool_calls`). A reply with neither is 503 like any other
   * unusable answer.
   */
  async generateWithTools(messages: ToolTurnMessage[], tools: ToolSpec[], options: ToolTurnOptions = {}, signal?: AbortSignal): Promise<ToolTurnResult> {
    const wire = messages.map((message) => {
      if ('toolCalls' in message) {
        return {
          role: 'assistant',
          content: message.content,
          tool_calls: message.toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })),
        }
      }
      if (message.role === 'tool') return { role: 'tool', tool_call_id: message.toolCallId, content: message.content }
      return message
    })
    const body = {
      ...this.body([], options, false),
      messages: wire,
      ...(tools.length ? { tools: tools.map((tool) => ({ type: 'function', function: tool })), tool_choice: options.toolChoice ?? 'auto' } : {}),
    }
    const data = await this.client.json<{
      choices?: { message?: { content?: unknown; tool_calls?: unknown } }[]
      usage?: { prompt_tokens?: number; completion_tokens?: number }
    } | null>('/v1/chat/completions', body, { signal, idleMs: this.client.config.wholeReplyMs ?? WHOLE_REPLY_MS })
    const message = data?.choices?.[0]?.message
    const text = typeof message?.content === 'string' ? message.content : ''
    const toolCalls: ToolCallRequest[] = []
    for (const [index, call] of (Array.isArray(message?.tool_calls) ? message.tool_calls : []).entries()) {
      const fn = (call as { function?: { name?: unknown; arguments?: unknown } })?.function
      if (typeof fn?.name !== 'string') continue
      const id = (call as { id?: unknown }).id
      const args = fn.arguments
      toolCalls.push({
        id: typeof id === 'string' && id ? id : `call_${index}`,
        name: fn.name,
        // Some servers send the arguments as an object rather than JSON text.
        arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}),
      })
    }
    if (!message || (typeof message.content !== 'string' && toolCalls.length === 0)) {
      throw unavailable(this.client.config.url, 'answered without a reply or a tool call (no choices[0].message)')
    }
    return {
      text,
      toolCalls,
      promptTokens: data?.usage?.prompt_tokens ?? countTextTokens(messages.map((m) => m.content ?? '').join('\n')),
      completionTokens: data?.usage?.completion_tokens ?? countTextTokens(text),
    }
  }

  /**
   * Pieces as the server streams them. The idle limit restarts with every piece, so a slow model
   * that keeps writing is never cut off; one that goes silent, breaks the stream, or ends it
   * without a single event is 503 (an error event after start).
   */
  async *stream(messages: ChatMessage[], options: GenerateOptions = {}, signal?: AbortSignal): AsyncIterable<string> {
    // Our own controller, so that a consumer that stops reading also stops the request.
    const local = new AbortController()
    const cancel = () => local.abort()
    if (signal?.aborted) return
    signal?.addEventListener('abort', cancel, { once: true })
    const pieces = new PieceQueue()
    const url = this.client.config.url
    const reading = this.client
      .exchange(
        '/v1/chat/completions',
        this.body(messages, options, true),
        async (response, idle) => {
          if (!response.body) throw unavailable(url, 'answered with an empty body')
          let events = 0
          for await (const payload of readEventData(response.body)) {
            idle.touch()
            if (payload.trim() === '[DONE]') return
            let event: { choices?: { delta?: { content?: unknown } }[]; error?: unknown }
            try {
              event = JSON.parse(payload)
            } catch {
              continue
            }
            events++
            if (event?.error) throw unavailable(url, 'reported an error in the middle of the reply')
            const content = event?.choices?.[0]?.delta?.content
            if (typeof content === 'string' && content) pieces.push(content)
          }
          if (events === 0) throw unavailable(url, 'ended the stream without a single event (is it an OpenAI-compatible server?)')
        },
        { signal: local.signal },
      )
      // A cancelled reply simply ends; any other failure reaches the consumer.
      .then(
        () => pieces.end(),
        (error: unknown) => pieces.end(local.signal.aborted ? undefined : error),
      )
    try {
      yield* pieces
    } finally {
      local.abort()
      signal?.removeEventListener('abort', cancel)
      await reading
    }
  }
}

export class UpstreamEmbedder implements Embedder {
  constructor(
    private readonly client: UpstreamClient,
    readonly id: string,
    readonly dimensions: number,
  ) {}

  static async load(client: UpstreamClient, model: string): Promise<UpstreamEmbedder> {
    const probe = await embedVia(client, model, ['dimension probe'])
    return new UpstreamEmbedder(client, `upstream:${model}`, probe[0]!.length)
  }

  embed(texts: string[]): Promise<Float32Array[]> {
    return embedVia(this.client, this.id.slice('upstream:'.length), texts, this.dimensions)
  }
}

/**
 * Embeddings from the server, checked before anything is stored: one per text, indices 0..n-1,
 * every vector of the same length (the collection's, when known) and made of finite numbers.
 */
async function embedVia(client: UpstreamClient, model: string, texts: string[], dimensions?: number): Promise<Float32Array[]> {
  const data = await client.json<{ data?: { index?: unknown; embedding?: unknown }[] } | null>('/v1/embeddings', { model, input: texts })
  const bad = (what: string) => unavailable(client.config.url, `returned unusable embeddings (${what})`)
  const rows = data?.data
  if (!Array.isArray(rows) || rows.length !== texts.length) throw bad(`${Array.isArray(rows) ? rows.length : 'no'} vectors for ${texts.length} texts`)
  const vectors: Float32Array[] = new Array(texts.length)
  for (const row of rows) {
    const index = row?.index
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= texts.length || vectors[index]) throw bad('indices are not 0..n-1')
    const embedding = row.embedding
    if (!Array.isArray(embedding) || embedding.length === 0 || !embedding.every((x) => typeof x === 'number' && Number.isFinite(x))) {
      throw bad('a vector is not a list of numbers')
    }
    const length = dimensions ?? vectors.find(Boolean)?.length ?? embedding.length
    if (embedding.length !== length) throw bad(`a vector has ${embedding.length} dimensions, not ${length}`)
    vectors[index] = Float32Array.from(embedding as number[])
  }
  return vectors
}
