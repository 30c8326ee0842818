import type { Database } from 'bun:sqlite'
import type { CollectionRow } from '../store'
import { type AccessibleRow, type AccessStore, type Candidates, highestPerCollection, highestRole, isAdminRoles, reachesUser, type ParsedRef, type Reached, type ShareEntry, type SharedRow, type ShareRole, shareView, type ShareView } from './store'

const COUNTS = `(SELECT count(*) FROM rag_documents d WHERE d.collection_id = c.id) AS documents,
  (SELECT count(*) FROM rag_chunks k WHERE k.collection_id = c.id) AS chunks`

/** Access lists in SQLite (see AccessStore). */
export class SqliteAccessStore implements AccessStore {
  constructor(private readonly db: Database) {}

  candidates(userId: string, ref: ParsedRef): Candidates {
    if (ref.name !== undefined) {
      const own = this.db.query<CollectionRow, [string, string]>('SELECT * FROM rag_collections WHERE user_id = ? AND name = ?').get(userId, ref.name)
      if (own) return { own, byId: null, byOwner: null, shared: [] }
    }
    const reached = (collection: CollectionRow | null): Reached | null => collection && { collection, role: collection.user_id === userId ? null : this.roleOf(userId, collection.id) }
    return {
      own: null,
      byId: ref.publicId !== undefined ? reached(this.byPublicId(ref.publicId)) : null,
      byOwner: ref.owner ? reached(this.byOwnerEmail(ref.owner.email, ref.owner.name)) : null,
      shared: ref.name !== undefined ? this.sharedNamed(userId, ref.name) : [],
    }
  }

  byPublicId(publicId: string): CollectionRow | null {
    return this.db.query<CollectionRow, [string]>('SELECT * FROM rag_collections WHERE public_id = ?').get(publicId)
  }

  private byOwnerEmail(email: string, name: string): CollectionRow | null {
    const owner = this.db.query<{ id: string }, [string]>('SELECT id FROM users WHERE email = ?').get(email)
    return owner ? this.db.query<CollectionRow, [string, string]>('SELECT * FROM rag_collections WHERE user_id = ? AND name = ?').get(owner.id, name) : null
  }

  /**
   * Look-ups of one table each, joined here: on every request that names a shared collection,
   * SQLite answers a join of rag_collections with rag_collection_shares an order of magnitude
   * slower (tens of µs against a few) than these index probes one after another.
   */
  private sharedNamed(userId: string, name: string): SharedRow[] {
    const found: SharedRow[] = []
    for (const collection of this.db.query<CollectionRow, [string, string]>('SELECT * FROM rag_collections WHERE name = ? AND user_id <> ?').all(name, userId)) {
      const role = this.roleOf(userId, collection.id)
      if (role) found.push({ collection, role, ownerEmail: this.owner(collection.user_id)?.email ?? collection.user_id })
    }
    return found.sort((a, b) => (a.ownerEmail < b.ownerEmail ? -1 : 1))
  }

  private roleOf(userId: string, collectionId: number): ShareRole | null {
    const rows = this.db
      .query<{ role: ShareRole }, [number, string]>(`SELECT s.role FROM rag_collection_shares s WHERE s.collection_id = ?1 AND ${reachesUser('?2')}`)
      .all(collectionId, userId)
    return highestRole(rows.map((row) => row.role))
  }

  isAdmin(userId: string): boolean {
    return isAdminRoles(this.db.query<{ roles: string }, [string]>('SELECT roles FROM users WHERE id = ?').get(userId)?.roles)
  }

  accessible(userId: string): AccessibleRow[] {
    const own = this.db
      .query<AccessibleRow, [string]>(`SELECT c.*, u.email AS owner_email, 'owner' AS access, ${COUNTS} FROM rag_collections c JOIN users u ON u.id = c.user_id WHERE c.user_id = ?`)
      .all(userId)
    const shared = highestPerCollection(
      this.db
        .query<AccessibleRow & { role: ShareRole }, Record<string, string>>(
          `SELECT c.*, u.email AS owner_email, s.role, ${COUNTS}
           FROM rag_collection_shares s JOIN rag_collections c ON c.id = s.collection_id JOIN users u ON u.id = c.user_id
           WHERE c.user_id <> $user AND ${reachesUser('$user')}`,
        )
        .all({ $user: userId }),
    ).map(({ role, ...row }) => ({ ...row, access: role }))
    return [...own, ...shared].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.owner_email < b.owner_email ? -1 : 1))
  }

  owner(userId: string): { id: string; email: string } | null {
    return this.db.query<{ id: string; email: string }, [string]>('SELECT id, email FROM users WHERE id = ?').get(userId)
  }

  shares(collectionId: number): ShareView[] {
    const rows = this.db
      .query<{ type: ShareView['type']; id: string; role: ShareRole; email: string | null; name: string | null }, [number]>(
        `SELECT s.principal_type AS type, s.principal_id AS id, s.role, u.email, g.name
         FROM rag_collection_shares s
         LEFT JOIN users u ON s.principal_type = 'user' AND u.id = s.principal_id
         LEFT JOIN groups g ON s.principal_type = 'group' AND g.id = s.principal_id
         WHERE s.collection_id = ? AND (s.principal_type = 'everyone' OR u.id IS NOT NULL OR g.id IS NOT NULL)
         ORDER BY s.principal_type, coalesce(u.email, g.name, '')`,
      )
      .all(collectionId)
    return rows.map(shareView)
  }

  replaceShares(collectionId: number, entries: ShareEntry[]): void {
    const at = new Date().toISOString()
    this.db
      .transaction(() => {
        this.db.run('DELETE FROM rag_collection_shares WHERE collection_id = ?', [collectionId])
        const insert = this.db.prepare('INSERT INTO rag_collection_shares (collection_id, principal_type, principal_id, role, created_at) VALUES (?, ?, ?, ?, ?)')
        for (const entry of entries) insert.run(collectionId, entry.type, entry.principalId, entry.role, at)
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
