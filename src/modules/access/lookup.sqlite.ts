import type { Database } from 'bun:sqlite'
import type { OwnedTable } from './lookup'
import { reachesUser, type ShareRole } from './roles'
import { SqliteShareList } from './shares.sqlite'
import type { Candidates, OwnedRow, ParsedRef, Reached, ResourceLookup, SharedWith } from './store'

/**
 * The resolver's look-ups for a kind kept in one SQLite table (see OwnedTable): index probes one
 * form after another, the caller's own row first. Collections have their own (with their counts);
 * assistants, and any later kind, use this.
 */
export class SqliteOwnedLookup<Row extends OwnedRow> extends SqliteShareList implements ResourceLookup<Row> {
  constructor(
    db: Database,
    protected readonly owned: OwnedTable,
  ) {
    super(db, owned.shares)
  }

  candidates(userId: string, ref: ParsedRef): Candidates<Row> {
    const { table } = this.owned
    if (ref.name !== undefined) {
      const own = this.db.query<Row, [string, string]>(`SELECT * FROM ${table} WHERE user_id = ? AND name = ?`).get(userId, ref.name)
      if (own) return { own, byId: null, byOwner: null, shared: [] }
    }
    const reached = (row: Row | null): Reached<Row> | null => row && { row, role: row.user_id === userId ? null : this.roleOf(userId, this.keyOf(row)) }
    return {
      own: null,
      byId: ref.publicId !== undefined ? reached(this.byPublicId(ref.publicId)) : null,
      byOwner: ref.owner ? reached(this.byOwnerEmail(ref.owner.email, ref.owner.name)) : null,
      shared: ref.name !== undefined ? this.sharedNamed(userId, ref.name) : [],
    }
  }

  byPublicId(publicId: string): Row | null {
    return this.db.query<Row, [string]>(`SELECT * FROM ${this.owned.table} WHERE ${this.owned.publicId} = ?`).get(publicId)
  }

  protected keyOf(row: Row): string | number {
    return (row as unknown as Record<string, string | number>)[this.owned.key]!
  }

  private byOwnerEmail(email: string, name: string): Row | null {
    const owner = this.db.query<{ id: string }, [string]>('SELECT id FROM users WHERE email = ?').get(email)
    return owner ? this.db.query<Row, [string, string]>(`SELECT * FROM ${this.owned.table} WHERE user_id = ? AND name = ?`).get(owner.id, name) : null
  }

  private sharedNamed(userId: string, name: string): SharedWith<Row>[] {
    const found: SharedWith<Row>[] = []
    for (const row of this.db.query<Row, [string, string]>(`SELECT * FROM ${this.owned.table} WHERE name = ? AND user_id <> ?`).all(name, userId)) {
      const role = this.roleOf(userId, this.keyOf(row))
      if (role) found.push({ row, role, ownerEmail: this.owner(row.user_id)?.email ?? row.user_id })
    }
    return found.sort((a, b) => (a.ownerEmail < b.ownerEmail ? -1 : 1))
  }

  /** The caller's own rows and those shared with them (highest role each), with the owner's email. */
  accessibleRows(userId: string): (Row & { owner_email: string; access: 'owner' | ShareRole })[] {
    const { table, key, shares } = this.owned
    const own = this.db.query<Row & { owner_email: string }, [string]>(`SELECT t.*, u.email AS owner_email FROM ${table} t JOIN users u ON u.id = t.user_id WHERE t.user_id = ?`).all(userId)
    const shared = this.db
      .query<Row & { owner_email: string; role: ShareRole }, Record<string, string>>(
        `SELECT t.*, u.email AS owner_email, s.role FROM ${shares.table} s JOIN ${table} t ON t.${key} = s.${shares.key} JOIN users u ON u.id = t.user_id
         WHERE t.user_id <> $user AND ${reachesUser('$user')}`,
      )
      .all({ $user: userId })
    const best = new Map<string | number, Row & { owner_email: string; access: 'owner' | ShareRole }>()
    for (const { role, ...row } of shared) {
      const seen = best.get(this.keyOf(row as unknown as Row))
      if (!seen || rank(role) > rank(seen.access as ShareRole)) best.set(this.keyOf(row as unknown as Row), { ...(row as unknown as Row & { owner_email: string }), access: role })
    }
    return [...own.map((row) => ({ ...row, access: 'owner' as const })), ...best.values()]
  }
}

const rank = (role: ShareRole) => (role === 'manager' ? 3 : role === 'editor' ? 2 : 1)
