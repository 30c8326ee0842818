import type { Database } from 'bun:sqlite'
import { type AuditFilter, type AuditRow, type AuditStore, likePrefix } from './store'

/** The audit log in the server's SQLite database. */
export class SqliteAuditStore implements AuditStore {
  constructor(private readonly db: Database) {}

  insertMany(rows: AuditRow[]): void {
    const insert = this.db.query(
      'INSERT OR IGNORE INTO audit_events (id, at, actor_id, actor_email, ip, action, target, details, request_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    )
    this.db
      .transaction(() => {
        for (const row of rows) insert.run(row.id, row.at, row.actor_id, row.actor_email, row.ip, row.action, row.target, row.details, row.request_id)
      })
      .immediate()
  }

  list(filter: AuditFilter): AuditRow[] {
    const where: string[] = []
    const values: (string | number)[] = []
    const add = (clause: string, ...params: (string | number)[]) => {
      where.push(clause)
      values.push(...params)
    }
    if (filter.since) add('at >= ?', filter.since)
    if (filter.until) add('at <= ?', filter.until)
    if (filter.actor) add('(actor_id = ? OR actor_email = ?)', filter.actor, filter.actor)
    if (filter.action) {
      if (filter.actionPrefix) add("action LIKE ? ESCAPE '\\'", likePrefix(filter.action))
      else add('action = ?', filter.action)
    }
    if (filter.target) add('target = ?', filter.target)
    if (filter.before) add('id < ?', filter.before)
    values.push(filter.limit)
    return this.db
      .query<AuditRow, (string | number)[]>(`SELECT * FROM audit_events ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`)
      .all(...values)
  }

  prune(before: string): number {
    return this.db.run('DELETE FROM audit_events WHERE at < ?', [before]).changes
  }
}
