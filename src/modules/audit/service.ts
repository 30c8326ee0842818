import { AppError } from '../../core/errors'
import { redactDetails } from './redact'
import type { AuditFilter, AuditRow, AuditStore } from './store'

/** Who did something, as the audit log names them. */
export interface AuditActor {
  id: string
  email: string
}

/** Where an audited action came from: the caller, their address, the request (X-Request-Id). */
export interface AuditContext {
  actor: AuditActor | null
  ip: string | null
  requestId: string | null
}

/** One event to record. `details` never holds a password, token or key (and redactDetails makes sure). */
export interface AuditEventInput extends Partial<AuditContext> {
  action: string
  target?: string | null
  details?: Record<string, unknown>
}

export interface AuditEventView {
  id: string
  at: string
  actor: AuditActor | null
  ip: string | null
  action: string
  target: string | null
  details: Record<string, unknown>
  requestId: string | null
}

export interface AuditQuery {
  since?: string
  until?: string
  actor?: string
  action?: string
  target?: string
  limit?: number
  cursor?: string
}

/** Something events can be recorded with: the AuditLog, or a test's list. */
export interface AuditRecorder {
  record(event: AuditEventInput): void
}

export interface AuditLogOptions {
  retentionDays: number
  /** Pending events are written at least this often (default 1 s)… */
  flushIntervalMs?: number
  /** …and as soon as this many wait (default 200). */
  maxBatch?: number
  /** Events kept while the database refuses them; beyond, the oldest are dropped (and logged). */
  maxPending?: number
  /** How often old events are deleted (default every 6 hours; first a few seconds after start). */
  pruneIntervalMs?: number
  log?: (line: string) => void
}

const DAY_MS = 86_400_000
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
export const AUDIT_PAGE_DEFAULT = 50
export const AUDIT_PAGE_MAX = 500

/** An ISO time from a query value, or 400 naming it. */
function isoTime(name: string, value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined
  const ms = Date.parse(value)
  if (!Number.isFinite(ms)) throw new AppError('VALIDATION_ERROR', `query.${name}: must be a date or time such as 2026-01-31 or 2026-01-31T12:00:00Z`)
  return new Date(ms).toISOString()
}

const toView = (row: AuditRow): AuditEventView => ({
  id: row.id,
  at: row.at,
  actor: row.actor_id ? { id: row.actor_id, email: row.actor_email ?? '' } : null,
  ip: row.ip,
  action: row.action,
  target: row.target,
  details: JSON.parse(row.details) as Record<string, unknown>,
  requestId: row.request_id,
})

/** The stored row of an event happening now: a time-ordered id, the time, the details redacted (redactDetails). */
export function auditRow(event: AuditEventInput, ms = Date.now()): AuditRow {
  let details: string
  try {
    details = JSON.stringify(redactDetails(event.details))
  } catch {
    details = '{}'
  }
  return {
    id: Bun.randomUUIDv7('hex', ms),
    at: new Date(ms).toISOString(),
    actor_id: event.actor?.id ?? null,
    actor_email: event.actor?.email ?? null,
    ip: event.ip ?? null,
    action: event.action,
    target: event.target ?? null,
    details,
    request_id: event.requestId ?? null,
  }
}

/**
 * The audit log: who did what, when, from where. `record()` only appends to a buffer (nothing is
 * awaited on the request path); the buffer is written in batches, one transaction each, every
 * second or as soon as `maxBatch` wait, and on close(). Events older than the retention
 * (UAGENT_AUDIT_RETENTION_DAYS) are deleted in the background. No route deletes or changes events.
 */
export class AuditLog implements AuditRecorder {
  /** Events as recorded (their rows are made at the flush: the redaction costs the request nothing). */
  private pending: { event: AuditEventInput; ms: number }[] = []
  private flushing: Promise<void> | null = null
  private flushTimer: ReturnType<typeof setInterval> | null = null
  private pruneTimer: ReturnType<typeof setTimeout> | null = null
  private closed = false
  private lastFailureLog = 0
  private readonly options: Required<Omit<AuditLogOptions, 'log'>>
  private readonly log: (line: string) => void

  constructor(
    private readonly store: AuditStore,
    options: AuditLogOptions,
  ) {
    this.options = { flushIntervalMs: 1000, maxBatch: 200, maxPending: 10_000, pruneIntervalMs: 6 * 3600_000, ...options }
    this.log = options.log ?? ((line) => console.error(line))
  }

  /** Starts the periodic flush and pruning (a server does; tests may flush by hand). */
  start(): this {
    if (this.flushTimer || this.closed) return this
    this.flushTimer = setInterval(() => {
      if (!this.flushing) void this.flush()
    }, this.options.flushIntervalMs)
    this.flushTimer.unref?.()
    const prune = () => {
      void this.prune().finally(() => {
        if (this.closed) return
        this.pruneTimer = setTimeout(prune, this.options.pruneIntervalMs)
        this.pruneTimer.unref?.()
      })
    }
    this.pruneTimer = setTimeout(prune, 5_000)
    this.pruneTimer.unref?.()
    return this
  }

  /** Appends an event (written within a second). Never throws and never waits. */
  record(event: AuditEventInput): void {
    this.pending.push({ event, ms: Date.now() })
    if (this.pending.length > this.options.maxPending) {
      const dropped = this.pending.splice(0, this.pending.length - this.options.maxPending)
      this.log(`audit: ${dropped.length} event(s) dropped: the database has not taken the log's writes`)
    }
    if (this.pending.length >= this.options.maxBatch && !this.flushing) queueMicrotask(() => void this.flush())
  }

  /** How many events wait to be written. */
  get pendingCount(): number {
    return this.pending.length
  }

  /**
   * Writes the events waiting now, after any flush under way (one write at a time); a batch the
   * database refuses is kept for the next flush.
   */
  flush(): Promise<void> {
    const write = async () => {
      if (!this.pending.length) return
      const batch = this.pending
      this.pending = []
      try {
        await this.store.insertMany(batch.map(({ event, ms }) => auditRow(event, ms)))
      } catch (error) {
        this.pending = batch.concat(this.pending)
        if (Date.now() - this.lastFailureLog > 60_000) {
          this.lastFailureLog = Date.now()
          this.log(`audit: writing ${batch.length} event(s) failed, kept for the next try: ${(error as Error)?.message ?? String(error)}`)
        }
      }
    }
    const next: Promise<void> = (this.flushing ?? Promise.resolve()).then(write).finally(() => {
      if (this.flushing === next) this.flushing = null
    })
    this.flushing = next
    return next
  }

  /** Deletes events older than the retention; how many. */
  async prune(now = Date.now()): Promise<number> {
    try {
      return await this.store.prune(new Date(now - this.options.retentionDays * DAY_MS).toISOString())
    } catch (error) {
      this.log(`audit: deleting events older than ${this.options.retentionDays} days failed: ${(error as Error)?.message ?? String(error)}`)
      return 0
    }
  }

  /**
   * Events newest first, filtered; `nextCursor` is the id to pass as `cursor` for the next
   * (older) page, null on the last. This server's pending events are written first, so that an
   * admin sees what was just done.
   */
  async list(query: AuditQuery): Promise<{ events: AuditEventView[]; nextCursor: string | null }> {
    const limit = query.limit ?? AUDIT_PAGE_DEFAULT
    if (query.cursor !== undefined && !UUID.test(query.cursor)) throw new AppError('VALIDATION_ERROR', 'query.cursor: not a cursor this server gave (use nextCursor from the previous page)')
    const filter: AuditFilter = { limit: limit + 1 }
    const since = isoTime('since', query.since)
    const until = isoTime('until', query.until)
    if (since) filter.since = since
    if (until) filter.until = until
    if (query.actor) filter.actor = query.actor.trim()
    if (query.target) filter.target = query.target
    if (query.cursor) filter.before = query.cursor.toLowerCase()
    if (query.action) {
      const action = query.action.trim()
      const prefix = /\.\*$/.exec(action) ? action.slice(0, -1) : action.endsWith('.') ? action : null
      filter.action = prefix ?? action
      filter.actionPrefix = prefix !== null
    }
    await this.flush()
    const rows = await this.store.list(filter)
    const page = rows.slice(0, limit)
    return { events: page.map(toView), nextCursor: rows.length > limit ? page[page.length - 1]!.id : null }
  }

  /** Stops the timers and writes what is pending (shutdown). */
  async close(): Promise<void> {
    this.closed = true
    if (this.flushTimer) clearInterval(this.flushTimer)
    if (this.pruneTimer) clearTimeout(this.pruneTimer)
    this.flushTimer = this.pruneTimer = null
    await this.flush()
  }
}
