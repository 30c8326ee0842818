import type { Database } from 'bun:sqlite'
import type { CollectionRow } from '../store'
import { SqliteShareList } from '../../access/shares.sqlite'
import { type AccessibleRow, type AccessStore, type Candidates, COLLECTION_SHARES, highestPerCollection, reachesUser, type ParsedRef, type Reached, type SharedRow, type ShareRole } from './store'

const COUNTS = `(SELECT count(*) FROM rag_documents d WHERE d.collection_id = c.id) AS documents,
  (SELECT count(*) FROM rag_chunks k WHERE k.collection_id = c.id) AS chunks`

/** Access lists in SQLite (see AccessStore). */
export class SqliteAccessStore extends SqliteShareList implements AccessStore {
  constructor(db: Database) {
    super(db, COLLECTION_SHARES)
  }

  candidates(userId: string, ref: ParsedRef): Candidates {
    if (ref.name !== undefined) {
      const own = this.db.query<CollectionRow, [string, string]>('SELECT * FROM rag_collections WHERE user_id = ? AND name = ?').get(userId, ref.name)
      if (own) return { own, byId: null, byOwner: null, shared: [] }
    }
    const reached = (collection: CollectionRow | null): Reached | null => collection && { row: collection, role: collection.user_id === userId ? null : this.roleOf(userId, collection.id) }
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
      if (role) found.push({ row: collection, role, ownerEmail: this.owner(collection.user_id)?.email ?? collection.user_id })
    }
    return found.sort((a, b) => (a.ownerEmail < b.ownerEmail ? -1 : 1))
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
}
