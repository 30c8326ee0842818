// What a fresh index build does once it has read every row (see vector-index.worker.ts), apart so
// that it can be tested without a thread.
import type { Database } from 'bun:sqlite'

/**
 * After a build read every row page by page (an ingest going on meanwhile), what the file holds is
 * brought up to the last change logged, so that the database does not record it as holding only
 * what was logged when the build began (at a million chunks written during a build, that was
 * 670,000 changes for the next merge to remove and add again, which took as long as the build).
 * In one read: the last change now, and every chunk changed since `from`. A chunk only ever added
 * since is in the index when a page read it: new chunk ids are above every existing one, so ahead
 * of the pages, and a chunk added but not removed since has the vector it was added with; one added
 * after the last page is added now. A chunk removed since (and perhaps added again, under an id
 * SQLite gave anew) is taken out, then added with its current vector if it is still there. Returns
 * the change the file holds.
 */
export function caughtUp(
  db: Database,
  index: { contains(key: bigint): boolean; remove(key: bigint): number },
  collectionId: number,
  from: number,
  put: (chunkId: number, embedding: Uint8Array) => void,
): number {
  return db.transaction(() => {
    const to = db.query<{ seq: number | null }, [number]>('SELECT max(seq) AS seq FROM rag_vector_changes WHERE collection_id = ?').get(collectionId)?.seq ?? from
    const changes = db
      .query<{ chunk_id: number; removed: number }, [number, number, number]>(
        'SELECT chunk_id, max(added = 0) AS removed FROM rag_vector_changes WHERE collection_id = ? AND seq > ? AND seq <= ? GROUP BY chunk_id',
      )
      .all(collectionId, from, to)
    const row = db.query<{ embedding: Uint8Array }, [number, number]>('SELECT embedding FROM rag_vector_rows WHERE chunk_id = ? AND collection_id = ?')
    for (const { chunk_id: chunkId, removed } of changes) {
      const key = BigInt(chunkId)
      if (!removed && index.contains(key)) continue
      if (removed && index.contains(key)) index.remove(key)
      const found = row.get(chunkId, collectionId)
      if (found) put(chunkId, found.embedding)
    }
    return to
  })()
}
