import { sharedWorkPool, type WorkPool, workKind } from '../../core/work-pool'
import type { EmbedOptions, Embedder } from '../types'
import { HashEmbedder } from './hash-embedder'

/** Texts per call below which embedding stays on the calling thread (a query, a few chunks): a round trip would cost more. */
export const THREAD_MIN_TEXTS = 16

/** How long a cancelled batch may run on before its worker is stopped (a write batch of chunks takes milliseconds). */
const CANCEL_GRACE_MS = 2000

/** A batch of texts → their vectors, one flat array (hash-embed.work.ts). */
export const EMBED = workKind<{ texts: string[] }, Float32Array>('embed', new URL('./hash-embed.work.ts', import.meta.url).href)

/**
 * The built-in embedder with large batches embedded on the work pool: an ingest embeds its next
 * batch there while this thread writes the previous one to SQLite. The workers run the same
 * HashEmbedder, so the vectors are the same, bit for bit; small calls (search queries) are
 * embedded here. A full pool is 503 BUSY, a crashed worker 500, for that call; a call whose
 * request went away (`signal`) leaves the queue or has its worker stopped.
 */
export class ThreadedHashEmbedder implements Embedder {
  private readonly local = new HashEmbedder()
  readonly id = this.local.id
  readonly dimensions = this.local.dimensions
  readonly offThread = true

  constructor(private readonly pool: WorkPool = sharedWorkPool()) {}

  async embed(texts: string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    if (texts.length < THREAD_MIN_TEXTS) return this.local.embed(texts)
    // A batch is one synchronous loop of a few milliseconds: a cancelled one is let finish (it is
    // then dropped) rather than its thread ended, which would lose what other kinds loaded there.
    const flat = await this.pool.run(EMBED, { texts }, { signal: options.signal, waitWhenBusy: options.background, cancelGraceMs: CANCEL_GRACE_MS })
    const vectors: Float32Array[] = []
    for (let i = 0; i < texts.length; i++) vectors.push(flat.subarray(i * this.dimensions, (i + 1) * this.dimensions))
    return vectors
  }
}
