// Work module of ONNX_EMBED (embedder.ts), run in the work pool's workers: embeds a batch with the
// worker's own TransformersEmbedder of the model (the same code as the request thread's, so the
// same vectors), loaded on the worker's first batch of that model and kept; answers with one flat
// array, moved back without a copy. A cancel stops it between two runs of the model.
import type { WorkTask } from '../../core/work-pool'
import { TransformersEmbedder } from './embedder'

/** The models this worker has loaded, by models directory and id; a failed load is tried again by the next task. */
const loaded = new Map<string, Promise<TransformersEmbedder>>()

function model(modelsDir: string, id: string): Promise<TransformersEmbedder> {
  const key = `${modelsDir}\0${id}`
  let embedder = loaded.get(key)
  if (!embedder) {
    embedder = TransformersEmbedder.load(modelsDir, id)
    embedder.catch(() => loaded.delete(key))
    loaded.set(key, embedder)
  }
  return embedder
}

export async function run(task: { modelsDir: string; id: string; texts: string[] }, transfer: Transferable[], { signal }: WorkTask): Promise<Float32Array> {
  const embedder = await model(task.modelsDir, task.id)
  const vectors = await embedder.embedHere(task.texts, signal)
  const flat = new Float32Array(vectors.length * embedder.dimensions)
  for (let i = 0; i < vectors.length; i++) flat.set(vectors[i]!, i * embedder.dimensions)
  transfer.push(flat.buffer)
  return flat
}
