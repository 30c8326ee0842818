import type { MaybePromise } from '../../db/maybe-promise'

/** One row of `audit_events` (migration 41). */
export interface AuditRow {
  /** A UUIDv7: ids sort in the order events happened. */
  id: string
  at: string
  actor_id: string | null
  actor_email: string | null
  ip: string | null
  action: string
  target: string | null
  /** A JSON object. */
  details: string
  request_id: string | null
}

/** What GET /admin/audit asks for (already checked and normalised). */
export interface AuditFilter {
  /** ISO times, inclusive. */
  since?: string
  until?: string
  /** A user id or an email. */
  actor?: string
  /** An action (`group.created`), or every action under a prefix (`group.` for `group.*`). */
  action?: string
  actionPrefix?: boolean
  target?: string
  /** Events older than this id only (the previous page's last id). */
  before?: string
  limit: number
}

/**
 * The audit log's rows, whatever the backend: append-only for everything but retention (no route
 * deletes an event). Rows come newest first.
 */
export interface AuditStore {
  insertMany(rows: AuditRow[]): MaybePromise<void>
  list(filter: AuditFilter): MaybePromise<AuditRow[]>
  /** Deletes events older than `before` (retention); how many. */
  prune(before: string): MaybePromise<number>
}

/** The `LIKE` pattern of a prefix, its wildcards escaped (with `ESCAPE '\'`). */
export const likePrefix = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
