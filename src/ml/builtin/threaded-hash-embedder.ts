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
  private worker: Worker | null = null
  private nextId = 0
  private readonly waiting = new Map<number, { resolve: (vectors: Float32Array) => void; reject: (error: Error) => void }>()

  private thread(): Worker {
    if (this.worker) return this.worker
    const worker = new Worker(new URL('./hash-embedder.worker.ts', import.meta.url).href)
    worker.addEventListener('message', (event: MessageEvent<Reply>) => {
      const { id, vectors, failure } = event.data
      const call = this.waiting.get(id)
      if (!call) return
      this.waiting.delete(id)
      if (this.waiting.size === 0) worker.unref()
      if (vectors) call.resolve(vectors)
      else call.reject(new Error(failure ?? 'embedding thread failed'))
    })
    worker.addEventListener('error', (event) => {
      // The thread is gone: what it had is embedded here instead, and the next call starts a new one.
      if (this.worker === worker) this.worker = null
      const message = (event as ErrorEvent).message || 'embedding thread failed'
      for (const [id, call] of [...this.waiting]) {
        this.waiting.delete(id)
        call.reject(new Error(message))
      }
      worker.terminate()
    })
    // Kept alive only while a call is in flight (see embed). An idle thread never keeps a process
    // alive; a call in flight must, or Bun's event loop, with nothing else to wait on, spins on the
    // unreferenced worker's reply instead of sleeping (a core burnt while the thread embeds).
    worker.unref()
    this.worker = worker
    return worker
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    if (texts.length < THREAD_MIN_TEXTS) return this.local.embed(texts)
    let flat: Float32Array
    try {
      flat = await new Promise<Float32Array>((resolve, reject) => {
        const id = ++this.nextId
        const worker = this.thread()
        if (this.waiting.size === 0) worker.ref()
        this.waiting.set(id, { resolve, reject })
        worker.postMessage({ id, texts })
      })
    } catch {
      return this.local.embed(texts)
    }
    const vectors: Float32Array[] = []
    for (let i = 0; i < texts.length; i++) vectors.push(flat.subarray(i * this.dimensions, (i + 1) * this.dimensions))
    return vectors
  }

  /** Whether a thread is running (one starts with the first large call). */
  get threaded(): boolean {
    return this.worker !== null
  }

  /** Stops the thread; calls it had are embedded here instead, and a new one starts on the next large call. */
  close(): void {
    this.worker?.terminate()
    this.worker = null
    for (const [id, call] of [...this.waiting]) {
      this.waiting.delete(id)
      call.reject(new Error('embedding thread closed'))
    }
  }
}
