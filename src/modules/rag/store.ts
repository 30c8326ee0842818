import type { Database } from 'bun:sqlite'
import { createHash } from 'node:crypto'
import { cachedVector, scanNearest, VectorCache, type VectorCacheOptions } from './vector-cache'

export interface CollectionRow {
  id: number
  user_id: string
  name: string
  embedder: string
  dimensions: number
  created_at: string
}

export interface ChunkHit {
  chunkId: number
  docId: string
  content: string
  position: number
  metadata: Record<string, unknown>
}

export interface StoredDocument {
  docId: string
  content: string
  metadata: Record<string, unknown>
  chunks: string[]
  vectors: Float32Array[]
}

const vecTable = (dimensions: number) => `rag_vec_${dimensions}`
const ftsTable = (collectionId: number) => `rag_fts_${collectionId}`

/**
 * The RAG tables: collections, documents, chunks, the sqlite-vec tables, and one FTS5 index per
 * collection, so that BM25's statistics (how many chunks, how long, how rare a word is) are the
 * collection's own: another user's documents never move a score.
 */
export class RagStore {
  private readonly vecTables = new Set<number>()
  private readonly ftsTables = new Set<number>()
  private readonly cache: VectorCache

  constructor(
    private readonly db: Database,
    cacheOptions?: VectorCacheOptions,
  ) {
    this.cache = new VectorCache(cacheOptions)
  }

  /** A vec0 table per embedding width, partitioned by collection so KNN stays exact and scoped. */
  private ensureVecTable(dimensions: number): string {
    const table = vecTable(dimensions)
    if (this.vecTables.has(dimensions)) return table
    this.db.run(
      `CREATE VIRTUAL TABLE IF NOT EXISTS ${table} USING vec0(collection_id integer partition key, embedding float[${dimensions}] distance_metric=cosine)`,
    )
    this.db.run(`CREATE TRIGGER IF NOT EXISTS ${table}_cleanup AFTER DELETE ON rag_chunks BEGIN DELETE FROM ${table} WHERE rowid = old.id; END`)
    this.vecTables.add(dimensions)
    return table
  }

  /**
   * The collection's FTS5 index (external content over rag_chunks). Built from its chunks when
   * missing: collections made before indexes were per collection get theirs on first use.
   */
  private ensureFts(collectionId: number): string {
    const table = ftsTable(collectionId)
    if (this.ftsTables.has(collectionId)) return table
    if (!this.db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table)) {
      this.db.transaction(() => {
        this.db.run(
          `CREATE VIRTUAL TABLE ${table} USING fts5(content, content = 'rag_chunks', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2')`,
        )
        this.db.run(`INSERT INTO ${table} (rowid, content) SELECT id, content FROM rag_chunks WHERE collection_id = ?`, [collectionId])
      })()
    }
    this.ftsTables.add(collectionId)
    return table
  }

  private dropFts(collectionId: number): void {
    this.db.run(`DROP TABLE IF EXISTS ${ftsTable(collectionId)}`)
    this.ftsTables.delete(collectionId)
  }

  /** Takes a document's chunks out of its collection's keyword index (before the rows go). */
  private unindexDocument(collectionId: number, docId: string): void {
    const table = this.ensureFts(collectionId)
    this.db.run(
      `INSERT INTO ${table} (${table}, rowid, content)
       SELECT 'delete', c.id, c.content FROM rag_chunks c JOIN rag_documents d ON d.id = c.document_id WHERE d.collection_id = ? AND d.doc_id = ?`,
      [collectionId, docId],
    )
  }

  findCollection(userId: string, name: string): CollectionRow | null {
    return this.db.query<CollectionRow, [string, string]>('SELECT * FROM rag_collections WHERE user_id = ? AND name = ?').get(userId, name)
  }

  createCollection(userId: string, name: string, embedder: string, dimensions: number): CollectionRow {
    this.ensureVecTable(dimensions)
    this.db.run('INSERT INTO rag_collections (user_id, name, embedder, dimensions, created_at) VALUES (?, ?, ?, ?, ?)', [
      userId,
      name,
      embedder,
      dimensions,
      new Date().toISOString(),
    ])
    const collection = this.findCollection(userId, name)!
    // SQLite may reuse a deleted collection's id: its index starts empty whatever was there.
    this.dropFts(collection.id)
    this.ensureFts(collection.id)
    return collection
  }

  listCollections(userId: string) {
    return this.db
      .query<CollectionRow & { documents: number; chunks: number }, [string]>(
        `SELECT c.*,
           (SELECT count(*) FROM rag_documents d WHERE d.collection_id = c.id) AS documents,
           (SELECT count(*) FROM rag_chunks k WHERE k.collection_id = c.id) AS chunks
         FROM rag_collections c WHERE c.user_id = ? ORDER BY c.name`,
      )
      .all(userId)
  }

  /** Deletes a collection with its keyword index; a trigger removes its vectors. */
  deleteCollection(collection: CollectionRow): void {
    this.ensureVecTable(collection.dimensions)
    this.db.transaction(() => {
      this.dropFts(collection.id)
      this.db.run('DELETE FROM rag_collections WHERE id = ?', [collection.id])
    })()
    this.cache.invalidate(collection.id)
  }

  deleteDocument(collection: CollectionRow, docId: string): boolean {
    this.ensureVecTable(collection.dimensions)
    this.cache.invalidate(collection.id)
    return this.db.transaction(() => {
      this.unindexDocument(collection.id, docId)
      return this.db.run('DELETE FROM rag_documents WHERE collection_id = ? AND doc_id = ?', [collection.id, docId]).changes > 0
    })()
  }

  /** Writes one document (replacing any earlier one with its id) in one transaction. */
  writeDocument(collection: CollectionRow, document: StoredDocument): void {
    const table = this.ensureVecTable(collection.dimensions)
    const hash = createHash('sha256').update(document.content).digest('hex')
    this.cache.invalidate(collection.id)
    const fts = this.ensureFts(collection.id)
    this.db.transaction(() => {
      this.unindexDocument(collection.id, document.docId)
      this.db.run('DELETE FROM rag_documents WHERE collection_id = ? AND doc_id = ?', [collection.id, document.docId])
      const inserted = this.db.run('INSERT INTO rag_documents (collection_id, doc_id, metadata, content_hash, created_at) VALUES (?, ?, ?, ?, ?)', [
        collection.id,
        document.docId,
        JSON.stringify(document.metadata),
        hash,
        new Date().toISOString(),
      ])
      const documentRow = Number(inserted.lastInsertRowid)
      const insertChunk = this.db.prepare('INSERT INTO rag_chunks (document_id, collection_id, position, content) VALUES (?, ?, ?, ?)')
      const insertVector = this.db.prepare(`INSERT INTO ${table} (rowid, collection_id, embedding) VALUES (?, ?, ?)`)
      const insertText = this.db.prepare(`INSERT INTO ${fts} (rowid, content) VALUES (?, ?)`)
      document.chunks.forEach((chunk, position) => {
        const chunkRow = insertChunk.run(documentRow, collection.id, position, chunk).lastInsertRowid
        insertVector.run(chunkRow, collection.id, document.vectors[position]!)
        insertText.run(chunkRow, chunk)
      })
    })()
  }

  /**
   * Nearest chunks by cosine distance, exactly: sqlite-vec scans the collection's partition, or,
   * for large collections, the in-memory copy of the same vectors does (see VectorCache).
   */
  nearest(collection: CollectionRow, vector: Float32Array, k: number): { chunkId: number; distance: number | null }[] {
    const table = this.ensureVecTable(collection.dimensions)
    const matrix = this.cache.matrix(
      collection.id,
      () => (this.db.query('SELECT count(*) AS n FROM rag_chunks WHERE collection_id = ?').get(collection.id) as { n: number }).n,
      collection.dimensions,
      () =>
        this.db
          .query<{ rowid: number; embedding: Uint8Array }, [number]>(`SELECT rowid, embedding FROM ${table} WHERE collection_id = ?`)
          .all(collection.id)
          .map((row) => ({ id: row.rowid, bytes: row.embedding })),
    )
    if (matrix) return scanNearest(matrix, vector, k)
    return this.db
      .query<{ rowid: number; distance: number | null }, [Float32Array, number, number]>(
        `SELECT rowid, distance FROM ${table} WHERE embedding MATCH ? AND k = ? AND collection_id = ? ORDER BY distance`,
      )
      .all(vector, Math.min(k, 4096), collection.id)
      .map((row) => ({ chunkId: row.rowid, distance: row.distance }))
  }

  /** Chunks matching an FTS5 query, best BM25 first (bm25() is negative: lower is better), from the collection's own index. */
  keywordMatches(collection: CollectionRow, ftsQuery: string, k: number): { chunkId: number; bm25: number }[] {
    const table = this.ensureFts(collection.id)
    return this.db
      .query<{ id: number; rank: number }, [string, number]>(`SELECT rowid AS id, bm25(${table}) AS rank FROM ${table} WHERE ${table} MATCH ? ORDER BY rank LIMIT ?`)
      .all(ftsQuery, k)
      .map((row) => ({ chunkId: row.id, bm25: row.rank }))
  }

  /** Stored vectors of some chunks (for candidates found only by keyword). */
  vectors(collection: CollectionRow, chunkIds: number[]): Map<number, Float32Array> {
    if (!chunkIds.length) return new Map()
    // vec0 looks rows up slowly (~1 ms each at 100k rows); a cached matrix answers at once.
    const matrix = this.cache.peek(collection.id)
    if (matrix) {
      const found = new Map<number, Float32Array>()
      for (const id of chunkIds) {
        const vector = cachedVector(matrix, id)
        if (vector) found.set(id, vector)
      }
      return found
    }
    const table = this.ensureVecTable(collection.dimensions)
    const rows = this.db
      .query<{ rowid: number; embedding: Uint8Array }, number[]>(`SELECT rowid, embedding FROM ${table} WHERE rowid IN (${chunkIds.map(() => '?').join(',')})`)
      .all(...chunkIds)
    return new Map(rows.map((row) => [row.rowid, new Float32Array(row.embedding.buffer.slice(row.embedding.byteOffset, row.embedding.byteOffset + row.embedding.byteLength))]))
  }

  chunks(chunkIds: number[]): Map<number, ChunkHit> {
    if (!chunkIds.length) return new Map()
    const rows = this.db
      .query<{ id: number; content: string; position: number; doc_id: string; metadata: string }, number[]>(
        `SELECT c.id, c.content, c.position, d.doc_id, d.metadata FROM rag_chunks c JOIN rag_documents d ON d.id = c.document_id
         WHERE c.id IN (${chunkIds.map(() => '?').join(',')})`,
      )
      .all(...chunkIds)
    return new Map(
      rows.map((row) => [row.id, { chunkId: row.id, docId: row.doc_id, content: row.content, position: row.position, metadata: JSON.parse(row.metadata) }]),
    )
  }

  /** The first chunks of a collection, for a query that has nothing to match on. */
  firstChunks(collection: CollectionRow, k: number): number[] {
    return this.db
      .query<{ id: number }, [number, number]>('SELECT id FROM rag_chunks WHERE collection_id = ? ORDER BY id LIMIT ?')
      .all(collection.id, k)
      .map((row) => row.id)
  }
}
