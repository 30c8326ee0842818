import type { BatchSums } from './batch-sums'
import type { RecordBatch } from './record-batch'

interface Reply {
  id: number
  /** Set when the batch could not be written (and was dropped): the SQLite code or message. */
  failure?: string
  /** The batch's buffer, handed back once written. */
  rows?: Float64Array
  /** What the batch adds to the Prometheus metrics (whether or not it could be written). */
  sums?: BatchSums
}

/**
 * A worker thread that writes record batches to the database file through its own connection
 * (see record-writer.worker.ts). Batches are written in the order they are sent, which is also
 * how the thread keeps its copy of the batches' string table (see record-batch.ts) in step.
 */
export class WriterThread {
  private readonly worker: Worker
  private nextId = 0
  private readonly waiting = new Map<number, { count: number; done: () => void }>()
  private readonly idle = new Set<() => void>()

  constructor(
    path: string,
    private readonly onFailure: (count: number, reason: string) => void = () => {},
    /** Gets each batch's buffer back once the batch is written, to fill again. */
    private readonly onBuffer: (rows: Float64Array) => void = () => {},
    /** Gets what each batch adds up to per Prometheus series (see batch-sums.ts). */
    private readonly onSums: (sums: BatchSums) => void = () => {},
  ) {
    this.worker = new Worker(new URL('./record-writer.worker.ts', import.meta.url).href, { workerData: { path } } as WorkerOptions)
    this.worker.addEventListener('message', (event: MessageEvent<Reply>) => this.settled(event.data))
    this.worker.addEventListener('error', (event) => {
      // The thread failed: the batches it had are lost; they are counted, and whoever waits is released.
      for (const id of [...this.waiting.keys()]) this.settled({ id, failure: (event as ErrorEvent).message || 'writer thread failed' })
    })
    // Idle, it never keeps the process alive. While batches are in flight it does (see write()):
    // otherwise a process whose server has stopped has nothing else keeping its event loop
    // alive, and it ends while close() still waits for the last batch, which is then lost.
    this.worker.unref()
  }

  /** Sends a batch, its buffer transferred (no copy); `done` runs once it is written or dropped. */
  write(batch: RecordBatch, done: () => void = () => {}): void {
    const id = ++this.nextId
    if (this.waiting.size === 0) this.worker.ref()
    this.waiting.set(id, { count: batch.count, done })
    this.worker.postMessage({ id, batch }, [batch.rows.buffer])
  }

  private settled(reply: Reply): void {
    const batch = this.waiting.get(reply.id)
    if (!batch) return
    this.waiting.delete(reply.id)
    if (reply.sums) this.onSums(reply.sums)
    if (reply.failure) this.onFailure(batch.count, reply.failure)
    if (reply.rows) this.onBuffer(reply.rows)
    batch.done()
    if (this.waiting.size === 0) {
      this.worker.unref()
      for (const wake of [...this.idle]) wake()
    }
  }

  /** Resolves once every batch sent so far is written (or dropped). */
  drained(): Promise<void> {
    if (this.waiting.size === 0) return Promise.resolve()
    return new Promise((resolve) => {
      const wake = () => {
        this.idle.delete(wake)
        resolve()
      }
      this.idle.add(wake)
    })
  }

  async close(): Promise<void> {
    await this.drained()
    this.worker.terminate()
  }
}
