import type { Database } from 'bun:sqlite'
import { DAY, HOUR, MINUTE, type RequestRecord } from './record'
import { RecordStore } from './record-store'
import { WriterThread } from './writer-thread'

export { DAY, HOUR, MINUTE, type RequestRecord } from './record'

export interface RecorderOptions {
  /** Days records are kept; older ones are pruned in the background. */
  retentionDays: number
  /** Pending records are written at least this often (default 1 s)... */
  flushIntervalMs?: number
  /** ...and as soon as this many wait (default 500). */
  maxBatch?: number
  /** Records waiting beyond this many (the database stayed busy) are dropped, oldest first. */
  maxPending?: number
  /** How often old records are pruned (default every 10 minutes, first a few seconds after start). */
  pruneIntervalMs?: number
  log?: (line: string) => void
  /** Sees every batch as it is flushed, whether or not the database takes it (Prometheus). */
  onFlush?: (records: RequestRecord[]) => void
  /** Told how many records were dropped (database full or failing). */
  onDrop?: (count: number) => void
  /** `thread` (default): a database file is written by a worker thread; `inline`: always here. */
  writer?: 'thread' | 'inline'
}

/** The route of a request that matched no route: a fixed label, never the path itself. */
export const UNMATCHED = '(unmatched)'

/**
 * Buffers request records in memory and writes them in batches, one transaction each, off the
 * request path: a request costs a push onto an array. Each batch also updates the hourly rollup.
 * When the database cannot take a batch (full, or failing) the batch is dropped and counted,
 * never thrown at a request.
 */
export class RequestRecorder {
  private pending: (RequestRecord | (() => RequestRecord))[] = []
  private readonly open = new Set<() => void>()
  private flushTimer: ReturnType<typeof setInterval> | null = null
  private pruneTimer: ReturnType<typeof setTimeout> | null = null
  private flushQueued = false
  private closed = false
  private droppedTotal = 0
  private lastFailureLog = 0
  private readonly store: RecordStore
  private readonly writer: WriterThread | null = null
  private readonly options: Required<Omit<RecorderOptions, 'log' | 'onFlush' | 'onDrop'>> & Pick<RecorderOptions, 'log' | 'onFlush' | 'onDrop'>

  constructor(
    private readonly db: Database,
    options: RecorderOptions,
  ) {
    this.options = { flushIntervalMs: 1000, maxBatch: 500, maxPending: 100_000, pruneIntervalMs: 10 * MINUTE, writer: 'thread', ...options }
    this.store = new RecordStore(db)
    const file = db.filename
    // A database file gets its writes done by a worker thread with a connection of its own, so
    // that SQLite's work stays off the thread that answers requests. (An in-memory database
    // cannot be shared with another thread: its writes stay here.)
    if (this.options.writer === 'thread' && file && file !== ':memory:') this.writer = new WriterThread(file, (count, reason) => this.drop(count, reason))
  }

  /** Starts the flush and prune timers (they never keep the process alive). */
  start(): this {
    if (this.flushTimer || this.closed) return this
    this.flushTimer = setInterval(() => this.flush(), this.options.flushIntervalMs)
    this.flushTimer.unref?.()
    this.schedulePrune(Math.min(5000, this.options.pruneIntervalMs))
    return this
  }

  /**
   * Queues a record, or a function that makes it when the batch is written (work kept off the
   * request path); a full batch is written on the next turn of the event loop.
   */
  record(record: RequestRecord | (() => RequestRecord)): void {
    if (this.closed) return
    this.pending.push(record)
    if (this.pending.length >= this.options.maxBatch && !this.flushQueued) {
      this.flushQueued = true
      setImmediate(() => this.flush())
    }
  }

  /**
   * A record that can only be completed later (a streamed response): `finish` is called by the
   * returned `end()`, or at close() if the stream is still running then.
   */
  begin(finish: () => RequestRecord): () => void {
    let done = false
    const end = () => {
      if (done) return
      done = true
      this.open.delete(end)
      this.record(finish())
    }
    this.open.add(end)
    return end
  }

  /** Records dropped so far because the database could not take them. */
  get dropped(): number {
    return this.droppedTotal
  }

  /** Records waiting to be written. */
  get pendingCount(): number {
    return this.pending.length
  }

  /**
   * Writes what is pending, now. Records of requests whose response has just been sent are
   * queued a moment later (after-response hooks run on the next turn of the event loop):
   * readers call settle() instead, which waits for them first.
   */
  flush(): void {
    this.flushQueued = false
    if (this.pending.length === 0) return
    const batch: RequestRecord[] = []
    for (const entry of this.pending.splice(0)) {
      try {
        batch.push(typeof entry === 'function' ? entry() : entry)
      } catch (error) {
        this.drop(1, (error as Error)?.message ?? String(error))
      }
    }
    try {
      this.options.onFlush?.(batch)
    } catch (error) {
      this.options.log?.(`analytics: metrics update failed: ${(error as Error)?.message ?? error}`)
    }
    if (this.writer) return this.writer.write(batch)
    try {
      this.write(batch)
    } catch (error) {
      const code = (error as { code?: string }).code
      if (code === 'SQLITE_BUSY' && !this.closed) {
        // Another writer holds the database: try again next time, within bounds.
        this.pending = [...batch, ...this.pending]
        if (this.pending.length > this.options.maxPending) this.drop(this.pending.splice(0, this.pending.length - this.options.maxPending).length, code)
        return
      }
      this.drop(batch.length, code ?? (error as Error)?.message ?? String(error))
    }
  }

  /** Waits for records of responses already sent, then writes everything pending, and waits for that. */
  async settle(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve))
    this.flush()
    await this.writer?.drained()
  }

  /**
   * Writes records now, in one transaction on the server's connection (benchmarks load records
   * in bulk with it). Throws what SQLite throws.
   */
  write(records: RequestRecord[]): void {
    this.store.write(records)
  }

  private drop(count: number, reason: string): void {
    this.droppedTotal += count
    try {
      this.options.onDrop?.(count)
    } catch {
      // Counting a drop must not fail either.
    }
    const now = Date.now()
    if (now - this.lastFailureLog >= MINUTE) {
      this.lastFailureLog = now
      const why = reason === 'SQLITE_FULL' ? 'the database is full' : `the database refused them (${reason})`
      this.options.log?.(`analytics: ${count} request records dropped: ${why}; ${this.droppedTotal} dropped since start`)
    }
  }

  /**
   * Deletes records older than the retention period (hour-aligned, so that the rollup and the
   * records agree), in slices that let requests through in between. Returns the records deleted.
   */
  async prune(now = Date.now()): Promise<number> {
    const cutoffHour = Math.floor((now - this.options.retentionDays * DAY) / HOUR)
    const slice = this.db.prepare('DELETE FROM analytics_requests WHERE id IN (SELECT id FROM analytics_requests WHERE ts < ? LIMIT 5000)')
    let deleted = 0
    for (;;) {
      if (this.closed) break
      const { changes } = slice.run(cutoffHour * HOUR)
      deleted += changes
      if (changes < 5000) break
      await new Promise((resolve) => setImmediate(resolve))
    }
    if (!this.closed) this.db.run('DELETE FROM analytics_hourly WHERE hour < ?', [cutoffHour])
    return deleted
  }

  private schedulePrune(delay: number): void {
    this.pruneTimer = setTimeout(async () => {
      try {
        await this.prune()
      } catch (error) {
        if (!this.closed) this.options.log?.(`analytics: pruning old records failed: ${(error as Error)?.message ?? error}`)
      }
      if (!this.closed) this.schedulePrune(this.options.pruneIntervalMs)
    }, delay)
    this.pruneTimer.unref?.()
  }

  /**
   * Records still-streaming responses as far as they got, writes everything and waits until it is
   * written, stops the timers and the writer thread.
   */
  async close(): Promise<void> {
    if (this.closed) return
    for (const end of [...this.open]) end()
    this.flush()
    this.closed = true
    if (this.flushTimer) clearInterval(this.flushTimer)
    if (this.pruneTimer) clearTimeout(this.pruneTimer)
    this.flushTimer = null
    this.pruneTimer = null
    await this.writer?.close()
  }
}
