import type { Postgres } from '../../db/postgres'
import { isAdminRoles, type ShareEntry, type ShareRole, shareView, type ShareView } from './roles'
import type { ShareList, ShareTable } from './store'

/** A kind's access list table in PostgreSQL (see SqliteShareList). */
export class PostgresShareList implements ShareList {
  constructor(
    protected readonly sql: Postgres,
    private readonly table: ShareTable,
  ) {}

  async isAdmin(userId: string): Promise<boolean> {
    const [row] = await this.sql`SELECT roles FROM users WHERE id = ${userId}`
    return isAdminRoles(row?.roles)
  }

  async owner(userId: string): Promise<{ id: string; email: string } | null> {
    const [row] = await this.sql`SELECT id, email FROM users WHERE id = ${userId}`
    return row ? { id: row.id, email: row.email } : null
  }

  async shares(key: number | string): Promise<ShareView[]> {
    const rows = await this.sql.unsafe(
      `SELECT s.principal_type AS type, s.principal_id AS id, s.role, u.email, g.name
       FROM ${this.table.table} s
       LEFT JOIN users u ON s.principal_type = 'user' AND u.id = s.principal_id
       LEFT JOIN groups g ON s.principal_type = 'group' AND g.id = s.principal_id
       WHERE s.${this.table.key} = $1 AND (s.principal_type = 'everyone' OR u.id IS NOT NULL OR g.id IS NOT NULL)
       ORDER BY s.principal_type, coalesce(u.email, g.name, '')`,
      [key],
    )
    return rows.map((row: { type: ShareView['type']; id: string; role: ShareRole; email: string | null; name: string | null }) => shareView(row))
  }

  async replaceShares(key: number | string, entries: ShareEntry[]): Promise<void> {
    const at = new Date().toISOString()
    const { table, key: column } = this.table
    await this.sql.begin(async (tx) => {
      await tx.unsafe(`DELETE FROM ${table} WHERE ${column} = $1`, [key])
      for (const entry of entries) {
        await tx.unsafe(`INSERT INTO ${table} (${column}, principal_type, principal_id, role, created_at) VALUES ($1, $2, $3, $4, $5)`, [key, entry.type, entry.principalId, entry.role, at])
      }
    })
  }

  async findUser(by: { id?: string; email?: string }): Promise<{ id: string; email: string } | null> {
    const [row] = by.id !== undefined ? await this.sql`SELECT id, email FROM users WHERE id = ${by.id}` : await this.sql`SELECT id, email FROM users WHERE email = ${by.email ?? ''}`
    return row ? { id: row.id, email: row.email } : null
  }

  async findGroup(by: { id?: string; name?: string }): Promise<{ id: string; name: string } | null> {
    const [row] = by.id !== undefined ? await this.sql`SELECT id, name FROM groups WHERE id = ${by.id}` : await this.sql`SELECT id, name FROM groups WHERE name = ${by.name ?? ''}`
    return row ? { id: row.id, name: row.name } : null
  }
}
