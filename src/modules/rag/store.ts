import type { MaybePromise } from '../../db/maybe-promise'
import type { VectorCache } from './vectors/cache'

export interface CollectionRow {
  /** The row id: SQLite may give a deleted collection's to a new one, so it never leaves the server. */
  id: number
  /** The stable public id (a UUID): what the API calls a collection's `id`. */
  public_id: string
  user_id: string
  name: string
  embedder: string
  dimensions: number
  created_at: string
  /** Bumped by every write to the collection (PostgreSQL: replicas compare it with what they cached). */
  version?: number
}

export interface ChunkHit {
  chunkId: number
  docId: string
  content: string
  position: number
  metadata: Record<string, unknown>
}

/** A word or phrase of a query: the tokens the keyword index makes of it and how many of the collection's chunks hold it. */
export interface QueryTerm {
  word: string
  tokens: string[]
  df: number
  phrase: boolean
  /** A phrase asked for exactly (quoted, or an identifier); false for an ordinary hyphenated word (see queryPhrases). */
  exact?: boolean
}

export interface QueryTerms {
  terms: QueryTerm[]
  /** Chunks in the collection. */
  chunks: number
  /**
   * Where the query's tokens occur in the chunks read so far (see tokenOffsets): a chunk is run
   * through the tokenizer once per query, whether keyword rescoring or term holdings reads it first.
   */
  offsets: Map<number, Map<string, number[]>>
  /** Chunks read along with their offsets (PostgreSQL, see termHoldings): which were asked for, and those found. */
  rows?: { asked: Set<number>; found: Map<number, ChunkHit> }
  /** The collection the terms were read for (PostgreSQL: its later reads read the collection's row too). */
  collectionId?: number
  /** Whether the collection was there when the search's keyword query or candidates' rows were read (PostgreSQL, in the same statements; see RagStore.stillThere). */
  present?: { collectionId: number; there: boolean }
}

export interface StoredDocument {
  docId: string
  content: string
  metadata: Record<string, unknown>
  chunks: string[]
  vectors: Float32Array[]
}

/** What the documents listing shows about a document (rag_document_info), written with it. */
export interface DocumentInfo {
  title: string
  type: string
  bytes: number
  text: string
  source: string | null
  contentHash: string
  /** JSON `{ pages, chunks }` for paged sources (PDF), else null. */
  chunkPages: string | null
}

/** Runs inside a batch's write transaction, once per document written: its info row, if it has one. */
export type DescribeHook = (document: StoredDocument) => DocumentInfo | null | undefined

/** A document row as the listings read it. */
export interface DocumentRow {
  row: number
  doc_id: string
  metadata: string
  created_at: string
  title: string | null
  type: string | null
  bytes: number | null
  source: string | null
  content_hash: string
  chunks: number
}

export interface DocumentPage {
  total: number
  rows: DocumentRow[]
}

export interface DocumentHashes {
  total: number
  rows: { id: string; source: string | null; contentHash: string }[]
}

export type CollectionSummary = CollectionRow & { documents: number; chunks: number }

/**
 * The RAG tables: collections, documents (with their info rows), chunks, their vectors and the
 * keyword index. SQLite (store.sqlite.ts) answers at once; PostgreSQL (store.postgres.ts) with
 * promises. The keyword statistics are each collection's own: another user's documents never
 * move a score.
 */
export interface RagStore {
  readonly cache: VectorCache
  /** Chunks an ingest writes per transaction with this store (default: the service's WRITE_BATCH). */
  readonly writeBatch?: number
  findCollection(userId: string, name: string): MaybePromise<CollectionRow | null>
  createCollection(userId: string, name: string, embedder: string, dimensions: number): MaybePromise<CollectionRow>
  listCollections(userId: string): MaybePromise<CollectionSummary[]>
  deleteCollection(collection: CollectionRow): MaybePromise<void>
  deleteDocument(collection: CollectionRow, docId: string): MaybePromise<boolean>
  /**
   * Writes a batch of documents (each replacing any earlier one with its id) in one transaction,
   * with their info rows. `more`: another batch of the same ingest follows at once, so index work
   * may be left for after the last one (PostgreSQL merges the keyword index's pending entries
   * once per ingest, and sums its term counts once).
   */
  writeDocuments(collection: CollectionRow, documents: StoredDocument[], describe?: DescribeHook, more?: boolean): MaybePromise<void>
  /** The words and phrases of a query with their tokens and document frequencies in the collection. */
  queryTerms(collection: CollectionRow, text: string): MaybePromise<QueryTerms>
  /**
   * Keyword candidates, best BM25 first (negative: lower is better). With `distinct`, copies of
   * one passage in several documents count once where the store can tell (its vectors in memory;
   * see distinctHits), and `distinct.dropped` counts the copies left out.
   */
  keywordCandidates(collection: CollectionRow, query: QueryTerms, k: number, distinct?: { dropped: number }): MaybePromise<{ chunkId: number; bm25: number }[]>
  /** Which of `terms` (indices into them) each chunk holds. */
  termHoldings(query: QueryTerms, chunkIds: number[], terms: QueryTerm[]): MaybePromise<Map<number, number[]>>
  /** Nearest chunks by cosine distance, exactly; with `distinct`, copies of one passage count once (as in keywordCandidates). */
  nearest(collection: CollectionRow, vector: Float32Array, k: number, distinct?: { dropped: number }): MaybePromise<{ chunkId: number; distance: number | null }[]>
  /** Stored vectors of some chunks. */
  vectors(collection: CollectionRow, chunkIds: number[]): MaybePromise<Map<number, Float32Array>>
  /** Chunks by id (those still there); `query`: the search they are for, whose reads may already hold them. */
  chunks(chunkIds: number[], query?: QueryTerms): MaybePromise<Map<number, ChunkHit>>
  /**
   * Whether the collection is still there once a search's keyword query and candidates' rows were
   * read (`query`: its terms): a store whose queries read the collection along with them
   * (PostgreSQL) tells, without another look-up. Without it, the service looks the collection up
   * again before the search's queries (SQLite: synchronous from there on, so nothing can change in
   * between).
   */
  stillThere?(collection: CollectionRow, query: QueryTerms): MaybePromise<boolean>
  /** The first chunks of a collection, for a query that has nothing to match on. */
  firstChunks(collection: CollectionRow, k: number): MaybePromise<number[]>
  /** Source hash (from the info row) and metadata (JSON) of some documents of a collection. */
  documentHashes(collection: CollectionRow, docIds: string[]): MaybePromise<Map<string, { hash: string; metadata: string }>>
  /** A page of a collection's documents by id, those whose id starts with `prefix`. */
  listDocuments(collection: CollectionRow, prefix: string, limit: number, offset: number): MaybePromise<DocumentPage>
  /** The cheap listing: id, source and hash. */
  listDocumentHashes(collection: CollectionRow, prefix: string, limit: number, offset: number): MaybePromise<DocumentHashes>
  /** One document with its full text (its chunks joined when no text was kept) and chunk pages. */
  getDocument(collection: CollectionRow, docId: string): MaybePromise<(DocumentRow & { text: string; chunk_pages: string | null }) | null>
  /** chunk_pages JSON of the paged documents among `docIds`. */
  chunkPages(collection: CollectionRow, docIds: string[]): MaybePromise<Map<string, string>>
}
