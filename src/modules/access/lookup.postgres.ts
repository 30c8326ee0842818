import type { Postgres } from '../../db/postgres'
import type { OwnedTable } from './lookup'
import { highestRole, reachesUser, type ShareRole } from './roles'
import { PostgresShareList } from './shares.postgres'
import type { Candidates, OwnedRow, ParsedRef, Reached, ResourceLookup, SharedWith } from './store'

/** The resolver's look-ups for a kind kept in one PostgreSQL table (see SqliteOwnedLookup). */
export class PostgresOwnedLookup<Row extends OwnedRow> extends PostgresShareList implements ResourceLookup<Row> {
  constructor(
    sql: Postgres,
    protected readonly owned: OwnedTable,
    /** A row as read (numbers, nulls) → Row. */
    protected readonly toRow: (row: Record<string, unknown>) => Row = (row) => row as unknown as Row,
  ) {
    super(sql, owned.shares)
  }

  /** Two round trips at most: the caller's own row, then every other form at once. */
  async candidates(userId: string, ref: ParsedRef): Promise<Candidates<Row>> {
    const { table, publicId, key, shares } = this.owned
    if (ref.name !== undefined) {
      const [own] = await this.sql.unsafe(`SELECT * FROM ${table} WHERE user_id = $1 AND name = $2`, [userId, ref.name])
      if (own) return { own: this.toRow(own), byId: null, byOwner: null, shared: [] }
    }
    // Only the forms the reference may be (fewer branches, a cheaper plan), each value one parameter.
    const params: unknown[] = [userId]
    const param = (value: unknown) => `$${params.push(value)}`
    const reaching = `LEFT JOIN ${shares.table} s ON s.${shares.key} = t.${key} AND ${reachesUser('$1')}`
    const parts: string[] = []
    if (ref.publicId !== undefined) parts.push(`SELECT 2 AS step, t.*, s.role AS share_role, u.email AS owner_email FROM ${table} t JOIN users u ON u.id = t.user_id ${reaching} WHERE t.${publicId} = ${param(ref.publicId)}`)
    if (ref.owner) parts.push(`SELECT 3 AS step, t.*, s.role AS share_role, u.email AS owner_email FROM ${table} t JOIN users u ON u.id = t.user_id ${reaching} WHERE u.email = ${param(ref.owner.email)} AND t.name = ${param(ref.owner.name)}`)
    if (ref.name !== undefined) {
      parts.push(
        `SELECT 4 AS step, t.*, s.role AS share_role, u.email AS owner_email FROM ${table} t JOIN ${shares.table} s ON s.${shares.key} = t.${key} JOIN users u ON u.id = t.user_id
         WHERE t.name = ${param(ref.name)} AND t.user_id <> $1 AND ${reachesUser('$1')}`,
      )
    }
    if (!parts.length) return { own: null, byId: null, byOwner: null, shared: [] }
    const rows = await this.sql.unsafe(parts.join('\n       UNION ALL\n       '), params)
    const at = (step: number) => rows.filter((row: Record<string, unknown>) => Number(row.step) === step)
    const strip = (row: Record<string, unknown>) => {
      const { step: _step, share_role: _role, owner_email: _email, ...rest } = row
      return this.toRow(rest)
    }
    const reached = (found: Record<string, unknown>[]): Reached<Row> | null =>
      found.length ? { row: strip(found[0]!), role: highestRole(found.map((row) => row.share_role as ShareRole | null).filter((role): role is ShareRole => role !== null)) } : null
    const best = new Map<unknown, SharedWith<Row>>()
    for (const row of at(4)) {
      const role = row.share_role as ShareRole
      const seen = best.get(row[key])
      if (!seen || highestRole([seen.role, role]) !== seen.role) best.set(row[key], { row: strip(row), role, ownerEmail: row.owner_email as string })
    }
    const shared = [...best.values()].sort((a, b) => (a.ownerEmail < b.ownerEmail ? -1 : 1))
    return { own: null, byId: reached(at(2)), byOwner: reached(at(3)), shared }
  }

  async byPublicId(id: string): Promise<Row | null> {
    const [row] = await this.sql.unsafe(`SELECT * FROM ${this.owned.table} WHERE ${this.owned.publicId} = $1`, [id])
    return row ? this.toRow(row) : null
  }

  /** The caller's own rows and those shared with them (highest role each), with the owner's email. */
  async accessibleRows(userId: string): Promise<(Row & { owner_email: string; access: 'owner' | ShareRole })[]> {
    const { table, key, shares } = this.owned
    const [own, shared] = await Promise.all([
      this.sql.unsafe(`SELECT t.*, u.email AS owner_email FROM ${table} t JOIN users u ON u.id = t.user_id WHERE t.user_id = $1`, [userId]),
      this.sql.unsafe(
        `SELECT t.*, u.email AS owner_email, s.role AS share_role FROM ${shares.table} s JOIN ${table} t ON t.${key} = s.${shares.key} JOIN users u ON u.id = t.user_id
         WHERE t.user_id <> $1 AND ${reachesUser('$1')}`,
        [userId],
      ),
    ])
    const best = new Map<unknown, Row & { owner_email: string; access: ShareRole }>()
    for (const { share_role, owner_email, ...rest } of shared as Record<string, unknown>[]) {
      const role = share_role as ShareRole
      const seen = best.get(rest[key])
      if (!seen || highestRole([seen.access, role]) !== seen.access) best.set(rest[key], { ...this.toRow(rest), owner_email: owner_email as string, access: role })
    }
    return [
      ...(own as Record<string, unknown>[]).map(({ owner_email, ...rest }) => ({ ...this.toRow(rest), owner_email: owner_email as string, access: 'owner' as const })),
      ...best.values(),
    ]
  }
}
