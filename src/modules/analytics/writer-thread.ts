import { WorkerCalls } from '../../core/worker-calls'
import type { BatchSums } from './batch-sums'
import type { RecordBatch, StringList } from './record-batch'

interface Reply {
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
 * how the thread keeps its copy of the batches' string table (see record-batch.ts) in step; a
 * thread started anew (after one failed) is sent the whole table with its first batch. While
 * batches are in flight the thread keeps the process alive (WorkerCalls): otherwise a process whose
 * server has stopped has nothing else keeping its event loop alive, and it ends while close() still
 * waits for the last batch, which is then lost.
 */
export class WriterThread {
  private readonly calls: WorkerCalls
  /** Whether a thread has been sent batches before (a new one then needs the whole string table). */
  private started = false
  private inFlight = 0
  private readonly idle = new Set<() => void>()

  constructor(
    path: string,
    private readonly onFailure: (count: number, reason: string) => void = () => {},
    /** Gets each batch's buffer back once the batch is written, to fill again. */
    private readonly onBuffer: (rows: Float64Array) => void = () => {},
    /** Gets what each batch adds up to per Prometheus series (see batch-sums.ts). */
    private readonly onSums: (sums: BatchSums) => void = () => {},
  ) {
    this.calls = new WorkerCalls(new URL('./record-writer.worker.ts', import.meta.url).href, { workerData: { path } } as WorkerOptions)
  }

  /**
   * Sends a batch, its buffer transferred (no copy); `names` are the sender's strings by id, all
   * of them sent along when the thread is a new one. A thread that fails loses the batches it had:
   * they are counted as dropped.
   */
  write(batch: RecordBatch, names: StringList): void {
    if (this.started && !this.calls.running) batch = { ...batch, strings: names.slice(1) as string[], reset: true }
    this.started = true
    const count = batch.count
    this.inFlight++
    this.calls.call<Reply>({ batch }, [batch.rows.buffer]).then(
      (reply) => this.settled(count, reply),
      (error: Error) => this.settled(count, { failure: error.message || 'writer thread failed' }),
    )
  }

  private settled(count: number, reply: Reply): void {
    if (reply.sums) this.onSums(reply.sums)
    if (reply.failure) this.onFailure(count, reply.failure)
    if (reply.rows) this.onBuffer(reply.rows)
    if (--this.inFlight === 0) for (const wake of [...this.idle]) wake()
  }

  /** Resolves once every batch sent so far is written (or dropped). */
  drained(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve()
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
    this.calls.close('writer thread closed')
  }
}
