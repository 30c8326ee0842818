import type { Embedder } from '../types'
import { failedWhileRunning, loadOrExplain, locateModel, transformers } from './runtime'

const BATCH = 32

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
 */
export class TransformersEmbedder implements Embedder {
  private constructor(
    readonly id: string,
    private readonly modelsDir: string,
    private readonly tokenizer: Tokenizer,
    private readonly model: Model,
    readonly dimensions: number,
    readonly maxTokens: number,
  ) {}

  static async load(modelsDir: string, id: string): Promise<TransformersEmbedder> {
    const located = locateModel(modelsDir, id)
    return loadOrExplain(id, modelsDir, async () => {
      const module = await transformers(modelsDir)
      const tokenizer = await module.AutoTokenizer.from_pretrained(id)
      const model = await module.AutoModel.from_pretrained(id, { dtype: located.dtype, device: 'cpu' })
      const positions = Number(located.config.max_position_embeddings ?? 512)
      // BERT says hidden_size, DistilBERT dim, T5-style encoders d_model; without any, one text tells.
      const { hidden_size, dim, d_model } = located.config
      const make = (width: number) => new TransformersEmbedder(id, modelsDir, tokenizer, model, width, Math.min(512, positions))
      const width = Number(hidden_size ?? dim ?? d_model)
      if (Number.isInteger(width) && width > 0) return make(width)
      return make((await make(0).embed(['dimensions']))[0]!.length)
    })
  }

  /** Tokens of `text` the model reads (it reads at most maxTokens, special tokens included). */
  async countTokens(text: string): Promise<number> {
    return Math.min(this.maxTokens, this.tokenizer.encode(text).length)
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const vectors: Float32Array[] = []
    for (let start = 0; start < texts.length; start += BATCH) {
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
