import type { Embedder } from '../types'
import { loadOrExplain, locateModel, transformers } from './runtime'

const BATCH = 32

type Extractor = (texts: string[], options: { pooling: 'mean'; normalize: boolean }) => Promise<{ data: Float32Array; dims: number[] }>

/** A sentence-embedding model (BERT family) run by transformers.js: mean pooling, L2-normalised. */
export class TransformersEmbedder implements Embedder {
  private constructor(
    readonly id: string,
    private readonly extract: Extractor,
    readonly dimensions: number,
    readonly maxTokens: number,
  ) {}

  static async load(modelsDir: string, id: string): Promise<TransformersEmbedder> {
    const model = locateModel(modelsDir, id)
    return loadOrExplain(id, modelsDir, async () => {
      const { pipeline } = await transformers(modelsDir)
      const extractor = await pipeline('feature-extraction', id, { dtype: model.dtype, device: 'cpu' })
      const positions = Number(model.config.max_position_embeddings ?? 512)
      return new TransformersEmbedder(id, extractor as unknown as Extractor, Number(model.config.hidden_size), Math.min(512, positions))
    })
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const vectors: Float32Array[] = []
    for (let start = 0; start < texts.length; start += BATCH) {
      const output = await this.extract(texts.slice(start, start + BATCH), { pooling: 'mean', normalize: true })
      const width = output.dims[1]!
      for (let row = 0; row < output.dims[0]!; row++) vectors.push(output.data.slice(row * width, (row + 1) * width))
    }
    return vectors
  }
}
