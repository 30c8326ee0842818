import type { CollectionRow } from '../../store'
import type { Matrix, VectorCache } from '../../vectors/cache'

/** Which path serves a PostgreSQL store's vector search: pgvector in the database, or the server's memory. */
export type PostgresVectorSearch = 'pgvector' | 'in-memory'

/**
 * Where a PostgreSQL store's vectors live and how they are searched: in rag_vectors' `embedding`
 * column (float32 bytes) searched in the server's memory (vectors-memory.ts), or in its `vec`
 * column (pgvector) searched in the database (vectors-pgvector.ts). The rest of the store (the
 * chunk rows, the keyword index, the documents) is the same on both.
 */
export interface VectorPath {
  readonly kind: PostgresVectorSearch
  /** The in-memory copies (the pgvector path keeps none: its cache stays empty). */
  readonly cache: VectorCache
  /** The value a write sends for one vector (see PostgresRagStore.writeDocuments). */
  insertValue(vector: Float32Array): Uint8Array | string
  /** Bytes of vectors this path holds in the server's memory now (Prometheus). */
  bytesUsed(): number
  /** A collection was deleted: forget what was kept of it. */
  drop(collectionId: number): void
  /** A write of this replica to the collection begins, and ends (committed or not). */
  writeStarted?(collectionId: number): void
  writeEnded?(collectionId: number): void
  /** After this replica's own committed write (version: the collection's after it). */
  followWrite(collectionId: number, version: number, removed: number[], added: { id: number; vector: Float32Array }[]): void
  /** The collection's matrix in memory, for twin-aware keyword candidates (see distinctHits). */
  matrixOf(collectionId: number): Matrix | undefined
  nearest(collection: CollectionRow, vector: Float32Array, k: number, distinct?: { dropped: number }): Promise<{ chunkId: number; distance: number | null }[]>
  vectors(collection: CollectionRow, chunkIds: number[]): Promise<Map<number, Float32Array>>
}
