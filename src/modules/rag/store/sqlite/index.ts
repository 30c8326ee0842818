import type { Database } from 'bun:sqlite'
import { createHash } from 'node:crypto'
import type { MaybePromise } from '../../../../db/maybe-promise'
import { KEYWORD_POSTINGS } from '../../ranking/scoring'
import type { ChunkHit, CollectionRow, CollectionSummary, DescribeHook, DocumentHashes, DocumentPage, DocumentRow, QueryTerm, QueryTerms, RagStore, StoredDocument } from '../../store'
import { cachedVector, columnsNearest, freedAfterCopy, isSparse, type Matrix, scanNearest, VectorCache, type VectorCacheOptions } from '../../vectors/cache'
import { SqliteDocumentReads } from './documents'
import { DEFAULT_KEYWORD_TOPK, type KeywordTopKOptions } from './keyword-topk'
import { SqliteKeywords } from './keywords'
import { DEFAULT_VECTOR_INDEX, type VectorIndexOptions, VectorIndexes } from './vector-index'

const vecTable = (dimensions: number) => `rag_vec_${dimensions}`
/** Vectors per sqlite-vec storage blob (see ensureVecTable). Tables made before keep the 1,024 they were made with. */
const VEC_CHUNK_ROWS = 128

/**
 * The RAG tables on SQLite: collections, documents, chunks, the sqlite-vec tables, and one FTS5
 * index per collection, so that BM25's statistics (how many chunks, how long, how rare a word is)
 * are the collection's own: another user's documents never move a score. Its parts, in this
 * folder: the keyword index (keywords.ts), large collections' approximate vector indexes
 * (vector-index.ts), and the reads of chunks and documents (documents.ts); the writes, which keep
 * them all in step in one transaction, and exact vector search are here.
 */
export class SqliteRagStore implements RagStore {
  private readonly vecTables = new Set<number>()
  readonly cache: VectorCache
  /** Large collections' approximate vector indexes (see vector-index.ts). */
  readonly indexes: VectorIndexes
  /** Chunks and documents as searches and listings read them (see documents.ts). */
  private readonly reads: SqliteDocumentReads
  /** The keyword indexes and their statistics (see keywords.ts). */
  readonly keywords: SqliteKeywords

  constructor(
    private readonly db: Database,
    cacheOptions?: VectorCacheOptions,
    /** Postings ranked to find keyword candidates (see `keywordPlan`); smaller in tests, to reach the limit with a small corpus. */
    keywordPostings = KEYWORD_POSTINGS,
    indexOptions: VectorIndexOptions = DEFAULT_VECTOR_INDEX,
    /** Large collections' keyword top-k (see keyword-topk.ts). */
    topKOptions: KeywordTopKOptions = DEFAULT_KEYWORD_TOPK,
  ) {
    this.cache = new VectorCache(cacheOptions)
    this.indexes = new VectorIndexes(db, indexOptions)
    this.reads = new SqliteDocumentReads(db)
    this.keywords = new SqliteKeywords(db, this.cache, keywordPostings, topKOptions)
  }

  /** Stops the store's threads (index builds in flight are abandoned: their files are not recorded). */
  close(): void {
    this.cache.close()
    this.indexes.close()
    this.keywords.close()
  }

  /**
   * A vec0 table per embedding width, partitioned by collection so KNN stays exact and scoped.
   * Its vectors are stored in blobs of VEC_CHUNK_ROWS vectors (sqlite-vec's default is 1,024): an
   * insert walks its blob's overflow pages to the row's place, so smaller blobs make inserts cheaper
   * (a fifth less CPU for an ingest) and a small collection's first blob smaller.
   */
  private ensureVecTable(dimensions: number): string {
    const table = vecTable(dimensions)
    if (this.vecTables.has(dimensions)) return table
    this.db.run(
      `CREATE VIRTUAL TABLE IF NOT EXISTS ${table} USING vec0(collection_id integer partition key, embedding float[${dimensions}] distance_metric=cosine, chunk_size=${VEC_CHUNK_ROWS})`,
    )
    this.db.run(`CREATE TRIGGER IF NOT EXISTS ${table}_cleanup AFTER DELETE ON rag_chunks BEGIN DELETE FROM ${table} WHERE rowid = old.id; END`)
    this.vecTables.add(dimensions)
    return table
  }

  queryTerms(collection: CollectionRow, text: string): QueryTerms {
    return this.keywords.queryTerms(collection, text)
  }

  /** Keyword candidates, best BM25 first (see SqliteKeywords.keywordCandidates). */
  keywordCandidates(collection: CollectionRow, query: QueryTerms, k: number): { chunkId: number; bm25: number }[]
  keywordCandidates(collection: CollectionRow, query: QueryTerms, k: number, distinct?: { dropped: number }): MaybePromise<{ chunkId: number; bm25: number }[]>
  keywordCandidates(collection: CollectionRow, query: QueryTerms, k: number, distinct?: { dropped: number }): MaybePromise<{ chunkId: number; bm25: number }[]> {
    return this.keywords.keywordCandidates(collection, query, k, distinct)
  }

  termHoldings(query: QueryTerms, chunkIds: number[], terms: QueryTerm[]): Map<number, number[]> {
    return this.keywords.termHoldings(query, chunkIds, terms)
  }

  /** Chunks matching an FTS5 query, best BM25 first, from the collection's own index. */
  keywordMatches(collection: CollectionRow, ftsQuery: string, k: number): { chunkId: number; bm25: number }[] {
    return this.keywords.keywordMatches(collection, ftsQuery, k)
  }

  findCollection(userId: string, name: string): CollectionRow | null {
    return this.db.query<CollectionRow, [string, string]>('SELECT * FROM rag_collections WHERE user_id = ? AND name = ?').get(userId, name)
  }

  createCollection(userId: string, name: string, embedder: string, dimensions: number): CollectionRow {
    this.ensureVecTable(dimensions)
    this.db.run('INSERT INTO rag_collections (public_id, user_id, name, embedder, dimensions, created_at) VALUES (?, ?, ?, ?, ?, ?)', [
      crypto.randomUUID(),
      userId,
      name,
      embedder,
      dimensions,
      new Date().toISOString(),
    ])
    const collection = this.findCollection(userId, name)!
    // SQLite may reuse a deleted collection's id: its indexes start empty whatever was there.
    this.keywords.dropFts(collection.id)
    this.indexes.drop(collection.id)
    this.keywords.ensureFts(collection.id)
    return collection
  }

  listCollections(userId: string): CollectionSummary[] {
    return this.db
      .query<CollectionSummary, [string]>(
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
      this.keywords.dropFts(collection.id)
      this.indexes.drop(collection.id)
      this.db.run('DELETE FROM rag_collections WHERE id = ?', [collection.id])
    }).immediate()
    this.cache.invalidate(collection.id)
    this.keywords.chunkCounts.delete(collection.id)
    this.keywords.frequencies.delete(collection.id)
    this.keywords.staleFrequencies.delete(collection.id)
  }

  deleteDocument(collection: CollectionRow, docId: string): boolean {
    this.ensureVecTable(collection.dimensions)
    const removed: number[] = []
    const deleted = this.db.transaction(() => {
      removed.push(...this.chunkIdsOf(collection.id, docId))
      this.keywords.unindexDocument(collection.id, docId)
      this.indexes.logChanges(collection.id, removed, [])
      return this.db.run('DELETE FROM rag_documents WHERE collection_id = ? AND doc_id = ?', [collection.id, docId]).changes > 0
    }).immediate()
    this.cache.update(collection.id, removed, [])
    this.keywords.topk.written(collection.id, removed, 0)
    this.keywords.forgetFrequencies(collection.id)
    this.keywords.chunkCounts.delete(collection.id)
    this.indexes.written(collection, removed, [], () => this.keywords.chunkCount(collection.id))
    return deleted
  }

  private chunkIdsOf(collectionId: number, docId: string): number[] {
    return this.db
      .query<{ id: number }, [number, string]>('SELECT c.id FROM rag_chunks c JOIN rag_documents d ON d.id = c.document_id WHERE d.collection_id = ? AND d.doc_id = ?')
      .all(collectionId, docId)
      .map((row) => row.id)
  }

  /** Writes one document (replacing any earlier one with its id) in one transaction. */
  writeDocument(collection: CollectionRow, document: StoredDocument): void {
    this.writeDocuments(collection, [document])
  }

  /**
   * Writes a batch of documents, each replacing any earlier one with its id, in ONE transaction:
   * a crash leaves all of the batch or none of it, never half a document, and FTS5 flushes one
   * segment per batch instead of one per document. The in-memory vectors follow once committed.
   */
  writeDocuments(collection: CollectionRow, documents: StoredDocument[], describe?: DescribeHook): void {
    const table = this.ensureVecTable(collection.dimensions)
    const fts = this.keywords.ensureFts(collection.id)
    const removed: number[] = []
    const added: { id: number; vector: Float32Array }[] = []
    const now = new Date().toISOString()
    const existing = this.db.query<{ id: number }, [number, string]>('SELECT id FROM rag_documents WHERE collection_id = ? AND doc_id = ?')
    const insertDocument = this.db.query<never, [number, string, string, string, string]>(
      'INSERT INTO rag_documents (collection_id, doc_id, metadata, content_hash, created_at) VALUES (?, ?, ?, ?, ?)',
    )
    const insertChunk = this.db.query<never, [number, number, number, string]>('INSERT INTO rag_chunks (document_id, collection_id, position, content) VALUES (?, ?, ?, ?)')
    const insertVector = this.db.query<never, [number, number, Float32Array]>(`INSERT INTO ${table} (rowid, collection_id, embedding) VALUES (?, ?, ?)`)
    const insertText = this.db.query<never, [number, string]>(`INSERT INTO ${fts} (rowid, content) VALUES (?, ?)`)
    const insertRow = this.db.query<never, [number, number, Float32Array]>('INSERT INTO rag_vector_rows (chunk_id, collection_id, embedding) VALUES (?, ?, ?)')
    const insertInfo = this.db.query<never, [number, string, string, number, string, string | null, string, string | null]>(
      'INSERT INTO rag_document_info (document_id, title, type, bytes, text, source, content_hash, chunk_pages) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    )
    this.db.transaction(() => {
      for (const document of documents) {
        if (existing.get(collection.id, document.docId)) {
          removed.push(...this.chunkIdsOf(collection.id, document.docId))
          this.keywords.unindexDocument(collection.id, document.docId)
          this.db.run('DELETE FROM rag_documents WHERE collection_id = ? AND doc_id = ?', [collection.id, document.docId])
        }
        const hash = createHash('sha256').update(document.content).digest('hex')
        const documentRow = Number(insertDocument.run(collection.id, document.docId, JSON.stringify(document.metadata), hash, now).lastInsertRowid)
        document.chunks.forEach((chunk, position) => {
          const chunkRow = Number(insertChunk.run(documentRow, collection.id, position, chunk).lastInsertRowid)
          insertVector.run(chunkRow, collection.id, document.vectors[position]!)
          insertRow.run(chunkRow, collection.id, document.vectors[position]!)
          insertText.run(chunkRow, chunk)
          added.push({ id: chunkRow, vector: document.vectors[position]! })
        })
        // Rows that describe the document (the knowledge base's) commit with it or not at all.
        const info = describe?.(document)
        if (info) insertInfo.run(documentRow, info.title, info.type, info.bytes, info.text, info.source, info.contentHash, info.chunkPages)
      }
      // What the collection's vector index does not hold yet, committed with the rows or not at all.
      this.indexes.logChanges(
        collection.id,
        removed,
        added.map((row) => row.id),
      )
      // IMMEDIATE: the write lock is taken (waiting out busy_timeout) before the first read. A deferred
      // transaction that reads first fails with SQLITE_BUSY at its first write, without waiting, when
      // another connection (the analytics writer thread) committed in between.
    }).immediate()
    this.cache.update(collection.id, removed, added)
    this.keywords.topk.written(collection.id, removed, added.length)
    this.keywords.forgetFrequencies(collection.id)
    this.keywords.chunkCounts.delete(collection.id)
    this.indexes.written(collection, removed, added, () => this.keywords.chunkCount(collection.id))
  }

  /**
   * Nearest chunks by cosine distance. A collection with an approximate index (see vector-index.ts):
   * its int8 columns in memory for a sparse query, or for any while the index is not ready (see
   * VectorCache.columns), else the index's walk; both rescore their candidates exactly. Others
   * exactly: sqlite-vec scans the collection's partition, or, from 10,000 chunks, the in-memory copy
   * of the same vectors does (see VectorCache).
   */
  nearest(collection: CollectionRow, vector: Float32Array, k: number, distinct?: { dropped: number }): { chunkId: number; distance: number | null }[] {
    const vectorsOf = (ids: number[]) => this.storedVectors(collection.id, ids)
    // A large collection: its int8 columns for a sparse query (cheaper than the walk, and nearly
    // exact), the index's walk for a dense one; the columns too while the index is not ready.
    const columns = this.indexes.indexed(collection.id) && this.indexes.serving ? this.columns(collection) : null
    if (columns && (isSparse(vector) || this.indexes.status(collection.id) !== 'ready')) return columnsNearest(columns, vector, k, vectorsOf, distinct)
    const indexed = this.indexes.nearest(collection.id, vector, k, vectorsOf, distinct)
    if (indexed) return indexed
    // The index cannot serve it now (its pending vectors were evicted): the columns still can.
    if (columns) return columnsNearest(columns, vector, k, vectorsOf, distinct)
    const table = this.ensureVecTable(collection.dimensions)
    const matrix = this.cache.matrix(
      collection.id,
      () => (this.db.query('SELECT count(*) AS n FROM rag_chunks WHERE collection_id = ?').get(collection.id) as { n: number }).n,
      collection.dimensions,
      () => freedAfterCopy(this.db.query<{ id: number; bytes: Uint8Array }, [number]>(`SELECT rowid AS id, embedding AS bytes FROM ${table} WHERE collection_id = ?`).iterate(collection.id)),
    )
    if (matrix) return scanNearest(matrix, vector, k, distinct)
    return this.db
      .query<{ rowid: number; distance: number | null }, [Float32Array, number, number]>(
        `SELECT rowid, distance FROM ${table} WHERE embedding MATCH ? AND k = ? AND collection_id = ? ORDER BY distance`,
      )
      .all(vector, Math.min(k, 4096), collection.id)
      .map((row) => ({ chunkId: row.rowid, distance: row.distance }))
  }

  /**
   * A large collection's columns-only matrix (see VectorCache.columns), loaded from rag_vector_rows in
   * the background on its first search; null until it is, or when it does not fit the budget.
   */
  private columns(collection: CollectionRow): Matrix | null {
    const page = this.db.query<{ id: number; bytes: Uint8Array }, [number, number, number]>(
      'SELECT chunk_id AS id, embedding AS bytes FROM rag_vector_rows WHERE chunk_id > ? AND collection_id = ? ORDER BY chunk_id LIMIT ?',
    )
    return this.cache.columns(
      collection.id,
      () => this.keywords.chunkCount(collection.id),
      collection.dimensions,
      (after, limit) => page.all(after, collection.id, limit),
      // Sparse queries no longer walk the index file: the pages walks read so far are let go.
      () => this.indexes.releasePages(collection.id),
    )
  }

  /** Stored vectors of some chunks (for candidates found only by keyword). */
  vectors(collection: CollectionRow, chunkIds: number[]): Map<number, Float32Array> {
    if (!chunkIds.length) return new Map()
    // vec0 looks rows up slowly (~1 ms each at 100k rows); a cached matrix answers at once.
    const matrix = this.cache.peek(collection.id)
    if (matrix && !matrix.columnsOnly) {
      const found = new Map<number, Float32Array>()
      for (const id of chunkIds) {
        const vector = cachedVector(matrix, id)
        if (vector) found.set(id, vector)
      }
      return found
    }
    return this.storedVectors(collection.id, chunkIds)
  }

  /**
   * Stored vectors of some chunks of a collection, from rag_vector_rows: a point look-up each
   * (microseconds), where vec0 reads the whole blob of 128 vectors a row is in (~0.4 ms).
   */
  private storedVectors(collectionId: number, chunkIds: number[]): Map<number, Float32Array> {
    const found = new Map<number, Float32Array>()
    const row = this.db.query<{ embedding: Uint8Array }, [number, number]>('SELECT embedding FROM rag_vector_rows WHERE chunk_id = ? AND collection_id = ?')
    for (const id of chunkIds) {
      const hit = row.get(id, collectionId)
      if (hit) found.set(id, new Float32Array(hit.embedding.buffer.slice(hit.embedding.byteOffset, hit.embedding.byteOffset + hit.embedding.byteLength)))
    }
    return found
  }

  chunks(chunkIds: number[]): Map<number, ChunkHit> {
    return this.reads.chunks(chunkIds)
  }

  /** The first chunks of a collection, for a query that has nothing to match on. */
  firstChunks(collection: CollectionRow, k: number): number[] {
    return this.reads.firstChunks(collection, k)
  }

  documentHashes(collection: CollectionRow, docIds: string[]): Map<string, { hash: string; metadata: string }> {
    return this.reads.documentHashes(collection, docIds)
  }

  listDocumentHashes(collection: CollectionRow, prefix: string, limit: number, offset: number): DocumentHashes {
    return this.reads.listDocumentHashes(collection, prefix, limit, offset)
  }

  listDocuments(collection: CollectionRow, prefix: string, limit: number, offset: number): DocumentPage {
    return this.reads.listDocuments(collection, prefix, limit, offset)
  }

  getDocument(collection: CollectionRow, docId: string): (DocumentRow & { text: string; chunk_pages: string | null }) | null {
    return this.reads.getDocument(collection, docId)
  }

  chunkPages(collection: CollectionRow, docIds: string[]): Map<string, string> {
    return this.reads.chunkPages(collection, docIds)
  }
}
