import { abortReason, type WorkPool, workKind } from '../../core/work-pool'
import { THREAD_MIN_TEXTS } from '../builtin/threaded-hash-embedder'
import type { EmbedOptions, Embedder } from '../types'
import { failedWhileRunning, loadOrExplain, locateModel, transformers } from './runtime'

/** Texts per run of the model. */
const BATCH = 32

/** A batch of texts → their vectors, one flat array, by the model `id` of `modelsDir`, loaded once per worker (embed.work.ts). */
export const ONNX_EMBED = workKind<{ modelsDir: string; id: string; texts: string[] }, Float32Array>('onnx-embed', new URL('./embed.work.ts', import.meta.url).href)

/**
 * How long a cancelled embedding has to stop in its worker (it stops between two runs of the model)
 * before its thread is ended: in time, the worker and the model loaded there are kept.
 */
const CANCEL_GRACE_MS = 2000

type Module = Awaited<ReturnType<typeof transformers>>
type Tokenizer = Awaited<ReturnType<Module['AutoTokenizer']['from_pretrained']>>
type Model = Awaited<ReturnType<Module['AutoModel']['from_pretrained']>>
type TensorLike = { data: Float32Array | BigInt64Array; dims: number[] }

/** Mean of the token vectors under the attention mask, L2-normalised, one vector per row. */
export function meanPool(hidden: TensorLike, mask: TensorLike): Float32Array[] {
  const [batch, length, width] = hidden.dims as [number, number, number]
  const data = hidden.data as Float32Array
  const maskData = mask.data as BigInt64Array
  const vectors: Float32Array[] = []
  for (let b = 0; b < batch; b++) {
    const vector = new Float32Array(width)
    let count = 0
    for (let t = 0; t < length; t++) {
      if (maskData[b * length + t] === 0n) continue
      count++
      const offset = (b * length + t) * width
      for (let d = 0; d < width; d++) vector[d]! += data[offset + d]!
    }
    let norm = 0
    for (let d = 0; d < width; d++) norm += (vector[d]! /= Math.max(count, 1)) ** 2
    norm = Math.sqrt(norm)
    if (norm > 0) for (let d = 0; d < width; d++) vector[d]! /= norm
    vectors.push(vector)
  }
  return vectors
}

/**
 * A sentence-embedding model (BERT family) run by transformers.js: its tokenizer and AutoModel,
 * then mean pooling and L2 normalisation done here in one pass over the output (the
 * feature-extraction pipeline's tensor ops cost ~10 % more at batch 32).
 *
 * Loaded with a work pool, its large calls (an ingest's batches: THREAD_MIN_TEXTS texts or more)
 * run there, on a worker that loads the same model once (embed.work.ts) and runs the same code, so
 * the vectors are the same, bit for bit; small calls (a search query) run here, on this thread's
 * own copy. A full pool is 503 BUSY, a crashed worker 500, for that call.
 */
export class TransformersEmbedder implements Embedder {
  private constructor(
    readonly id: string,
    private readonly modelsDir: string,
    private readonly tokenizer: Tokenizer,
    private readonly model: Model,
    readonly dimensions: number,
    readonly maxTokens: number,
    private readonly pool?: WorkPool,
  ) {}

  /** Whether large calls run on the work pool (see Embedder.offThread). */
  get offThread(): boolean {
    return this.pool !== undefined
  }

  static async load(modelsDir: string, id: string, pool?: WorkPool): Promise<TransformersEmbedder> {
    const located = locateModel(modelsDir, id)
    return loadOrExplain(id, modelsDir, async () => {
      const module = await transformers(modelsDir)
      const tokenizer = await module.AutoTokenizer.from_pretrained(id)
      const model = await module.AutoModel.from_pretrained(id, { dtype: located.dtype, device: 'cpu' })
      const positions = Number(located.config.max_position_embeddings ?? 512)
      // BERT says hidden_size, DistilBERT dim, T5-style encoders d_model; without any, one text tells.
      const { hidden_size, dim, d_model } = located.config
      const make = (width: number) => new TransformersEmbedder(id, modelsDir, tokenizer, model, width, Math.min(512, positions), pool)
      const width = Number(hidden_size ?? dim ?? d_model)
      if (Number.isInteger(width) && width > 0) return make(width)
      return make((await make(0).embed(['dimensions']))[0]!.length)
    })
  }

  /** Tokens of `text` the model reads (it reads at most maxTokens, special tokens included). */
  async countTokens(text: string): Promise<number> {
    return Math.min(this.maxTokens, this.tokenizer.encode(text).length)
  }

  async embed(texts: string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    if (!this.pool || texts.length < THREAD_MIN_TEXTS) return this.embedHere(texts, options.signal)
    const flat = await this.pool.run(
      ONNX_EMBED,
      { modelsDir: this.modelsDir, id: this.id, texts },
      { signal: options.signal, waitWhenBusy: options.background, cancelGraceMs: CANCEL_GRACE_MS },
    )
    const vectors: Float32Array[] = []
    for (let i = 0; i < texts.length; i++) vectors.push(flat.subarray(i * this.dimensions, (i + 1) * this.dimensions))
    return vectors
  }

  /** Embeds on this thread, BATCH texts per run of the model; stops between runs once `signal` aborts. */
  async embedHere(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    const vectors: Float32Array[] = []
    for (let start = 0; start < texts.length; start += BATCH) {
      if (signal?.aborted) throw abortReason(signal)
      const inputs = this.tokenizer(texts.slice(start, start + BATCH), { padding: true, truncation: true, max_length: this.maxTokens })
      let output: { last_hidden_state?: TensorLike }
      try {
        output = (await this.model(inputs)) as { last_hidden_state?: TensorLike }
      } catch (error) {
        throw failedWhileRunning(this.id, this.modelsDir, error)
      }
      if (!output.last_hidden_state) throw failedWhileRunning(this.id, this.modelsDir, new Error('the model has no last_hidden_state output'))
      vectors.push(...meanPool(output.last_hidden_state, (inputs as unknown as { attention_mask: TensorLike }).attention_mask))
    }
    return vectors
  }
}
