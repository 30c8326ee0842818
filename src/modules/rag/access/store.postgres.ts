import type { Postgres } from '../../../db/postgres'
import type { CollectionRow } from '../store'
import { collectionRow } from '../store/postgres/collection-row'
import { PostgresShareList } from '../../access/shares.postgres'
import { type AccessibleRow, type AccessStore, type Candidates, COLLECTION_SHARES, highestPerCollection, highestRole, reachesUser, type ParsedRef, type Reached, type ShareRole } from './store'

const COLUMNS = 'c.id, c.public_id, c.user_id, c.name, c.embedder, c.dimensions, c.created_at, c.version'
/** What candidates() reads beside each row: the collection's keyword statistics, which a search needs next (see CollectionRowsSeen). */
const STATE = 'c.chunk_count, c.token_count'
const COUNTS = 'c.chunk_count AS chunks, (SELECT count(*) FROM rag_documents d WHERE d.collection_id = c.id) AS documents'

const accessibleRow = (row: Record<string, unknown>, access: AccessibleRow['access']): AccessibleRow => ({
  ...collectionRow(row),
  documents: Number(row.documents),
  chunks: Number(row.chunks),
  owner_email: row.owner_email as string,
  access,
})

/**
 * Told of the collection rows the resolver read (with their version and keyword statistics), so
 * that a search need not read them again (PostgresRagStore): `reading()` is called as a read
 * begins, and the function it gives gets each row found.
 */
export interface CollectionRowsSeen {
  reading(): (row: Record<string, unknown>) => void
}

/** Access lists in PostgreSQL (see AccessStore). */
export class PostgresAccessStore extends PostgresShareList implements AccessStore {
  constructor(
    sql: Postgres,
    private readonly seen?: CollectionRowsSeen,
  ) {
    super(sql, COLLECTION_SHARES)
  }

  /**
   * One round trip for every form (a request naming a shared collection costs what one naming your
   * own does). The caller's own collection wins: found, the other forms are not looked for (the
   * shared ones of that name would be every other user's collection of the name).
   */
  async candidates(userId: string, ref: ParsedRef): Promise<Candidates> {
    const reaching = `LEFT JOIN rag_collection_shares s ON s.collection_id = c.id AND ${reachesUser('$1')}`
    const seen = this.seen?.reading()
    const rows = await this.sql.unsafe(
      `WITH own AS (SELECT 1 AS step, ${COLUMNS}, ${STATE}, NULL::text AS role, NULL::text AS owner_email FROM rag_collections c WHERE c.user_id = $1 AND c.name = $2)
       SELECT * FROM own
       UNION ALL
       SELECT 2, ${COLUMNS}, ${STATE}, s.role, u.email FROM rag_collections c JOIN users u ON u.id = c.user_id ${reaching} WHERE c.public_id = $3 AND NOT EXISTS (SELECT 1 FROM own)
       UNION ALL
       SELECT 3, ${COLUMNS}, ${STATE}, s.role, u.email FROM rag_collections c JOIN users u ON u.id = c.user_id ${reaching} WHERE u.email = $4 AND c.name = $5 AND NOT EXISTS (SELECT 1 FROM own)
       UNION ALL
       SELECT 4, ${COLUMNS}, ${STATE}, s.role, u.email FROM rag_collections c JOIN rag_collection_shares s ON s.collection_id = c.id JOIN users u ON u.id = c.user_id
         WHERE c.name = $2 AND c.user_id <> $1 AND ${reachesUser('$1')} AND NOT EXISTS (SELECT 1 FROM own)`,
      [userId, ref.name ?? '', ref.publicId ?? '', ref.owner?.email ?? '', ref.owner?.name ?? ''],
    )
    if (seen) for (const row of rows) seen(row)
    const at = (step: number) => rows.filter((row: Record<string, unknown>) => Number(row.step) === step)
    const own = at(1)[0]
    if (own) return { own: collectionRow(own), byId: null, byOwner: null, shared: [] }
    const reached = (found: Record<string, unknown>[]): Reached | null =>
      found.length ? { row: collectionRow(found[0]!), role: highestRole(found.map((row) => row.role as ShareRole | null).filter((role): role is ShareRole => role !== null)) } : null
    const shared = highestPerCollection<CollectionRow & { owner_email: string; role: ShareRole }>(
      at(4).map((row: Record<string, unknown>) => ({ ...collectionRow(row), owner_email: row.owner_email as string, role: row.role as ShareRole })),
    )
      .map(({ owner_email, role, ...collection }) => ({ row: collection, role, ownerEmail: owner_email }))
      .sort((a, b) => (a.ownerEmail < b.ownerEmail ? -1 : 1))
    return { own: null, byId: reached(at(2)), byOwner: reached(at(3)), shared }
  }

  async byPublicId(publicId: string): Promise<CollectionRow | null> {
    const [row] = await this.sql.unsafe(`SELECT ${COLUMNS} FROM rag_collections c WHERE c.public_id = $1`, [publicId])
    return row ? collectionRow(row) : null
  }

  async accessible(userId: string): Promise<AccessibleRow[]> {
    const [own, shared] = await Promise.all([
      this.sql.unsafe(`SELECT ${COLUMNS}, u.email AS owner_email, ${COUNTS} FROM rag_collections c JOIN users u ON u.id = c.user_id WHERE c.user_id = $1`, [userId]),
      this.sql.unsafe(
        `SELECT ${COLUMNS}, u.email AS owner_email, s.role, ${COUNTS}
         FROM rag_collection_shares s JOIN rag_collections c ON c.id = s.collection_id JOIN users u ON u.id = c.user_id
         WHERE c.user_id <> $1 AND ${reachesUser('$1')}`,
        [userId],
      ),
    ])
    const rows = [
      ...own.map((row: Record<string, unknown>) => accessibleRow(row, 'owner')),
      ...highestPerCollection(shared.map((row: Record<string, unknown>) => ({ ...accessibleRow(row, row.role as ShareRole), role: row.role as ShareRole }))).map(({ role: _role, ...row }) => row),
    ]
    return rows.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.owner_email < b.owner_email ? -1 : 1))
  }
}
