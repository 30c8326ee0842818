import type { Postgres } from '../../db/postgres'
import { type AuditFilter, type AuditRow, type AuditStore, likePrefix } from './store'

const ROWS_PER_INSERT = 1000
const COLUMNS = ['id', 'at', 'actor_id', 'actor_email', 'ip', 'action', 'target', 'details', 'request_id'] as const

/** The audit log in PostgreSQL: every replica's events in one table. */
export class PostgresAuditStore implements AuditStore {
  constructor(private readonly sql: Postgres) {}

  async insertMany(rows: AuditRow[]): Promise<void> {
    if (!rows.length) return
    // One transaction; statements of at most ROWS_PER_INSERT rows (PostgreSQL takes 65,535 parameters at most).
    await this.sql.begin(async (tx) => {
      for (let start = 0; start < rows.length; start += ROWS_PER_INSERT) {
        const slice = rows.slice(start, start + ROWS_PER_INSERT)
        const values: (string | null)[] = []
        const tuples = slice.map((row, i) => {
          for (const column of COLUMNS) values.push(row[column])
          return `(${COLUMNS.map((_, j) => `$${i * COLUMNS.length + j + 1}`).join(', ')})`
        })
        await tx.unsafe(`INSERT INTO audit_events (${COLUMNS.join(', ')}) VALUES ${tuples.join(', ')} ON CONFLICT (id) DO NOTHING`, values)
      }
    })
  }

  async list(filter: AuditFilter): Promise<AuditRow[]> {
    const where: string[] = []
    const values: (string | number)[] = []
    const param = (value: string | number) => {
      values.push(value)
      return `$${values.length}`
    }
    if (filter.since) where.push(`at >= ${param(filter.since)}`)
    if (filter.until) where.push(`at <= ${param(filter.until)}`)
    if (filter.actor) {
      const actor = param(filter.actor)
      where.push(`(actor_id = ${actor} OR actor_email = ${actor})`)
    }
    if (filter.action) where.push(filter.actionPrefix ? `action LIKE ${param(likePrefix(filter.action))} ESCAPE '\\'` : `action = ${param(filter.action)}`)
    if (filter.target) where.push(`target = ${param(filter.target)}`)
    if (filter.before) where.push(`id < ${param(filter.before)}`)
    const limit = param(filter.limit)
    return [...(await this.sql.unsafe(`SELECT ${COLUMNS.join(', ')} FROM audit_events ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ${limit}`, values))]
  }

  async prune(before: string): Promise<number> {
    return (await this.sql`DELETE FROM audit_events WHERE at < ${before}`).count
  }
}
