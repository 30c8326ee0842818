import { WorkerCalls } from '../../core/worker-calls'
import type { BatchSums } from './batch-sums'
import type { RecordBatch, StringList } from './record-batch'

interface Reply {
  /** Set when the batch could not be written (and was dropped): the SQLite code or message. */
  failure?: string
  /** What the batch adds to the Prometheus metrics (whether or not it could be written). */
  sums?: BatchSums
  /** Records dropped with `failure` when not the batch's own count (PostgreSQL's thread: the oldest it kept). */
  dropped?: number
  /** PostgreSQL's thread: records it keeps to write again, and why it could not write them (absent once written). */
  kept?: number
  reason?: string
}

/** The PostgreSQL database a writer thread writes to: the connection options of the server's pool. */
export interface PostgresTarget {
  postgres: object
  /** Records the thread keeps while PostgreSQL refuses them; beyond that the oldest are dropped. */
  maxPending: number
}

/**
 * A batch as the writer thread is sent it: its records are in the shared buffer of `slot`, and
 * `rows` (that buffer) is sent along only the first time the thread sees that slot, which it
 * keeps until the slot is named in `forget`.
 */
export interface BatchMessage {
  batch: Omit<RecordBatch, 'rows'> & { rows?: Float64Array; slot: number }
  /** Slots of shared buffers the sender no longer uses: the thread lets go of them. */
  forget?: number[]
}

/**
 * A worker thread that writes record batches to the database file through its own connection
 * (see record-writer.worker.ts). Batches are written in the order they are sent, which is also
 * how the thread keeps its copy of the batches' string table (see record-batch.ts) in step; a
 * thread started anew (after one failed) is sent the whole table with its first batch. While
 * batches are in flight the thread keeps the process alive (WorkerCalls): otherwise a process whose
 * server has stopped has nothing else keeping its event loop alive, and it ends while close() still
 * waits for the last batch, which is then lost.
 *
 * A batch's records are in a SharedArrayBuffer, which is not moved: the thread is sent the buffer
 * once, under a slot number, and later batches in it only name the slot. A buffer that
 * crossed with every batch cost both threads a new ArrayBuffer object each time, and its 1.2 MB
 * counted as memory allocated: a garbage collection on the writer thread about every batch
 * (0.04-0.05 µs a request) and more on the thread answering requests.
 */
export class WriterThread {
  private readonly calls: WorkerCalls
  /** Whether a thread has been sent batches before (a new one then needs the whole string table). */
  private started = false
  private inFlight = 0
  private readonly idle = new Set<() => void>()
  /** Slot numbers of the shared buffers sent so far, and those the running thread holds. */
  private readonly slots = new WeakMap<Float64Array, number>()
  private nextSlot = 0
  private readonly held = new Set<number>()
  /** Slots to tell the thread to let go of, with the next batch. */
  private forget: number[] = []

  /** Records the thread keeps to write again (PostgreSQL refused them), as of its last answer. */
  private keptCount = 0
  private retrying = false

  constructor(
    /** The database file (SQLite), or the PostgreSQL database (record-writer-postgres.worker.ts). */
    target: string | PostgresTarget,
    private readonly onFailure: (count: number, reason: string) => void = () => {},
    /** Gets each batch's buffer back once the batch is written, to fill again. */
    private readonly onBuffer: (rows: Float64Array) => void = () => {},
    /** Gets what each batch adds up to per Prometheus series (see batch-sums.ts). */
    private readonly onSums: (sums: BatchSums) => void = () => {},
    /** Told when PostgreSQL's thread keeps records it could not write yet, and why. */
    private readonly onKept: (count: number, reason: string) => void = () => {},
  ) {
    this.calls =
      typeof target === 'string'
        ? new WorkerCalls(new URL('./record-writer.worker.ts', import.meta.url).href, { workerData: { path: target } } as WorkerOptions)
        : new WorkerCalls(new URL('./record-writer-postgres.worker.ts', import.meta.url).href, { workerData: target } as WorkerOptions)
  }

  /** Records PostgreSQL's thread keeps to write again. */
  get kept(): number {
    return this.keptCount
  }

  /** Asks PostgreSQL's thread to write the records it kept (a flush with nothing new does). */
  retry(): void {
    // (One at a time: while PostgreSQL hangs, flushes do not pile retries up behind each other.)
    if (!this.keptCount || !this.calls.running || this.retrying) return
    this.retrying = true
    this.inFlight++
    const done = (reply: Reply) => {
      this.retrying = false
      this.settled(0, reply, null)
    }
    this.calls.call<Reply>({ retry: true, forget: this.forget.splice(0) }).then(done, () => done({}))
  }

  /**
   * Sends a batch, its rows in a SharedArrayBuffer named by its slot (see above); `names` are the
   * sender's strings by id, all of them sent along when the thread is a new one. A batch's buffer
   * comes back through onBuffer once the batch is written, or dropped: a thread that fails loses
   * the batches it had, and they are counted as dropped.
   */
  write(batch: RecordBatch, names: StringList): void {
    if (this.started && !this.calls.running) {
      batch = { ...batch, strings: names.slice(1) as string[], reset: true }
      // A new thread holds no shared buffer yet.
      this.held.clear()
      this.forget = []
    }
    this.started = true
    const { count, rows } = batch
    if (!(rows.buffer instanceof SharedArrayBuffer)) throw new TypeError('a batch for the writer thread must be in a SharedArrayBuffer')
    let slot = this.slots.get(rows)
    if (slot === undefined) this.slots.set(rows, (slot = ++this.nextSlot))
    const held = this.held.has(slot)
    this.held.add(slot)
    const message: BatchMessage = { batch: { count, strings: batch.strings, reset: batch.reset, slot, rows: held ? undefined : rows }, forget: this.forget }
    this.forget = []
    this.inFlight++
    this.calls.call<Reply>(message).then(
      (reply) => this.settled(count, reply, rows),
      (error: Error) => {
        // (A PostgreSQL thread that failed lost the records it kept too.)
        if (this.keptCount && !this.calls.running) {
          this.onFailure(this.keptCount, error.message || 'writer thread failed')
          this.keptCount = 0
        }
        this.settled(count, { failure: error.message || 'writer thread failed' }, rows)
      },
    )
  }

  /** Tells the thread that a shared buffer sent before will not be sent again (it lets go of it). */
  retire(rows: Float64Array): void {
    const slot = this.slots.get(rows)
    if (slot === undefined) return
    this.slots.delete(rows)
    if (this.held.delete(slot)) this.forget.push(slot)
  }

  private settled(count: number, reply: Reply, rows: Float64Array | null): void {
    if (reply.sums) this.onSums(reply.sums)
    if (reply.failure) this.onFailure(reply.dropped ?? count, reply.failure)
    if (reply.kept !== undefined) {
      this.keptCount = reply.kept
      if (reply.kept && reply.reason) this.onKept(reply.kept, reply.reason)
    }
    if (rows) this.onBuffer(rows)
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
