import { createHash } from 'node:crypto'
import { AppError } from '../../../../core/errors'
import type { Postgres } from '../../../../db/postgres'
import * as documents from './documents'
import { PostgresAccessStore } from '../../access/store.postgres'
import { collectionRow } from './collection-row'
import { bm25, CAPPED_CANDIDATES, exactPhrases, keywordPlan, queryPhrases, queryWords, RESCORE_POOL } from '../../ranking/scoring'
import type {
  ChunkHit,
  CollectionRow,
  CollectionSummary,
  DescribeHook,
  QueryTerm,
  QueryTerms,
  RagStore,
  StoredDocument,
} from '../../store'
import { distinctHits, type VectorCache, type VectorCacheOptions } from '../../vectors/cache'
import { phraseFrequency } from '../../ranking/phrase'
import { bestFirst, CONFIG, filteredOffsets, KeywordVectorBuilder, keywordText, matchLines, positionCount, printedLexeme, termFrequency, termQuery } from './keywords'
import type { PostgresVectorSearch, VectorPath } from './vectors'
import { MemoryVectors, POSTGRES_VECTOR_CACHE } from './vectors-memory'
import { type PgvectorSetup, PgvectorVectors, preparePgvector } from './vectors-pgvector'

/** How long a read of a collection's version and statistics answers for it (other replicas' writes show after this at most). */
const STATE_TTL_MS = 100
/**
 * Postings ranked to find keyword candidates (see keywordPlan): fewer than FTS5's KEYWORD_POSTINGS,
 * since each match costs PostgreSQL a heap row and its tsvector (about 2 µs, FTS5's well under
 * one), and the searches with the most matches make the slowest tenth. Words past it still score
 * the best candidates; recall@10 on the labelled set: 0.970 with 2,000 or 3,000, SQLite's 0.971
 * with 6,000 (bench ranking; PostgreSQL's documentation set alone 0.890, 0.895, 0.900).
 */
export const POSTGRES_KEYWORD_POSTINGS = 2_000
/**
 * Chunk rows this replica writes before it vacuums and analyzes rag_chunks and rag_vectors (see
 * refreshStatistics), at least, and at least this share of the rows the statistics last counted.
 */
const ANALYZE_MIN_ROWS = 10_000
const ANALYZE_SHARE = 0.1
/** Rows of term counts a collection gathers before they are summed into rag_terms (see foldTerms). */
const TERM_BATCHES_FOLDED = 4
const TOKEN_CACHE_LIMIT = 20_000
const FREQUENCY_CACHE_LIMIT = 50_000

interface CollectionState {
  version: number
  chunks: number
  tokens: number
  read: number
}

export const COLLECTION_COLUMNS = 'id, public_id, user_id, name, embedder, dimensions, created_at, version'

/**
 * The RAG tables in PostgreSQL: vectors searched in the database with pgvector when it is there
 * (vectors-pgvector.ts; see prepareVectors), else float32 vectors as bytea searched from the
 * in-memory vector cache (vectors-memory.ts); keyword search over a tsvector column with a GIN index, ranked by
 * FTS5's BM25 (document frequencies in rag_terms, chunk lengths in tokens, per collection). Every
 * write bumps its collection's version in the same transaction; before a search the replica
 * compares the version it cached with the database's (read at most every 100 ms) and loads
 * what changed, so a document written through another server is found (or gone) within a second.
 */
export class PostgresRagStore implements RagStore {
  /** Where the vectors live and how they are searched: the memory path until prepareVectors() finds pgvector. */
  private vectorPath: VectorPath
  /** What prepareVectors() found (null before it ran: the memory path serves). */
  private vectorSetup: PgvectorSetup | null = null
  /**
   * Chunks per ingest transaction: twice SQLite's, since each costs a commit (a WAL flush) and a
   * few round trips to another process; 10% more throughput on the ingest bench, with the batches
   * still small enough for embedding the next one to overlap writing this one.
   */
  readonly writeBatch = 512
  private readonly states = new Map<number, Promise<CollectionState | null>>()
  private readonly stateAt = new Map<number, number>()
  /** Tokens of each query word, as the index cuts and stems them. */
  private readonly tokens = new Map<string, string[]>()
  /** The tsvectors of written chunks, built here (see KeywordVectorBuilder). */
  private readonly keywordVectors = new KeywordVectorBuilder()
  /** Document frequencies per collection, for the version they were read at. */
  private readonly frequencies = new Map<number, { version: number; known: Map<string, number> }>()

  private readonly keywordPostings: number
  private readonly stateTtlMs: number

  constructor(
    private readonly sql: Postgres,
    options: {
      vectorCache?: VectorCacheOptions
      /** See SqliteRagStore: postings ranked to find keyword candidates. */
      keywordPostings?: number
      /** How long a read of a collection's version answers for it (tests lengthen it to see a replica behind). */
      stateTtlMs?: number
      /** Chunk rows written before rag_chunks is vacuumed and analyzed (see refreshStatistics; tests shorten it). */
      analyzeMinRows?: number
      /** With pgvector: collections of more chunks get an HNSW index (see INDEX_MIN_ROWS; tests lower it). */
      indexMinRows?: number
      /** With pgvector: how long a large collection's writes pause before its index is built (see INDEX_QUIET_MS). */
      indexQuietMs?: number
      /** Rows a search of a collection larger than the memory budget reads at a time (see STREAM_ROWS). */
      streamRows?: number
      /** Where the start-up work (pgvector's set-up) says what it did. */
      log?: (line: string) => void
    } = {},
  ) {
    this.options = options
    this.vectorPath = new MemoryVectors(sql, (id) => this.state(id), options.vectorCache ?? POSTGRES_VECTOR_CACHE, options.streamRows)
    this.keywordPostings = options.keywordPostings ?? POSTGRES_KEYWORD_POSTINGS
    this.stateTtlMs = options.stateTtlMs ?? STATE_TTL_MS
    this.analyzeMinRows = options.analyzeMinRows ?? ANALYZE_MIN_ROWS
  }

  private readonly analyzeMinRows: number
  private readonly options: { indexMinRows?: number; indexQuietMs?: number; log?: (line: string) => void }

  /** The in-memory copies of the vectors (always empty with pgvector: replicas hold no vectors then). */
  get cache(): VectorCache {
    return this.vectorPath.cache
  }

  /** Which path serves vector search: 'pgvector' (in the database) or 'in-memory' (this server's copies). */
  get vectorSearchPath(): PostgresVectorSearch {
    return this.vectorPath.kind
  }

  /** Why this path serves (one sentence), once prepareVectors() ran. */
  get vectorSearchReason(): string {
    return this.vectorSetup?.reason ?? 'pgvector not looked for yet (the server looks at start)'
  }

  /** What /health (connections.vectorSearch) and /system/info (vectorSearch) say of it (see app.ts vectorSearchState). */
  vectorSearch(): { path: PostgresVectorSearch; reason: string } {
    return { path: this.vectorSearchPath, reason: this.vectorSearchReason }
  }

  /** Bytes of vectors this server holds in memory for search (Prometheus: uagent_vector_memory_bytes). */
  vectorMemoryBytes(): number {
    return this.vectorPath.bytesUsed()
  }

  /** The pgvector path, when it serves (tests read its plan counts). */
  get pgvector(): PgvectorVectors | null {
    return this.vectorPath instanceof PgvectorVectors ? this.vectorPath : null
  }

  /**
   * Looks for pgvector (see preparePgvector: the extension created when this role may, the vectors
   * stored before it moved into its column, an HNSW index per dimension count) and serves vector
   * search with it when it is there; otherwise the memory path goes on. Run once at start, before
   * the first request; `memory`: keep the memory path whatever the database has (a database with
   * vectors already in pgvector's column still answers, through pgvector, since only it has them).
   */
  async prepareVectors(): Promise<PgvectorSetup> {
    const setup = await preparePgvector(this.sql, this.options.log)
    this.vectorSetup = setup
    if (setup.kind === 'pgvector') {
      const { indexMinRows, indexQuietMs, log } = this.options
      this.vectorPath = new PgvectorVectors(this.sql, (id) => this.state(id), { indexMinRows, indexQuietMs, log })
    }
    return setup
  }

  /** The collection's version and keyword statistics, read at most every STATE_TTL_MS. */
  private state(collectionId: number): Promise<CollectionState | null> {
    const at = this.stateAt.get(collectionId)
    const cached = this.states.get(collectionId)
    if (cached && at !== undefined && performance.now() - at < this.stateTtlMs) return cached
    const read = (async () => {
      const [row] = await this.sql`SELECT version, chunk_count, token_count FROM rag_collections WHERE id = ${collectionId}`
      return row ? { version: Number(row.version), chunks: Number(row.chunk_count), tokens: Number(row.token_count), read: performance.now() } : null
    })()
    this.states.set(collectionId, read)
    this.stateAt.set(collectionId, performance.now())
    read.catch(() => this.states.delete(collectionId))
    return read
  }

  /** Forgets what this replica knew of a collection after writing it. */
  private forget(collectionId: number): void {
    this.forgets++
    this.pages.delete(collectionId)
    this.states.delete(collectionId)
    this.stateAt.delete(collectionId)
  }

  /** How many times forget() ran: a read begun before a forget may hold what was forgotten. */
  private forgets = 0

  /**
   * A collection's state read along with its row (findCollection): kept as the state() read it
   * saves a search when the one known is older than stateTtlMs, unless something was forgotten
   * while it was read.
   */
  private learnState(collectionId: number, row: Record<string, unknown>, forgetsBefore: number): void {
    if (this.forgets !== forgetsBefore) return
    const now = performance.now()
    // A state read less than stateTtlMs ago still answers, as it would have without this read.
    const at = this.stateAt.get(collectionId)
    if (this.states.has(collectionId) && at !== undefined && now - at < this.stateTtlMs) return
    this.states.set(collectionId, Promise.resolve({ version: Number(row.version), chunks: Number(row.chunk_count), tokens: Number(row.token_count), read: now }))
    this.stateAt.set(collectionId, now)
  }

  /** Called with a collection's id after each of this replica's committed writes to it (deletes included). */
  onWritten: ((collectionId: number) => void) | null = null

  /**
   * Another replica wrote the collection (an event through Redis): its next search reads the
   * version at once instead of trusting the one read less than STATE_TTL_MS ago.
   */
  changedElsewhere(collectionId: number): void {
    this.forget(collectionId)
  }

  /**
   * The access lists over the same pool, whose resolver reads each collection with its version and
   * keyword statistics: they answer the search's state() for STATE_TTL_MS, one round trip fewer
   * (a search resolves its collection first). The service takes it when given none.
   */
  accessStore(): PostgresAccessStore {
    return new PostgresAccessStore(this.sql, {
      reading: () => {
        const forgets = this.forgets
        return (row) => this.learnState(Number(row.id), row, forgets)
      },
    })
  }

  async findCollection(userId: string, name: string): Promise<CollectionRow | null> {
    const { read, forgets } = this.lookUp(userId, name)
    const row = await read
    if (!row) return null
    const collection = collectionRow(row)
    this.learnState(collection.id, row, forgets)
    return collection
  }

  /**
   * The row of a collection, read once for every caller that asks while the read is under way
   * (the users of one account search its collections at the same moments, and each search looks
   * its collection up more than once). Only while nothing was written through this replica since
   * the read began (a lookup after a create or a delete here reads again); a write through
   * another replica is seen as it is by a read begun at the same moment.
   */
  private lookUp(userId: string, name: string): { read: Promise<Record<string, unknown> | undefined>; forgets: number } {
    const key = `${userId}\u0000${name}`
    const running = this.lookups.get(key)
    if (running && running.forgets === this.forgets) return running
    const lookup = {
      forgets: this.forgets,
      read: this.sql
        .unsafe(`SELECT ${COLLECTION_COLUMNS}, chunk_count, token_count FROM rag_collections WHERE user_id = $1 AND name = $2`, [userId, name])
        .then((rows: Record<string, unknown>[]) => rows[0]) as Promise<Record<string, unknown> | undefined>,
    }
    this.lookups.set(key, lookup)
    const done = () => {
      if (this.lookups.get(key) === lookup) this.lookups.delete(key)
    }
    lookup.read.then(done, done)
    return lookup
  }

  private readonly lookups = new Map<string, { read: Promise<Record<string, unknown> | undefined>; forgets: number }>()

  async createCollection(userId: string, name: string, embedder: string, dimensions: number): Promise<CollectionRow> {
    const [row] = await this.sql.unsafe(
      `INSERT INTO rag_collections (public_id, user_id, name, embedder, dimensions, created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLLECTION_COLUMNS}`,
      [crypto.randomUUID(), userId, name, embedder, dimensions, new Date().toISOString()],
    )
    // A lookup under way may have begun before it existed: later ones read again.
    this.forgets++
    return collectionRow(row)
  }

  async listCollections(userId: string): Promise<CollectionSummary[]> {
    const rows = await this.sql.unsafe(
      `SELECT ${COLLECTION_COLUMNS}, chunk_count AS chunks, (SELECT count(*) FROM rag_documents d WHERE d.collection_id = c.id) AS documents
       FROM rag_collections c WHERE c.user_id = $1 ORDER BY c.name`,
      [userId],
    )
    return rows.map((row: Record<string, unknown>) => ({ ...collectionRow(row), documents: Number(row.documents), chunks: Number(row.chunks) }))
  }

  async deleteCollection(collection: CollectionRow): Promise<void> {
    // Its documents, chunks, info rows and term counts go by cascade.
    await this.sql`DELETE FROM rag_collections WHERE id = ${collection.id}`
    this.dropCached(collection.id)
  }

  /** Every collection of a user (a deleted account's). */
  async deleteAllOf(userId: string): Promise<void> {
    const rows = await this.sql`DELETE FROM rag_collections WHERE user_id = ${userId} RETURNING id`
    for (const row of rows) this.dropCached(Number(row.id))
  }

  private dropCached(collectionId: number): void {
    this.vectorPath.drop(collectionId)
    this.frequencies.delete(collectionId)
    this.forget(collectionId)
    this.onWritten?.(collectionId)
  }

  async deleteDocument(collection: CollectionRow, docId: string): Promise<boolean> {
    let removed: number[] = []
    const version = await this.sql.begin(async (tx) => {
      const [locked] = await tx`SELECT version FROM rag_collections WHERE id = ${collection.id} FOR UPDATE`
      if (!locked) return null
      const old = await this.removeDocuments(tx, collection.id, [docId])
      if (!old.documents) return null
      removed = old.chunks
      await this.foldTerms(tx, collection.id)
      const [row] = await tx`UPDATE rag_collections SET version = version + 1, chunk_count = chunk_count - ${old.chunks.length}, token_count = token_count - ${old.tokens}
        WHERE id = ${collection.id} RETURNING version`
      return Number(row.version)
    })
    if (version === null) return false
    this.followWrite(collection.id, version, removed, [])
    return true
  }

  /**
   * Removes documents (by id) of a collection inside a write transaction, taking their chunks'
   * terms out of the collection's document frequencies first: what went.
   */
  private async removeDocuments(tx: Postgres, collectionId: number, docIds: string[]): Promise<{ documents: number; chunks: number[]; tokens: number }> {
    const rows = await tx`SELECT d.id AS document, c.id AS chunk, c.tokens FROM rag_documents d LEFT JOIN rag_chunks c ON c.document_id = d.id
      WHERE d.collection_id = ${collectionId} AND d.doc_id = ANY(${docIds}::text[])`
    if (!rows.length) return { documents: 0, chunks: [], tokens: 0 }
    const chunks = rows.filter((row: { chunk: number | null }) => row.chunk !== null).map((row: { chunk: number }) => Number(row.chunk))
    const tokens = rows.reduce((sum: number, row: { tokens: number | null }) => sum + Number(row.tokens ?? 0), 0)
    if (chunks.length) {
      await tx`INSERT INTO rag_term_batches (collection_id, lexemes, counts)
        SELECT ${collectionId}, array_agg(lexeme ORDER BY lexeme), array_agg(-n ORDER BY lexeme)
        FROM (SELECT l AS lexeme, count(*)::int AS n FROM rag_chunks c CROSS JOIN LATERAL unnest(tsvector_to_array(c.tsv)) l WHERE c.id = ANY(${chunks}::int[]) GROUP BY l) g
        HAVING count(*) > 0`
    }
    const documents = [...new Set(rows.map((row: { document: number }) => Number(row.document)))]
    await tx`DELETE FROM rag_documents WHERE id = ANY(${documents}::int[])`
    return { documents: documents.length, chunks, tokens }
  }

  /**
   * Writes a batch of documents in ONE transaction (a crash leaves all of it or none), each
   * replacing any earlier one with its id, with their info rows; the collection's version, chunk
   * and token counts and term frequencies change with them. The collection's row is locked first:
   * writes to one collection take turns, so its statistics stay exact.
   */
  async writeDocuments(collection: CollectionRow, documents: StoredDocument[], describe?: DescribeHook, more = false): Promise<void> {
    const path = this.vectorPath
    path.writeStarted?.(collection.id)
    try {
      await this.writeChunks(path, collection, documents, describe, more)
    } finally {
      path.writeEnded?.(collection.id)
    }
  }

  private async writeChunks(path: VectorPath, collection: CollectionRow, documents: StoredDocument[], describe: DescribeHook | undefined, more: boolean): Promise<void> {
    // A later document with the same id replaces an earlier one of the batch, as it would written one by one.
    const latest = [...new Map(documents.map((document) => [document.docId, document])).values()]
    const now = new Date().toISOString()
    const infos = latest.map((document) => describe?.(document) ?? null)
    const keyword = latest.map((document) => document.chunks.map(keywordText))
    const tsvectors = await this.keywordVectors.keywordVectors(this.sql, keyword.flat())
    let removed: number[] = []
    const added: { id: number; vector: Float32Array }[] = []
    const pgvector = path.kind === 'pgvector'
    const version = await this.sql.begin(async (tx) => {
      const [locked] = await tx`SELECT version FROM rag_collections WHERE id = ${collection.id} FOR UPDATE`
      if (!locked) throw new AppError('CONFLICT', `Collection ${collection.name} was deleted while this ingest was running; nothing more was written`)
      const old = await this.removeDocuments(
        tx,
        collection.id,
        latest.map((document) => document.docId),
      )
      removed = old.chunks
      const rows = await tx`INSERT INTO rag_documents (collection_id, doc_id, metadata, content_hash, created_at)
        SELECT ${collection.id}, doc_id, metadata, content_hash, ${now}
        FROM unnest(${latest.map((d) => d.docId)}::text[], ${latest.map((d) => JSON.stringify(d.metadata))}::text[], ${latest.map((d) => createHash('sha256').update(d.content).digest('hex'))}::text[])
          AS x(doc_id, metadata, content_hash)
        RETURNING id, doc_id`
      const documentRow = new Map<string, number>(rows.map((row: { id: number; doc_id: string }) => [row.doc_id, Number(row.id)]))
      const owners: number[] = []
      const positions: number[] = []
      const contents: string[] = []
      const embeddings: (Uint8Array | string)[] = []
      const tokens: number[] = []
      const literals: string[] = []
      latest.forEach((document, i) => {
        document.chunks.forEach((chunk, position) => {
          owners.push(documentRow.get(document.docId)!)
          positions.push(position)
          contents.push(chunk)
          embeddings.push(path.insertValue(document.vectors[position]!))
          literals.push(tsvectors.literals[literals.length]!)
          tokens.push(tsvectors.tokens[tokens.length]!)
        })
      })
      let addedTokens = 0
      if (owners.length) {
        // The chunks with their tsvectors (made in keywordVectors), their vectors and this write's row of term counts: one statement.
        // The tsvectors (letters, digits, quotes, colons, commas, spaces: never a line break) go as lines of one text, cheaper to send
        // than an array; one empty line is no line at all to string_to_array, hence the coalesce.
        const { held } = tsvectors
        const chunkRows = await tx`WITH input AS (
            SELECT * FROM unnest(${owners}::int[], ${positions}::int[], ${contents}::text[], ${pgvector ? tx`${embeddings}::text[]` : tx`${embeddings}::bytea[]`}, ${tokens}::int[], string_to_array(${literals.join('\n')}, E'\n'))
              AS x(document_id, position, content, embedding, tokens, tsv)
          ), added AS (
            INSERT INTO rag_chunks (document_id, collection_id, position, content, tokens, tsv)
            SELECT document_id, ${collection.id}, position, content, tokens, coalesce(tsv, '')::tsvector FROM input
            RETURNING id, document_id, position
          ), vectors AS (
            ${pgvector ? tx`INSERT INTO rag_vectors (chunk_id, collection_id, vec) SELECT a.id, ${collection.id}, i.embedding::vector` : tx`INSERT INTO rag_vectors (chunk_id, collection_id, embedding) SELECT a.id, ${collection.id}, i.embedding`}
            FROM added a JOIN input i ON i.document_id = a.document_id AND i.position = a.position
          ), terms AS (
            INSERT INTO rag_term_batches (collection_id, lexemes, counts)
            SELECT ${collection.id}, ${[...held.keys()]}::text[], ${[...held.values()]}::int[] WHERE ${held.size} > 0
          )
          SELECT id, document_id, position FROM added`
        const vectorOf = new Map(latest.map((document) => [documentRow.get(document.docId)!, document.vectors]))
        for (const row of chunkRows) added.push({ id: Number(row.id), vector: vectorOf.get(Number(row.document_id))![Number(row.position)]! })
        addedTokens = tokens.reduce((sum, n) => sum + n, 0)
      }
      const described = latest.flatMap((document, i) => (infos[i] ? [{ row: documentRow.get(document.docId)!, info: infos[i]! }] : []))
      if (described.length) {
        const pick = <T>(get: (info: (typeof described)[number]['info']) => T) => described.map((d) => get(d.info))
        await tx`INSERT INTO rag_document_info (document_id, title, type, bytes, text, source, content_hash, chunk_pages)
          SELECT * FROM unnest(${described.map((d) => d.row)}::int[], ${pick((i) => i.title)}::text[], ${pick((i) => i.type)}::text[], ${pick((i) => i.bytes)}::bigint[],
            ${pick((i) => i.text)}::text[], ${pick((i) => i.source)}::text[], ${pick((i) => i.contentHash)}::text[], ${pick((i) => i.chunkPages)}::text[])`
      }
      if (!more) await this.foldTerms(tx, collection.id)
      const [row] = await tx`UPDATE rag_collections SET version = version + 1,
          chunk_count = chunk_count - ${removed.length} + ${added.length}, token_count = token_count - ${old.tokens} + ${addedTokens}
        WHERE id = ${collection.id} RETURNING version`
      return Number(row.version)
    })
    this.followWrite(collection.id, version, removed, added)
    this.written += added.length
    this.unmerged += added.length
    if (!more) {
      this.mergeIndex()
      this.refreshStatistics()
    }
  }

  /** Chunks this store wrote whose keyword index entries it has not merged yet, and its merges, one after another. */
  private unmerged = 0
  private merged: Promise<void> = Promise.resolve()

  /**
   * New keyword index entries go to the GIN index's pending list (fast update, up to 4 MB:
   * migration 200), cheap to append to; merging them into the index costs about the same for a
   * list of 4 MB as for one of 256 kB (PostgreSQL's default, which merged every few dozen chunks).
   * So they are merged once per ingest, right after its last write committed, in the background:
   * the entries waiting are part of the index (searches find them, a crash keeps them), a search
   * meanwhile reads them from the list; the next ingest's writes go on while the merge runs.
   */
  private mergeIndex(): void {
    if (!this.unmerged) return
    this.unmerged = 0
    this.merged = this.merged
      .then(async () => {
        if (await this.mergesIndex()) await this.sql`SELECT gin_clean_pending_list('rag_chunks_tsv'::regclass)`
      })
      .catch(() => {})
  }

  /** Resolves once the index merges and statistics this store started after its writes are done (tests wait for it). */
  async settled(): Promise<void> {
    await this.merged
    await this.analyzing
  }

  /** Chunk rows this replica wrote since it last vacuumed rag_chunks, and the rows counted then (null: not read yet). */
  private written = 0
  private analyzedRows: number | null = null
  private analyzing: Promise<void> | null = null

  /**
   * After an ingest wrote many chunks, what autovacuum would do to the chunk and vector tables
   * within a minute or so (while searches run) is done at once, in the background (the ingest is
   * already answered): VACUUM (ANALYZE). The planner's statistics then count the new rows: until
   * they did, the planner intersected the keyword index's matches with every row of the collection
   * from its index (4 ms at 100,000 chunks, every search) instead of filtering the matches; and the
   * rows are marked visible to all, so later vacuums skip them.
   */
  private refreshStatistics(): void {
    if (this.analyzing || this.written < this.analyzeMinRows) return
    this.analyzing = (async () => {
      if (this.analyzedRows === null) this.analyzedRows = await this.chunkRowsCounted()
      if (this.written < Math.max(this.analyzeMinRows, this.analyzedRows * ANALYZE_SHARE)) return
      this.written = 0
      await this.sql`VACUUM (ANALYZE) rag_chunks, rag_vectors`
      this.analyzedRows = await this.chunkRowsCounted()
    })()
      .catch(() => {})
      .finally(() => (this.analyzing = null))
  }

  /** The rows of rag_chunks as its statistics count them (0 before the first ANALYZE). */
  private async chunkRowsCounted(): Promise<number> {
    const [row] = await this.sql`SELECT greatest(reltuples, 0)::float8 AS n FROM pg_class WHERE oid = 'rag_chunks'::regclass`
    return Number(row?.n ?? 0)
  }

  /**
   * Whether this server's role may merge the keyword index's pending entries (it owns the index,
   * as the role that migrated the database does). A role that may not leaves them to autovacuum
   * (searches meanwhile read up to 4 MB more).
   */
  private mergesIndex(): Promise<boolean> {
    this.merging ??= (async () => {
      const [row] = await this.sql`SELECT pg_has_role(relowner, 'USAGE') AS own FROM pg_class WHERE oid = 'rag_chunks_tsv'::regclass`
      return Boolean(row?.own)
    })()
    this.merging.catch(() => (this.merging = null))
    return this.merging
  }

  private merging: Promise<boolean> | null = null


  /**
   * Every write adds one row of term counts (rag_term_batches: its chunks' lexemes and how many
   * of them hold each; negative for chunks removed), far cheaper than updating a row per lexeme.
   * Once a collection has TERM_BATCHES_FOLDED of them, they are summed into rag_terms, in the
   * write transaction that holds the collection's lock. A document frequency is rag_terms' plus
   * the rows not folded yet (see queryTerms).
   */
  private async foldTerms(tx: Postgres, collectionId: number): Promise<void> {
    const [pending] = await tx`SELECT count(*)::int AS n FROM rag_term_batches WHERE collection_id = ${collectionId}`
    if (Number(pending.n) < TERM_BATCHES_FOLDED) return
    await tx`WITH folded AS (DELETE FROM rag_term_batches WHERE collection_id = ${collectionId} RETURNING lexemes, counts),
        sums AS (SELECT b.lexeme, sum(b.n)::int AS n FROM folded CROSS JOIN LATERAL unnest(folded.lexemes, folded.counts) AS b(lexeme, n) GROUP BY b.lexeme)
      INSERT INTO rag_terms (collection_id, lexeme, df) SELECT ${collectionId}, lexeme, n FROM sums WHERE n <> 0 ORDER BY lexeme
      ON CONFLICT (collection_id, lexeme) DO UPDATE SET df = rag_terms.df + excluded.df`
  }

  /** After this replica's own committed write: the vector path follows it (the memory path row by row); what was known of the collection is forgotten. */
  private followWrite(collectionId: number, version: number, removed: number[], added: { id: number; vector: Float32Array }[]): void {
    this.vectorPath.followWrite(collectionId, version, removed, added)
    this.forget(collectionId)
    this.onWritten?.(collectionId)
  }

  nearest(collection: CollectionRow, vector: Float32Array, k: number, distinct?: { dropped: number }): Promise<{ chunkId: number; distance: number | null }[]> {
    return this.vectorPath.nearest(collection, vector, k, distinct)
  }

  vectors(collection: CollectionRow, chunkIds: number[]): Promise<Map<number, Float32Array>> {
    return this.vectorPath.vectors(collection, chunkIds)
  }

  async chunks(chunkIds: number[], query?: QueryTerms): Promise<Map<number, ChunkHit>> {
    if (!chunkIds.length) return new Map()
    // The rows termHoldings read with the candidates' offsets (those of the vector candidates, read
    // while the keyword query ran) are not read again: only the others (the keyword candidates).
    const read = query?.rows
    const missing = read ? chunkIds.filter((id) => !read.asked.has(id)) : chunkIds
    const rows = missing.length
      ? await this.sql`SELECT c.id, c.content, c.position, d.doc_id, d.metadata FROM rag_chunks c JOIN rag_documents d ON d.id = c.document_id
      WHERE c.id = ANY(${missing}::int[])`
      : []
    const fresh = new Map<number, ChunkHit>(rows.map((row: Record<string, unknown>) => [Number(row.id), chunkHit(row)]))
    if (!read) return fresh
    const found = new Map<number, ChunkHit>()
    for (const id of chunkIds) {
      const hit = read.asked.has(id) ? read.found.get(id) : fresh.get(id)
      if (hit) found.set(id, hit)
    }
    return found
  }

  /** What a search's read said of its collection: gone once any read found it gone. */
  private sawCollection(query: QueryTerms, collectionId: number, there: boolean): void {
    const before = query.present?.collectionId === collectionId ? query.present.there : true
    query.present = { collectionId, there: before && there }
  }

  /**
   * Whether a search's collection is still there after its queries: its keyword query and the read
   * of its candidates' rows read that too (in the same statements, see keywordCandidates and
   * termHoldings); a search that made neither asks. The service asks this instead of looking the
   * collection up again before the queries.
   */
  async stillThere(collection: CollectionRow, query: QueryTerms): Promise<boolean> {
    if (query.present?.collectionId === collection.id) return query.present.there
    const [row] = await this.sql`SELECT 1 AS there FROM rag_collections WHERE id = ${collection.id}`
    return row !== undefined
  }

  async firstChunks(collection: CollectionRow, k: number): Promise<number[]> {
    const rows = await this.sql`SELECT id FROM rag_chunks WHERE collection_id = ${collection.id} ORDER BY id LIMIT ${k}`
    return rows.map((row: { id: number }) => Number(row.id))
  }

  /** The tokens the index makes of each word, in order (cached: the same word always gives the same tokens). */
  private async tokensOf(words: string[], frequencies: { collectionId: number; known: Map<string, number> }): Promise<string[][]> {
    const unknown = [...new Set(words.filter((word) => !this.tokens.has(word)))]
    if (unknown.length) {
      // With each token's document frequency in the collection: one round trip for both.
      const rows = await this.sql`SELECT w.i::int AS i, l.lexeme, l.positions, t.df, p.n AS pending FROM unnest(${unknown.map(keywordText)}::text[]) WITH ORDINALITY AS w(word, i)
        CROSS JOIN LATERAL unnest(to_tsvector(${CONFIG}::regconfig, w.word)) l
        LEFT JOIN rag_terms t ON t.collection_id = ${frequencies.collectionId} AND t.lexeme = l.lexeme
        LEFT JOIN LATERAL (SELECT sum(b.counts[array_position(b.lexemes, l.lexeme)])::int AS n FROM rag_term_batches b WHERE b.collection_id = ${frequencies.collectionId}) p ON true`
      const found = unknown.map(() => [] as { token: string; at: number }[])
      for (const row of rows) {
        for (const at of row.positions as number[]) found[Number(row.i) - 1]!.push({ token: row.lexeme, at })
        frequencies.known.set(row.lexeme, Math.max(0, Number(row.df ?? 0) + Number(row.pending ?? 0)))
      }
      if (this.tokens.size > TOKEN_CACHE_LIMIT) this.tokens.clear()
      unknown.forEach((word, i) =>
        this.tokens.set(
          word,
          found[i]!.sort((a, b) => a.at - b.at).map((entry) => entry.token),
        ),
      )
    }
    return words.map((word) => this.tokens.get(word)!)
  }

  async queryTerms(collection: CollectionRow, text: string): Promise<QueryTerms> {
    const phrases = queryPhrases(text).map((phrase) => phrase.words.join(' '))
    const exact = exactPhrases(text)
    const words = [...queryWords(text), ...phrases]
    const state = await this.state(collection.id)
    const chunks = state?.chunks ?? 0
    if (!words.length) return { terms: [], chunks, offsets: new Map(), collectionId: collection.id }
    let cached = this.frequencies.get(collection.id)
    if (!cached || cached.version !== state?.version || cached.known.size > FREQUENCY_CACHE_LIMIT) {
      this.frequencies.set(collection.id, (cached = { version: state?.version ?? 0, known: new Map() }))
    }
    const known = cached.known
    const tokens = await this.tokensOf(words, { collectionId: collection.id, known })
    const wanted = [...new Set(tokens.flat().filter((token) => !known.has(token)))]
    if (wanted.length) {
      for (const token of wanted) known.set(token, 0)
      const rows = await this.sql`SELECT w.lexeme, coalesce(t.df, 0) + coalesce(p.n, 0) AS df FROM unnest(${wanted}::text[]) AS w(lexeme)
        LEFT JOIN rag_terms t ON t.collection_id = ${collection.id} AND t.lexeme = w.lexeme
        LEFT JOIN LATERAL (SELECT sum(b.counts[array_position(b.lexemes, w.lexeme)])::int AS n FROM rag_term_batches b WHERE b.collection_id = ${collection.id}) p ON true`
      for (const row of rows) known.set(row.lexeme, Math.max(0, Number(row.df)))
    }
    const terms: QueryTerm[] = []
    for (const [i, own] of tokens.entries()) {
      const word = words[i]!
      // A phrase's own count of chunks (BM25's idf for it); its words' counts only bound it.
      if (own.length > 1) {
        let df = known.get(`"${word}"`)
        if (df === undefined) {
          df = own.some((token) => !known.get(token)) ? 0 : await this.matchCount(collection.id, termQuery(own))
          known.set(`"${word}"`, df)
        }
        terms.push({ word, tokens: own, df, phrase: true, exact: exact.has(word) })
      } else terms.push({ word, tokens: own, df: own.length ? (known.get(own[0]!) ?? 0) : 0, phrase: false })
    }
    return { terms, chunks, offsets: new Map(), collectionId: collection.id }
  }

  private async matchCount(collectionId: number, query: string): Promise<number> {
    const [row] = await this.sql`SELECT count(*)::int AS n FROM rag_chunks WHERE collection_id = ${collectionId} AND tsv @@ ${query}::tsquery`
    return Number(row.n)
  }

  /**
   * Keyword candidates, best BM25 first: the chunks matching the informative terms (see
   * keywordPlan), ranked by BM25 as FTS5 ranks them with those terms (in the database, for plain
   * words: only the best come back), then the best re-scored with every term found in the collection.
   */
  async keywordCandidates(collection: CollectionRow, query: QueryTerms, k: number, distinct?: { dropped: number }): Promise<{ chunkId: number; bm25: number }[]> {
    const { terms } = query
    if (!terms.length) return []
    const plan = keywordPlan(terms, query.chunks, this.keywordPostings)
    if (!plan.query) return []
    const byWord = new Map(terms.map((term) => [term.word, term]))
    const kept = plan.words.map((word) => byWord.get(word)!).filter((term) => term.tokens.length)
    if (!kept.length) return []
    const state = await this.state(collection.id)
    const rowsInIndex = Math.max(state?.chunks ?? query.chunks, 1)
    const averageLength = state && state.chunks ? Math.max(state.tokens / state.chunks, 1) : 1
    const score = (tokens: number, id: number, with_: QueryTerm[]) =>
      bm25(
        with_.map((term) => ({ tf: phraseFrequency(term.tokens, query.offsets.get(id)), df: term.df })),
        tokens,
        averageLength,
        rowsInIndex,
      )
    const tsquery = kept.map((term) => termQuery(term.tokens)).join(' | ')
    // Each match with where the query's tokens occur in it: its tsvector cut down to them (marked
    // with weight A, the marked kept) as text, read here; several times cheaper than unnesting the
    // lexemes and summing BM25 in SQL. Positions of every query token, so that the rescoring and
    // the term holdings below need not read these chunks again.
    const limit = plan.capped ? CAPPED_CANDIDATES : null
    const wanted = [...new Set(terms.flatMap((term) => term.tokens))]
    // With the collection's row, in the same statement: no row at all when it was deleted while the
    // search waited (see stillThere), one whose `matches` is null when nothing matched. The matches
    // come as one text, a line each (`id tokens found`: lexemes are letters and digits, never a line
    // break), not a row each: at a few thousand matches the rows (with the collection's columns on
    // each) cost this thread twice the CPU, on the search's path once the database answered.
    const forgets = this.forgets
    const read = await this.sql`SELECT c.version, c.chunk_count, c.token_count,
        (SELECT string_agg(m.id || ' ' || m.tokens || ' ' || m.found, E'\n') FROM (SELECT id, tokens, ts_filter(setweight(tsv, 'A', ${wanted}::text[]), '{a}')::text AS found FROM rag_chunks
          WHERE collection_id = ${collection.id} AND tsv @@ ${tsquery}::tsquery ${limit === null ? this.sql`` : this.sql`ORDER BY id LIMIT ${limit}`}) m) AS matches
      FROM rag_collections c WHERE c.id = ${collection.id}`
    this.sawCollection(query, collection.id, read.length > 0)
    if (!read.length) return []
    this.learnState(collection.id, read[0], forgets)
    const { ids, lengths, texts } = matchLines((read[0].matches as string | null) ?? '')
    // BM25 of every match from its text (a word's count is its positions; a phrase's, read from
    // its tokens' positions), then the offsets of the best kept: they are what is read again.
    // Scores in arrays, one counts list reused (bm25 reads it in the same order, so the same
    // float results), and only as much of the order as distinctHits reads (see bestFirst).
    const quoted = kept.map((term) => term.tokens.map(printedLexeme))
    const needles = quoted.map((tokens) => (tokens.length === 1 ? `${tokens[0]!}:` : null))
    const counts = kept.map((term) => ({ tf: 0, df: term.df }))
    const scores = new Float64Array(ids.length)
    for (let r = 0; r < ids.length; r++) {
      const text = texts[r]!
      for (let i = 0; i < counts.length; i++) counts[i]!.tf = needles[i] ? positionCount(text, needles[i]!) : termFrequency(text, quoted[i]!)
      scores[r] = bm25(counts, lengths[r]!, averageLength, rowsInIndex)
    }
    const pool = Math.max(k, RESCORE_POOL)
    const ordered = (function* () {
      for (const r of bestFirst(scores, ids, pool)) yield { chunkId: ids[r]!, bm25: scores[r]!, tokens: lengths[r]!, text: texts[r]! }
    })()
    // Twins (one passage copied into several documents) count once (see distinctHits).
    const hits = distinctHits(distinct && this.vectorPath.matrixOf(collection.id), ordered, pool, (hit) => hit.bm25, distinct)
    // Offsets read now are the whole of them for these chunks: replace any partial entry.
    for (const hit of hits) query.offsets.set(hit.chunkId, filteredOffsets(hit.text))
    if (plan.scored.length === plan.words.length || !hits.length) return hits.slice(0, k).map(({ chunkId, bm25 }) => ({ chunkId, bm25 }))
    // The candidates' BM25 with every informative word, as if one query had ranked them all.
    await this.readOffsets(
      query,
      hits.map((hit) => hit.chunkId),
    )
    const scored = plan.scored.map((word) => byWord.get(word)!)
    return hits
      .map((hit) => ({ chunkId: hit.chunkId, bm25: score(hit.tokens, hit.chunkId, scored) }))
      .sort((a, b) => a.bm25 - b.bm25)
      .slice(0, k)
  }

  /** Where the query's tokens occur in chunks not read yet (kept in `query.offsets`; none: an empty map). */
  private async readOffsets(query: QueryTerms, chunkIds: number[]): Promise<void> {
    const missing = chunkIds.filter((id) => !query.offsets.has(id))
    if (!missing.length) return
    const wanted = [...new Set(query.terms.flatMap((term) => term.tokens))]
    for (const id of missing) query.offsets.set(id, new Map())
    if (!wanted.length) return
    const rows = await this.sql`SELECT c.id, l.lexeme, l.positions FROM rag_chunks c CROSS JOIN LATERAL unnest(ts_filter(setweight(c.tsv, 'A', ${wanted}::text[]), '{a}')) l
      WHERE c.id = ANY(${missing}::int[])`
    for (const row of rows) query.offsets.get(Number(row.id))!.set(row.lexeme, row.positions as number[])
  }

  async termHoldings(query: QueryTerms, chunkIds: number[], terms: QueryTerm[]): Promise<Map<number, number[]>> {
    const held = new Map<number, number[]>()
    if (!chunkIds.length || !terms.length) return held
    if (!query.rows) {
      // The search's candidates: their rows (which chunks() answers from next) and the offsets not read yet, in one query.
      const missing = chunkIds.filter((id) => !query.offsets.has(id))
      const wanted = [...new Set(query.terms.flatMap((term) => term.tokens))]
      for (const id of missing) query.offsets.set(id, new Map())
      // With the collection's row, as the keyword query reads it (see stillThere): none when it is gone.
      const collectionId = query.collectionId ?? null
      const collectionRow = collectionId === null ? this.sql`SELECT 1 AS there` : this.sql`SELECT 1 AS there FROM rag_collections WHERE id = ${collectionId}`
      const rows = await this.sql`SELECT r.* FROM (${collectionRow}) col
        LEFT JOIN LATERAL (SELECT c.id, c.content, c.position, d.doc_id, d.metadata,
          CASE WHEN c.id = ANY(${missing}::int[]) THEN ts_filter(setweight(c.tsv, 'A', ${wanted}::text[]), '{a}')::text END AS found
        FROM rag_chunks c JOIN rag_documents d ON d.id = c.document_id WHERE c.id = ANY(${chunkIds}::int[])) r ON true`
      if (collectionId !== null) this.sawCollection(query, collectionId, rows.length > 0)
      query.rows = { asked: new Set(chunkIds), found: new Map() }
      for (const row of rows) {
        if (row.id === null) continue
        const id = Number(row.id)
        query.rows.found.set(id, chunkHit(row))
        if (row.found !== null) query.offsets.set(id, filteredOffsets(row.found as string))
      }
    }
    await this.readOffsets(query, chunkIds)
    for (const chunkId of chunkIds) {
      const own = query.offsets.get(chunkId)
      if (!own?.size) continue
      const found = terms.flatMap((term, i) => (term.tokens.length && phraseFrequency(term.tokens, own) > 0 ? [i] : []))
      if (found.length) held.set(chunkId, found)
    }
    return held
  }

  documentHashes(collection: CollectionRow, docIds: string[]) {
    return documents.documentHashes(this.sql, collection, docIds)
  }

  listDocumentHashes(collection: CollectionRow, prefix: string, limit: number, offset: number) {
    return documents.listDocumentHashes(this.sql, collection, prefix, limit, offset)
  }

  listDocuments(collection: CollectionRow, prefix: string, limit: number, offset: number) {
    return documents.listDocuments(this.sql, collection, prefix, limit, offset)
  }

  getDocument(collection: CollectionRow, docId: string) {
    return documents.getDocument(this.sql, collection, docId)
  }

  /**
   * Where each chunk of the documents came from (their pages), kept per collection version: a
   * search asks for its results' documents every time, and they change only with a write, which
   * bumps the version (the cache of a collection goes with forget()). The rows are read at the
   * caller's version or later, so what is kept is never older than what a caller at that version
   * would read.
   */
  async chunkPages(collection: CollectionRow, docIds: string[]): Promise<Map<string, string>> {
    if (collection.version === undefined) return documents.chunkPages(this.sql, collection, docIds)
    let cached = this.pages.get(collection.id)
    if (!cached || cached.version !== collection.version) {
      if (this.pages.size >= PAGES_CACHED_COLLECTIONS) this.pages.clear()
      this.pages.set(collection.id, (cached = { version: collection.version, pages: new Map() }))
    }
    const known = cached
    const missing = docIds.filter((docId) => !known.pages.has(docId))
    if (missing.length) {
      const forgets = this.forgets
      const read = await documents.chunkPages(this.sql, collection, missing)
      // Kept only if nothing was written meanwhile (and the entry is still this one).
      if (forgets === this.forgets && this.pages.get(collection.id) === known && known.pages.size + missing.length <= PAGES_CACHED_DOCUMENTS) {
        for (const docId of missing) known.pages.set(docId, read.get(docId) ?? null)
      }
      const found = new Map<string, string>()
      for (const docId of docIds) {
        const pages = read.get(docId) ?? known.pages.get(docId)
        if (pages) found.set(docId, pages)
      }
      return found
    }
    const found = new Map<string, string>()
    for (const docId of docIds) {
      const pages = known.pages.get(docId)
      if (pages) found.set(docId, pages)
    }
    return found
  }

  /** The pages of documents by collection, for one version (null: a document without pages). */
  private readonly pages = new Map<number, { version: number; pages: Map<string, string | null> }>()
}

/** Collections whose documents' pages are kept, and documents per collection. */
const PAGES_CACHED_COLLECTIONS = 1000
const PAGES_CACHED_DOCUMENTS = 20_000

function chunkHit(row: Record<string, unknown>): ChunkHit {
  return { chunkId: Number(row.id), docId: row.doc_id as string, content: row.content as string, position: Number(row.position), metadata: JSON.parse(row.metadata as string) }
}
