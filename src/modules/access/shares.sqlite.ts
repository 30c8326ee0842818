import type { Database } from 'bun:sqlite'
import { highestRole, isAdminRoles, reachesUser, type ShareEntry, type ShareRole, shareView, type ShareView } from './roles'
import type { ShareList, ShareTable } from './store'

/**
 * A kind's access list table in SQLite (see ShareTable), and the user and group look-ups every
 * kind shares. Read fresh on every call: nothing is cached, so a change counts at the next request.
 */
export class SqliteShareList implements ShareList {
  constructor(
    protected readonly db: Database,
    private readonly table: ShareTable,
  ) {}

  /** The highest role the entries of one object give a user, or null. */
  roleOf(userId: string, key: number | string): ShareRole | null {
    const rows = this.db
      .query<{ role: ShareRole }, [number | string, string]>(`SELECT s.role FROM ${this.table.table} s WHERE s.${this.table.key} = ?1 AND ${reachesUser('?2')}`)
      .all(key, userId)
    return highestRole(rows.map((row) => row.role))
  }

  isAdmin(userId: string): boolean {
    return isAdminRoles(this.db.query<{ roles: string }, [string]>('SELECT roles FROM users WHERE id = ?').get(userId)?.roles)
  }

  owner(userId: string): { id: string; email: string } | null {
    return this.db.query<{ id: string; email: string }, [string]>('SELECT id, email FROM users WHERE id = ?').get(userId)
  }

  shares(key: number | string): ShareView[] {
    const rows = this.db
      .query<{ type: ShareView['type']; id: string; role: ShareRole; email: string | null; name: string | null }, [number | string]>(
        `SELECT s.principal_type AS type, s.principal_id AS id, s.role, u.email, g.name
         FROM ${this.table.table} s
         LEFT JOIN users u ON s.principal_type = 'user' AND u.id = s.principal_id
         LEFT JOIN groups g ON s.principal_type = 'group' AND g.id = s.principal_id
         WHERE s.${this.table.key} = ? AND (s.principal_type = 'everyone' OR u.id IS NOT NULL OR g.id IS NOT NULL)
         ORDER BY s.principal_type, coalesce(u.email, g.name, '')`,
      )
      .all(key)
    return rows.map(shareView)
  }

  replaceShares(key: number | string, entries: ShareEntry[]): void {
    const at = new Date().toISOString()
    const { table, key: column } = this.table
    this.db
      .transaction(() => {
        this.db.run(`DELETE FROM ${table} WHERE ${column} = ?`, [key])
        const insert = this.db.prepare(`INSERT INTO ${table} (${column}, principal_type, principal_id, role, created_at) VALUES (?, ?, ?, ?, ?)`)
        for (const entry of entries) insert.run(key, entry.type, entry.principalId, entry.role, at)
      })
      .immediate()
  }

  findUser(by: { id?: string; email?: string }): { id: string; email: string } | null {
    if (by.id !== undefined) return this.db.query<{ id: string; email: string }, [string]>('SELECT id, email FROM users WHERE id = ?').get(by.id)
    return this.db.query<{ id: string; email: string }, [string]>('SELECT id, email FROM users WHERE email = ?').get(by.email ?? '')
  }

  findGroup(by: { id?: string; name?: string }): { id: string; name: string } | null {
    if (by.id !== undefined) return this.db.query<{ id: string; name: string }, [string]>('SELECT id, name FROM groups WHERE id = ?').get(by.id)
    return this.db.query<{ id: string; name: string }, [string]>('SELECT id, name FROM groups WHERE name = ?').get(by.name ?? '')
  }
}
