// Work module of EMBED (threaded-hash-embedder.ts), run in the work pool's workers: embeds a batch
// with its own HashEmbedder (the same code, so the same vectors) and answers with one flat array,
// moved back without a copy.
import { HashEmbedder } from './hash-embedder'

const embedder = new HashEmbedder()

export function run(task: { texts: string[] }, transfer: Transferable[]): Float32Array {
  const vectors = new Float32Array(task.texts.length * embedder.dimensions)
  for (let i = 0; i < task.texts.length; i++) vectors.set(embedder.embedOne(task.texts[i]!), i * embedder.dimensions)
  transfer.push(vectors.buffer)
  return vectors
}
