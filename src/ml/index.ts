import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../config'
import { sharedWorkPool, type WorkPool } from '../core/work-pool'
import { ExtractiveGenerator } from './builtin/extractive-generator'
import { ThreadedHashEmbedder } from './builtin/threaded-hash-embedder'
import { TransformersEmbedder } from './transformers/embedder'
import { TransformersGenerator } from './transformers/generator'
import type { Embedder, Generator } from './types'
import { UpstreamClient, UpstreamEmbedder, UpstreamGenerator } from './upstream'

export type { ChatMessage, EmbedOptions, Embedder, GenerateOptions, GenerateResult, Generator } from './types'
export { promptBudget, replyBudget } from './context-budget'

/** Looked up under the models directory when no model is configured explicitly. */
export const DEFAULT_EMBED_MODEL = 'Xenova/all-MiniLM-L6-v2'
export const DEFAULT_CHAT_MODEL = 'HuggingFaceTB/SmolLM2-135M-Instruct'

export interface ModelStatus {
  embedder: 'builtin' | 'ready' | 'error'
  llm: 'builtin' | 'ready' | 'unreachable'
  embedderId: string
  generatorId: string
  /** Why the embedder or the chat model is not usable, when it is not. */
  embedderReason?: string
  llmReason?: string
}

export interface Models {
  /** The active embedder; 503 MODEL_UNAVAILABLE when a configured model cannot load. */
  embedder(): Promise<Embedder>
  generator(): Promise<Generator>
  /** Cheap and synchronous, for /health. */
  status(): ModelStatus
  /** Re-checks a remote model server (cached for a few seconds); absent when there is none. */
  check?(): Promise<void>
}

export type ModelsConfig = Pick<Config, 'modelsDir' | 'embedModel' | 'chatModel' | 'llmUrl' | 'llmModel' | 'llmApiKey'>

type Engine<T> = { id: string; kind: 'builtin' | 'local' | 'upstream'; load: () => Promise<T> }

function chooseEmbedder(config: ModelsConfig, upstream: UpstreamClient | null, pool: WorkPool): Engine<Embedder> {
  const configured = config.embedModel
  if (configured?.startsWith('upstream:') && upstream) {
    return { id: configured, kind: 'upstream', load: () => UpstreamEmbedder.load(upstream, configured.slice('upstream:'.length)) }
  }
  const id = configured ?? (existsSync(join(config.modelsDir, DEFAULT_EMBED_MODEL)) ? DEFAULT_EMBED_MODEL : null)
  if (id) return { id, kind: 'local', load: () => TransformersEmbedder.load(config.modelsDir, id, pool) }
  const builtin = new ThreadedHashEmbedder(pool)
  return { id: builtin.id, kind: 'builtin', load: async () => builtin }
}

function chooseGenerator(config: ModelsConfig, upstream: UpstreamClient | null): Engine<Generator> {
  if (upstream) {
    const id = config.llmModel ?? 'upstream'
    return { id, kind: 'upstream', load: async () => new UpstreamGenerator(upstream, await upstream.modelName()) }
  }
  const id = config.chatModel ?? (existsSync(join(config.modelsDir, DEFAULT_CHAT_MODEL)) ? DEFAULT_CHAT_MODEL : null)
  if (id) return { id, kind: 'local', load: () => TransformersGenerator.load(config.modelsDir, id) }
  const builtin = new ExtractiveGenerator()
  return { id: builtin.id, kind: 'builtin', load: async () => builtin }
}

/** Loads once: the promise is cached, and a failed load is retried on the next call. */
function once<T>(engine: Engine<T>, onState: (ok: boolean) => void): () => Promise<T> {
  let pending: Promise<T> | null = null
  return () => {
    pending ??= engine.load().then(
      (value) => {
        onState(true)
        return value
      },
      (error) => {
        pending = null
        onState(false)
        throw error
      },
    )
    return pending
  }
}

/**
 * The one entry to models: callers ask for "an embedder" or "a generator" and never learn which
 * engine answers — a transformers.js model from the models directory, an OpenAI-compatible
 * upstream, or the built-in engines when no weights are installed. The local and the built-in
 * embedders embed large batches on `pool` (the server's work pool).
 */
export function createModels(config: ModelsConfig, pool: WorkPool = sharedWorkPool()): Models {
  const upstream = config.llmUrl ? new UpstreamClient({ url: config.llmUrl, model: config.llmModel, apiKey: config.llmApiKey }) : null
  const embedEngine = chooseEmbedder(config, upstream, pool)
  const chatEngine = chooseGenerator(config, upstream)
  // A configured local model whose folder is missing shows as failed before anyone asks for it.
  const missing = (engine: Engine<unknown>) => engine.kind === 'local' && !existsSync(join(config.modelsDir, engine.id))
  let embedderFailed = missing(embedEngine)
  let generatorFailed = missing(chatEngine)
  const embedder = once(embedEngine, (ok) => (embedderFailed = !ok))
  const generator = once(chatEngine, (ok) => (generatorFailed = !ok))
  return {
    embedder,
    generator,
    status() {
      const llm =
        chatEngine.kind === 'builtin'
          ? 'builtin'
          : chatEngine.kind === 'upstream'
            ? upstream!.state
            : generatorFailed
              ? 'unreachable'
              : 'ready'
      return {
        embedder: embedEngine.kind === 'builtin' ? 'builtin' : embedderFailed ? 'error' : 'ready',
        llm,
        embedderId: embedEngine.id,
        generatorId: upstream?.config.model ?? chatEngine.id,
        ...(llm === 'unreachable' ? { llmReason: upstream?.reason ?? `the chat model ${chatEngine.id} cannot be loaded` } : {}),
        ...(embedderFailed ? { embedderReason: `the embedding model ${embedEngine.id} cannot be loaded` } : {}),
      }
    },
    ...(upstream ? { check: () => upstream.check() } : {}),
  }
}
