import { WorkerCalls } from '../../core/worker-calls'
import type { Embedder } from '../types'
import { HashEmbedder } from './hash-embedder'

/** Texts per call below which embedding stays on the calling thread (a query, a few chunks): a round trip would cost more. */
export const THREAD_MIN_TEXTS = 16

interface Reply {
  id: number
  vectors?: Float32Array
  failure?: string
}

/**
 * The built-in embedder with large batches embedded on a worker thread (hash-embedder.worker.ts):
 * an ingest embeds its next batch there while this thread writes the previous one to SQLite.
 * The worker runs the same HashEmbedder, so the vectors are the same, bit for bit; small calls
 * (search queries) are embedded here. Should the thread fail, its calls are embedded here too.
 */
export class ThreadedHashEmbedder implements Embedder {
  private readonly local = new HashEmbedder()
  readonly id = this.local.id
  readonly dimensions = this.local.dimensions
  readonly offThread = true
  private readonly calls = new WorkerCalls(new URL('./hash-embedder.worker.ts', import.meta.url).href)

  async embed(texts: string[]): Promise<Float32Array[]> {
    if (texts.length < THREAD_MIN_TEXTS) return this.local.embed(texts)
    let flat: Float32Array
    try {
      const reply = await this.calls.call<Reply>({ texts })
      if (!reply.vectors) throw new Error(reply.failure ?? 'embedding thread failed')
      flat = reply.vectors
    } catch {
      // The thread failed, or was closed, with this call in flight: embedded here instead.
      return this.local.embed(texts)
    }
    const vectors: Float32Array[] = []
    for (let i = 0; i < texts.length; i++) vectors.push(flat.subarray(i * this.dimensions, (i + 1) * this.dimensions))
    return vectors
  }

  /** Whether a thread is running (one starts with the first large call). */
  get threaded(): boolean {
    return this.calls.running
  }

  /** Stops the thread; calls it had are embedded here instead, and a new one starts on the next large call. */
  close(): void {
    this.calls.close('embedding thread closed')
  }
}
