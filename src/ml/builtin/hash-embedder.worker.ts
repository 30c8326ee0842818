// The thread of ThreadedHashEmbedder: embeds batches of texts with its own HashEmbedder (the same
// code, so the same vectors) and answers each with one flat array, handed over without a copy.
import { HashEmbedder } from './hash-embedder'

declare const self: Worker

const embedder = new HashEmbedder()

self.addEventListener('message', (event: MessageEvent<{ id: number; texts: string[] }>) => {
  const { id, texts } = event.data
  try {
    const vectors = new Float32Array(texts.length * embedder.dimensions)
    for (let i = 0; i < texts.length; i++) vectors.set(embedder.embedOne(texts[i]!), i * embedder.dimensions)
    self.postMessage({ id, vectors }, [vectors.buffer])
  } catch (error) {
    self.postMessage({ id, failure: (error as Error)?.message ?? String(error) })
  }
})
