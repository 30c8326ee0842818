import type { Database } from 'bun:sqlite'
import { type Postgres, postgresConnection } from '../../db/postgres'
import { DAY, HOUR, MINUTE, type RequestRecord } from './record'
import { type BatchSums, sumBatch } from './batch-sums'
import { COMPLETION, DURATION, FIELDS, METHOD, MODEL, PROMPT, type RecordBatch, recordsOf, ROUTE, STATUS, StringIds, TS, USER } from './record-batch'
import { RecordStore } from './record-store'
import { PostgresRecordStore } from './record-store.postgres'
import { WriterThread } from './writer-thread'

export { DAY, HOUR, MINUTE, type RequestRecord } from './record'

export interface RecorderOptions {
  /** Days records are kept; older ones are pruned in the background. */
  retentionDays: number
  /** Pending records are written at least this often (default 1 s)... */
  flushIntervalMs?: number
  /** ...and as soon as this many wait (default 10,000: a transaction's commit is worth sharing). */
  maxBatch?: number
  /** Records waiting beyond this many (the database stayed busy) are dropped, oldest first. */
  maxPending?: number
  /** How often old records are pruned (default every 10 minutes, first a few seconds after start). */
  pruneIntervalMs?: number
  log?: (line: string) => void
  /**
   * Told what each batch flushed adds up to per Prometheus series, whether or not the database
   * takes it (added up by the writer thread when there is one: see batch-sums.ts).
   */
  onSums?: (sums: BatchSums) => void
  /** Told how many records were dropped (database full or failing). */
  onDrop?: (count: number) => void
  /** `thread` (default): a database file is written by a worker thread; `inline`: always here. */
  writer?: 'thread' | 'inline'
  /**
   * Records go to PostgreSQL instead (UAGENT_DATABASE_URL), always through a writer thread with
   * a connection of its own (record-writer-postgres.worker.ts): a batch it could not write is kept
   * there and written before the next one, or at the next flush (up to maxPending records).
   */
  postgres?: Postgres
  /**
   * Whether PostgreSQL is known to be unreachable: settle() then waits for no write (the readers'
   * queries fail at once with 503, rather than after the writer's connect timeout).
   */
  databaseDown?: () => boolean
}

/** The route of a request that matched no route: a fixed label, never the path itself. */
export const UNMATCHED = '(unmatched)'

/**
 * Buffers request records in memory and writes them in batches, one transaction each, off the
 * request path: a request costs a few numbers written into a typed array (see record-batch.ts).
 * Each batch also updates the hourly rollup. When the database cannot take a batch (full, or
 * failing) the batch is dropped and counted, never thrown at a request.
 */
export class RequestRecorder {
  private rows: Float64Array
  /** A buffer the writer thread handed back, for the next batch. */
  private spare: Float64Array | null = null
  private count = 0
  private readonly strings = new StringIds()
  /** Records the database was busy for (inline writer only), written first next time. */
  private retry: RequestRecord[] = []
  private readonly open = new Set<() => void>()
  /** Requests being answered (see arrive()), and who waits for there to be none. */
  private running = 0
  private readonly quiet = new Set<() => void>()
  private flushTimer: ReturnType<typeof setInterval> | null = null
  private pruneTimer: ReturnType<typeof setTimeout> | null = null
  private flushQueued = false
  private closed = false
  private droppedTotal = 0
  private lastFailureLog = 0
  /**
   * Date.now() - performance.now(), checked again at every flush: a request's arrival on the
   * performance clock plus this is its wall-clock time, without a Date.now() per request.
   */
  epoch = Date.now() - performance.now()
  private readonly store: RecordStore
  private readonly writer: WriterThread | null = null
  private readonly options: Required<Omit<RecorderOptions, 'log' | 'onSums' | 'onDrop' | 'postgres' | 'databaseDown'>> & Pick<RecorderOptions, 'log' | 'onSums' | 'onDrop'>
  private readonly databaseDown: (() => boolean) | undefined
  /** PostgreSQL's records, for write() and prune() (batches go through the writer thread). */
  private readonly postgres: PostgresRecordStore | null = null

  constructor(
    private readonly db: Database,
    options: RecorderOptions,
  ) {
    const { postgres, databaseDown, ...rest } = options
    this.databaseDown = databaseDown
    this.options = { flushIntervalMs: 1000, maxBatch: 10_000, maxPending: 100_000, pruneIntervalMs: 10 * MINUTE, writer: 'thread', ...rest }
    this.store = new RecordStore(db)
    const file = db.filename
    if (postgres) {
      this.postgres = new PostgresRecordStore(postgres)
      this.writer = new WriterThread(
        { postgres: postgresConnection(postgres), maxPending: this.options.maxPending },
        (count, reason) => this.drop(count, reason),
        (rows) => {
          if (this.spare) this.writer?.retire(this.spare)
          this.spare = rows
        },
        (sums) => this.summed(sums),
        (count, reason) => this.logFailure(`analytics: ${count} request records not yet stored in PostgreSQL (${reason}); kept, written again with the next batch`),
      )
    }
    // A database file gets its writes done by a worker thread with a connection of its own, so
    // that SQLite's work stays off the thread that answers requests. (An in-memory database
    // cannot be shared with another thread: its writes stay here.)
    else if (this.options.writer === 'thread' && file && file !== ':memory:') {
      this.writer = new WriterThread(
        file,
        (count, reason) => this.drop(count, reason),
        (rows) => {
          if (this.spare) this.writer?.retire(this.spare)
          this.spare = rows
        },
        (sums) => this.summed(sums),
      )
    }
    this.rows = this.newRows(Math.min(this.options.maxBatch, 1024) * FIELDS)
  }

  /**
   * A buffer for `length` numbers of pending records: shared with the writer thread when there is
   * one (each buffer is sent to it once, and batches then name it: see WriterThread).
   */
  private newRows(length: number): Float64Array {
    return this.writer ? new Float64Array(new SharedArrayBuffer(length * Float64Array.BYTES_PER_ELEMENT)) : new Float64Array(length)
  }

  /** Starts the flush and prune timers (they never keep the process alive). */
  start(): this {
    if (this.flushTimer || this.closed) return this
    this.flushTimer = setInterval(() => this.flush(), this.options.flushIntervalMs)
    this.flushTimer.unref?.()
    this.schedulePrune(Math.min(5000, this.options.pruneIntervalMs))
    return this
  }

  /** Queues a record; a full batch is written on the next turn of the event loop. */
  record(record: RequestRecord): void {
    this.add(record.ts, record.method, record.route, record.status, record.durationMs, record.userId, record.promptTokens, record.completionTokens, record.model)
  }

  /** Queues a record given field by field (what a request pays for: no object is made). */
  add(ts: number, method: string, route: string, status: number, durationMs: number, userId: string | null, promptTokens: number, completionTokens: number, model: string | null): void {
    if (this.closed) return
    let rows = this.rows
    const at = this.count * FIELDS
    if (at === rows.length) {
      // Room for more (the buffer starts small, and grows up to a batch and beyond while a queued flush waits).
      rows = this.newRows(rows.length * 2)
      rows.set(this.rows)
      this.writer?.retire(this.rows)
      this.rows = rows
    }
    rows[at + TS] = ts
    rows[at + DURATION] = durationMs
    rows[at + STATUS] = status
    rows[at + METHOD] = this.strings.id(method)
    rows[at + ROUTE] = this.strings.id(route)
    rows[at + USER] = this.strings.id(userId)
    rows[at + MODEL] = this.strings.id(model)
    rows[at + PROMPT] = promptTokens
    rows[at + COMPLETION] = completionTokens
    if (++this.count >= this.options.maxBatch && !this.flushQueued) {
      this.flushQueued = true
      setImmediate(() => this.flush())
    }
  }

  /**
   * A record that can only be completed later (a streamed response): `finish` (which records it)
   * is called by the returned `end()`, or at close() if the stream is still running then.
   */
  begin(finish: () => void): () => void {
    let done = false
    const end = () => {
      if (done) return
      done = true
      this.open.delete(end)
      finish()
    }
    this.open.add(end)
    return end
  }

  /** A request arrived (recording counts the requests being answered, for idle()). */
  arrive(): void {
    this.running++
  }

  /** A request counted by arrive() was answered (and recorded). */
  leave(): void {
    if (--this.running === 0 && this.quiet.size) for (const wake of [...this.quiet]) wake()
  }

  /** Requests arrived and not yet answered. */
  get runningCount(): number {
    return this.running
  }

  /**
   * Resolves once no request is being answered, or after `timeoutMs`: a server stopping waits
   * for the records of the requests it still answers before the last flush.
   */
  idle(timeoutMs: number): Promise<void> {
    if (this.running <= 0) return Promise.resolve()
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer)
        this.quiet.delete(wake)
        resolve()
      }
      const timer = setTimeout(wake, timeoutMs)
      this.quiet.add(wake)
    })
  }

  /** Records dropped so far because the database could not take them. */
  get dropped(): number {
    return this.droppedTotal
  }

  /** Records waiting to be written. */
  get pendingCount(): number {
    return this.count + this.retry.length + (this.writer?.kept ?? 0)
  }

  /**
   * Writes what is pending, now. Records of requests whose response has just been sent are
   * queued a moment later (after-response hooks run on the next turn of the event loop):
   * readers call settle() instead, which waits for them first.
   */
  flush(): void {
    this.flushQueued = false
    // Moved only when the two clocks have drifted a millisecond or more apart (the wall clock was
    // set). Date.now() counts whole milliseconds, so each reading is up to 1 ms off: taking every
    // one would move later requests' times back by up to 1 ms, before those of earlier ones.
    const epoch = Date.now() - performance.now()
    if (Math.abs(epoch - this.epoch) >= 1) this.epoch = epoch
    if (this.count === 0 && this.retry.length === 0) {
      // Records PostgreSQL's thread kept are written again at the next flush, new records or not.
      this.writer?.retry()
      return
    }
    let batch: RecordBatch | null = null
    if (this.count) {
      batch = { count: this.count, rows: this.rows, ...this.strings.take() }
      // The next batch starts with the room this one needed, in the buffer of an earlier one when
      // the writer thread has handed it back (every slot of a record is written, none read stale).
      const spare = this.spare
      this.spare = null
      if (spare && spare.length >= this.rows.length) this.rows = spare
      else {
        if (spare) this.writer?.retire(spare)
        this.rows = this.newRows(this.rows.length)
      }
      this.count = 0
      // The writer thread adds the batch up as it writes it; here, it is added up now.
      if (!this.writer && this.options.onSums) this.summed(sumBatch(batch, this.strings.names))
    }
    if (this.writer) {
      // The thread has the batch's buffer until it hands it back (this side does not write in it meanwhile).
      if (batch) this.writer.write(batch, this.strings.names)
    } else {
      const records = batch ? this.retry.concat(recordsOf(batch, this.strings.names)) : this.retry
      this.retry = []
      try {
        this.write(records)
      } catch (error) {
        const code = (error as { code?: string }).code
        if (code === 'SQLITE_BUSY' && !this.closed) {
          // Another writer holds the database: try again next time, within bounds.
          this.retry = records
          if (records.length > this.options.maxPending) this.drop(records.splice(0, records.length - this.options.maxPending).length, code)
        } else this.drop(records.length, code ?? (error as Error)?.message ?? String(error))
      }
    }
    // Ids only grow with new users, routes and models; past a bound the table starts again.
    this.strings.restartOver()
  }

  /** Waits for records of responses already sent, then writes everything pending, and waits for that. */
  async settle(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve))
    this.flush()
    if (this.databaseDown?.()) return
    await this.writer?.drained()
    // (PostgreSQL's thread: what it kept, once more.)
    if (this.writer?.kept) {
      this.writer.retry()
      await this.writer.drained()
    }
  }

  /**
   * Writes records now, in one transaction on the server's connection (benchmarks load records
   * in bulk with it). Throws what SQLite throws; on PostgreSQL, a promise of the write.
   */
  write(records: RequestRecord[]): void | Promise<void> {
    if (this.postgres) return this.postgres.write(records)
    this.store.write(records)
  }

  private summed(sums: BatchSums): void {
    try {
      this.options.onSums?.(sums)
    } catch (error) {
      this.options.log?.(`analytics: metrics update failed: ${(error as Error)?.message ?? error}`)
    }
  }

  private drop(count: number, reason: string): void {
    this.droppedTotal += count
    try {
      this.options.onDrop?.(count)
    } catch {
      // Counting a drop must not fail either.
    }
    const why = reason === 'SQLITE_FULL' ? 'the database is full' : `the database refused them (${reason})`
    this.logFailure(`analytics: ${count} request records dropped: ${why}; ${this.droppedTotal} dropped since start`)
  }

  /** Logs a failure to store records, at most once a minute. */
  private logFailure(line: string): void {
    const now = Date.now()
    if (now - this.lastFailureLog >= MINUTE) {
      this.lastFailureLog = now
      this.options.log?.(line)
    }
  }

  /**
   * Deletes records older than the retention period (hour-aligned, so that the rollup and the
   * records agree), in slices that let requests through in between. Returns the records deleted.
   */
  async prune(now = Date.now()): Promise<number> {
    const cutoffHour = Math.floor((now - this.options.retentionDays * DAY) / HOUR)
    const cutoff = cutoffHour * HOUR
    if (this.postgres) return this.postgres.prune(cutoff, () => this.closed)
    // The records before the cutoff lie among the ids of the minutes before it (see RecordStore).
    const last = this.db.query<{ id: number | null }, [number]>('SELECT max(last_id) AS id FROM analytics_spans WHERE minute < ?').get(cutoff / MINUTE)?.id ?? -1
    const slice = this.db.prepare('DELETE FROM analytics_records WHERE id IN (SELECT id FROM analytics_records WHERE id <= ? AND ts < ? LIMIT 5000)')
    let deleted = 0
    for (;;) {
      if (this.closed) break
      const { changes } = slice.run(last, cutoff)
      deleted += changes
      if (changes < 5000) break
      await new Promise((resolve) => setImmediate(resolve))
    }
    if (!this.closed) {
      this.db.run('DELETE FROM analytics_hourly WHERE hour < ?', [cutoffHour])
      this.db.run('DELETE FROM analytics_spans WHERE minute < ?', [cutoff / MINUTE])
    }
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
    // PostgreSQL's thread: what it kept, once more; what it still cannot write is dropped.
    if (this.writer?.kept) {
      await this.writer.drained()
      this.writer.retry()
      await this.writer.drained()
      if (this.writer.kept) this.drop(this.writer.kept, 'PostgreSQL did not take them before the server stopped')
    }
    await this.writer?.close()
  }
}
