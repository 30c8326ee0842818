import type { Postgres } from '../../../../db/postgres'
import type { CollectionRow } from '../../store'
import { cachedVector, type Matrix, scanNearest, VectorCache, type VectorCacheOptions } from '../../vectors/cache'
import type { VectorPath } from './vectors'

/**
 * Without pgvector every PostgreSQL collection's vectors are searched in the server's memory: a
 * collection's vectors are copied from rag_vectors on its first search, then follow the writes.
 * The copies share one budget (UAGENT_VECTOR_CACHE_MB); a collection larger than it is scanned in
 * slices streamed from the database (slow, exact, and within the budget).
 */
export const POSTGRES_VECTOR_CACHE: VectorCacheOptions = { minRows: 0, budgetBytes: 1024 * 1024 * 1024 }

/** Rows of a collection too large for the cache read and scored at a time (about 15 MB of 384-dimension vectors). */
export const STREAM_ROWS = 10_000

/** A bytea of float32s as its own (aligned) vector. */
export function floats(bytes: Uint8Array): Float32Array {
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength))
}

/** What the memory path reads of a collection's version (the store's state(), read at most every 100 ms). */
export type VersionOf = (collectionId: number) => Promise<{ version: number; chunks: number } | null>

/**
 * The vectors in rag_vectors' `embedding` column (float32 bytes), searched from the server's
 * memory. Every write bumps its collection's version in the same transaction; before a search the
 * replica compares the version it cached with the database's and loads what changed, so a
 * document written through another server is found (or gone) within a second.
 */
export class MemoryVectors implements VectorPath {
  readonly kind = 'in-memory' as const
  readonly cache: VectorCache
  /** The version each cached matrix holds. */
  private readonly loaded = new Map<number, number>()
  private readonly syncing = new Map<number, Promise<Matrix | null>>()
  /** Searches of collections larger than the budget, scanned in slices from the database. */
  streamed = 0

  constructor(
    private readonly sql: Postgres,
    private readonly versionOf: VersionOf,
    options: VectorCacheOptions = POSTGRES_VECTOR_CACHE,
    private readonly streamRows = STREAM_ROWS,
  ) {
    this.cache = new VectorCache(options)
  }

  bytesUsed(): number {
    return this.cache.usedBytes
  }

  insertValue(vector: Float32Array): Uint8Array {
    return new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength)
  }

  drop(collectionId: number): void {
    this.cache.invalidate(collectionId)
    this.loaded.delete(collectionId)
  }

  /**
   * After this replica's own committed write: the cached vectors follow it row by row. When the
   * cache held the version just before, it now holds this one; otherwise another replica wrote
   * in between, and the next search loads the difference.
   */
  followWrite(collectionId: number, version: number, removed: number[], added: { id: number; vector: Float32Array }[]): void {
    this.cache.update(collectionId, removed, added)
    if (this.loaded.get(collectionId) === version - 1 && this.cache.peek(collectionId)) this.loaded.set(collectionId, version)
  }

  /** The matrix of a twin-aware keyword search (see distinctHits), when this replica holds one. */
  matrixOf(collectionId: number): Matrix | undefined {
    return this.cache.peek(collectionId)
  }

  /** The collection's vectors in memory, as of its current version: loaded whole once, then only what changed; null past the budget. */
  private matrix(collection: CollectionRow): Promise<Matrix | null> {
    const running = this.syncing.get(collection.id)
    if (running) return running
    const sync = this.syncMatrix(collection).finally(() => this.syncing.delete(collection.id))
    this.syncing.set(collection.id, sync)
    return sync
  }

  private async syncMatrix(collection: CollectionRow): Promise<Matrix | null> {
    const state = await this.versionOf(collection.id)
    const version = state?.version ?? 0
    const cached = this.cache.peek(collection.id)
    if (cached && this.loaded.get(collection.id) === version) return this.cache.matrix(collection.id, () => 0, collection.dimensions, () => [])!
    if (cached) {
      // Another replica wrote: compare chunk ids, take out the gone, load the new.
      const ids: number[] = (await this.sql`SELECT id FROM rag_chunks WHERE collection_id = ${collection.id}`).map((row: { id: number }) => Number(row.id))
      const present = new Set(ids)
      const removed = [...cached.rowOf.keys()].filter((id) => !present.has(id))
      const missing = ids.filter((id) => !cached.rowOf.has(id))
      const rows = missing.length ? await this.sql`SELECT chunk_id AS id, embedding FROM rag_vectors WHERE chunk_id = ANY(${missing}::int[])` : []
      this.cache.update(
        collection.id,
        removed,
        rows.map((row: { id: number; embedding: Uint8Array }) => ({ id: Number(row.id), vector: floats(row.embedding) })),
      )
      if (this.cache.peek(collection.id)) {
        this.loaded.set(collection.id, version)
        return this.cache.peek(collection.id)!
      }
    }
    // Larger than the whole budget: never loaded (not even for one search), scanned in slices instead.
    if (!this.fits(state?.chunks ?? 0, collection.dimensions)) return null
    const rows = await this.sql`SELECT chunk_id AS id, embedding FROM rag_vectors WHERE collection_id = ${collection.id} AND embedding IS NOT NULL`
    const entries = rows.map((row: { id: number; embedding: Uint8Array }) => ({ id: Number(row.id), bytes: row.embedding }))
    const matrix = this.cache.matrix(collection.id, () => entries.length, collection.dimensions, () => entries)
    if (matrix) this.loaded.set(collection.id, version)
    return matrix
  }

  /** Whether a collection of `rows` vectors fits the cache's budget (with the cache's room to grow and its own per-row costs). */
  private fits(rows: number, dimensions: number): boolean {
    const perRow = dimensions * 4 + 16 + (dimensions % 16 === 0 ? dimensions + 20 : 0)
    return Math.ceil(rows * 1.25) * perRow <= this.cache.options.budgetBytes
  }

  async nearest(collection: CollectionRow, vector: Float32Array, k: number, distinct?: { dropped: number }): Promise<{ chunkId: number; distance: number | null }[]> {
    const matrix = await this.matrix(collection)
    if (!matrix) return this.streamNearest(collection, vector, k, distinct)
    // Queries asked just before (a search's keyword part) are sent before this thread scans the
    // vectors for a few milliseconds: the database works on them meanwhile.
    await new Promise((resolve) => setImmediate(resolve))
    return scanNearest(matrix, vector, k, distinct)
  }

  /**
   * Exact nearest chunks of a collection larger than the budget: its vectors read in slices of
   * `streamRows` (by chunk id), each scanned and let go, the best `k` kept. Memory stays within a
   * slice whatever the collection; time grows with it (about a second per million rows read).
   */
  private async streamNearest(collection: CollectionRow, vector: Float32Array, k: number, distinct?: { dropped: number }): Promise<{ chunkId: number; distance: number | null }[]> {
    this.streamed++
    let best: { chunkId: number; distance: number | null }[] = []
    let after = 0
    for (;;) {
      const rows = await this.sql`SELECT chunk_id AS id, embedding FROM rag_vectors WHERE collection_id = ${collection.id} AND chunk_id > ${after} AND embedding IS NOT NULL
        ORDER BY chunk_id LIMIT ${this.streamRows}`
      if (!rows.length) break
      after = Number(rows[rows.length - 1].id)
      const entries = rows.map((row: { id: number; embedding: Uint8Array }) => ({ id: Number(row.id), bytes: row.embedding }))
      const slice = new VectorCache({ minRows: 0, budgetBytes: Number.POSITIVE_INFINITY }).matrix(0, () => entries.length, collection.dimensions, () => entries)
      if (slice) best = [...best, ...scanNearest(slice, vector, k, distinct)].sort((a, b) => (a.distance ?? 2) - (b.distance ?? 2) || a.chunkId - b.chunkId).slice(0, k)
      if (rows.length < this.streamRows) break
    }
    return best
  }

  async vectors(collection: CollectionRow, chunkIds: number[]): Promise<Map<number, Float32Array>> {
    const found = new Map<number, Float32Array>()
    if (!chunkIds.length) return found
    const matrix = this.cache.peek(collection.id)
    const missing: number[] = []
    for (const id of chunkIds) {
      const vector = matrix && cachedVector(matrix, id)
      if (vector) found.set(id, vector)
      else missing.push(id)
    }
    if (missing.length) {
      for (const row of await this.sql`SELECT chunk_id AS id, embedding FROM rag_vectors WHERE chunk_id = ANY(${missing}::int[]) AND collection_id = ${collection.id}`) {
        found.set(Number(row.id), floats(row.embedding))
      }
    }
    return found
  }
}
