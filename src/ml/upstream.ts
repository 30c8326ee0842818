import { AppError } from '../core/errors'
import { readEventData } from '../core/sse-reader'
import type { ChatMessage, Embedder, GenerateOptions, GenerateResult, Generator } from './types'
import { countTextTokens } from './stream-text'

const TIMEOUT_MS = 120_000

export interface UpstreamConfig {
  url: string
  model?: string
  apiKey?: string
}

/** Reachability as last observed, for /health. */
export type UpstreamState = 'ready' | 'unreachable'

function unavailable(url: string, detail: string): AppError {
  return new AppError('MODEL_UNAVAILABLE', `The model server at ${url} ${detail}. Check that it is running and that UAGENT_LLM_URL points at it.`)
}

/**
 * An OpenAI-compatible server (Ollama, llama.cpp's server, vLLM): `/v1/chat/completions`,
 * streamed as server-sent events, and `/v1/embeddings`. Failures and timeouts are 503.
 */
export class UpstreamClient {
  state: UpstreamState = 'ready'

  constructor(readonly config: UpstreamConfig) {}

  private headers(): Record<string, string> {
    return { 'content-type': 'application/json', ...(this.config.apiKey ? { authorization: `Bearer ${this.config.apiKey}` } : {}) }
  }

  async request(path: string, body: unknown, signal?: AbortSignal): Promise<Response> {
    const timeout = AbortSignal.timeout(TIMEOUT_MS)
    let response: Response
    try {
      response = await fetch(`${this.config.url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: this.headers(),
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      })
    } catch (error) {
      if (signal?.aborted) throw error
      this.state = 'unreachable'
      throw unavailable(this.config.url, timeout.aborted ? `did not answer within ${TIMEOUT_MS / 1000} s` : 'cannot be reached')
    }
    if (!response.ok) {
      const text = (await response.text().catch(() => '')).slice(0, 200)
      this.state = response.status >= 500 ? 'unreachable' : this.state
      throw unavailable(this.config.url, `answered ${response.status}${text ? `: ${text}` : ''}`)
    }
    this.state = 'ready'
    return response
  }

  /** The configured model, else the first the server lists. */
  async modelName(): Promise<string> {
    if (this.config.model) return this.config.model
    const listing = (await (await this.request('/v1/models', undefined)).json()) as { data?: { id: string }[] }
    const first = listing.data?.[0]?.id
    if (!first) throw unavailable(this.config.url, 'lists no models; set UAGENT_LLM_MODEL')
    this.config.model = first
    return first
  }
}

export class UpstreamGenerator implements Generator {
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
    const response = await this.client.request('/v1/chat/completions', this.body(messages, options, false), signal)
    const data = (await response.json()) as {
      choices?: { message?: { content?: string }; finish_reason?: string }[]
      usage?: { prompt_tokens?: number; completion_tokens?: number }
    }
    const text = data.choices?.[0]?.message?.content ?? ''
    return {
      text,
      promptTokens: data.usage?.prompt_tokens ?? countTextTokens(messages.map((m) => m.content).join('\n')),
      completionTokens: data.usage?.completion_tokens ?? countTextTokens(text),
      finishReason: data.choices?.[0]?.finish_reason === 'length' ? 'length' : 'stop',
    }
  }

  async *stream(messages: ChatMessage[], options: GenerateOptions = {}, signal?: AbortSignal): AsyncIterable<string> {
    const response = await this.client.request('/v1/chat/completions', this.body(messages, options, true), signal)
    for await (const payload of readEventData(response.body!)) {
      if (payload.trim() === '[DONE]') return
      let event: { choices?: { delta?: { content?: string } }[]; error?: { message?: string } }
      try {
        event = JSON.parse(payload)
      } catch {
        continue
      }
      if (event.error) throw unavailable(this.client.config.url, `failed mid-stream: ${event.error.message ?? 'unknown error'}`)
      const content = event.choices?.[0]?.delta?.content
      if (content) yield content
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
    return embedVia(this.client, this.id.slice('upstream:'.length), texts)
  }
}

async function embedVia(client: UpstreamClient, model: string, texts: string[]): Promise<Float32Array[]> {
  const response = await client.request('/v1/embeddings', { model, input: texts })
  const data = (await response.json()) as { data?: { index: number; embedding: number[] }[] }
  if (!data.data || data.data.length !== texts.length) throw new AppError('MODEL_UNAVAILABLE', `The model server at ${client.config.url} returned no embeddings`)
  return [...data.data].sort((a, b) => a.index - b.index).map((row) => Float32Array.from(row.embedding))
}
