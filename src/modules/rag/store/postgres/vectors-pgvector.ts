import type { Postgres } from '../../../../db/postgres'
import type { CollectionRow } from '../../store'
import { VectorCache } from '../../vectors/cache'
import type { VectorPath } from './vectors'
import type { VersionOf } from './vectors-memory'

/**
 * pgvector's HNSW over halfvec takes up to 4,000 dimensions: a collection of more is searched
 * exactly in the database (its vectors are still in the `vec` column).
 */
export const HNSW_MAX_DIMENSIONS = 4_000

/**
 * A collection gets an HNSW index of its own once it has more chunks than this (and its writes
 * paused, see INDEX_QUIET_MS); smaller ones are searched exactly (every vector of the collection
 * scored in the database, through its rows by collection id), always completely.
 */
export const INDEX_MIN_ROWS = 20_000

/**
 * An index is built once the collection's writes have paused this long: built over rows already
 * there (CREATE INDEX's bulk build, several times faster than adding the same rows one by one to
 * an index), not while an ingest of many more is under way. Meanwhile it is searched exactly.
 */
export const INDEX_QUIET_MS = 3_000

/**
 * hnsw.ef_search: the size of the index scan's candidate list (pgvector's default is 40). On the
 * bench's corpus (bench/rag-scale-corpus.ts, built-in embedder, 30,000 chunks) recall@10 against
 * exact was 0.76 at 100, 0.89 at 200, 0.93 at 400 and 0.97 at 800, for 5, 8, 15 and 46 ms a query.
 */
export const EF_SEARCH = 400
/** Candidates read from the index per one asked for (and 10 more), rescored with the float32 vectors (the index holds halfvec). */
const OVERFETCH = 1.5

/**
 * The statements of an index search: the settings and the query, in one implicit transaction
 * (SET LOCAL ends with it), so one round trip. JIT off: a plan whose cost counts enable_sort's
 * penalty would be compiled first (60 ms, for a 5 ms query). The collection's id is a literal so
 * that the planner matches its partial index; enable_sort off so that it takes the index's order
 * rather than sorting the collection's rows. `literal`: vectorLiteral's output (numbers only).
 */
export function indexSearch(collectionId: number, dimensions: number, literal: string, limit: number, probeLiteral: string | null = null, watermark: number | null = null): string {
  const d = Math.trunc(dimensions)
  const id = Math.trunc(collectionId)
  const columns = (v: string) => `${v}.chunk_id, ${v}.vec <=> '${literal}'::vector AS d${probeLiteral ? `, ${v}.vec <#> '${probeLiteral}'::vector AS p` : ''}`
  const indexed = `SELECT ${columns('s')} FROM (
      SELECT chunk_id, vec FROM rag_vectors WHERE collection_id = ${id}${watermark === null ? '' : ` AND chunk_id <= ${Math.trunc(watermark)}`}
      ORDER BY vec::halfvec(${d}) <=> '${literal}'::halfvec(${d}) LIMIT ${Math.trunc(limit)}) s`
  // The rows written since the index was built (chunk ids past its watermark), read by chunk id
  // through rag_chunks' (collection_id, id) index, every one scored.
  const pending =
    watermark === null
      ? ''
      : `
    UNION ALL (SELECT ${columns('v')} FROM rag_vectors v
      WHERE v.chunk_id = ANY(ARRAY(SELECT c.id FROM rag_chunks c WHERE c.collection_id = ${id} AND c.id > ${Math.trunc(watermark)})) AND v.vec IS NOT NULL
      ORDER BY (v.vec <=> '${literal}'::vector) + 0 LIMIT ${Math.trunc(limit)})`
  return `SET LOCAL hnsw.ef_search = ${Math.max(EF_SEARCH, Math.trunc(limit))}; SET LOCAL enable_sort = off; SET LOCAL jit = off;
    ${pending ? `(${indexed})${pending}` : indexed}`
}

/** An exact search of a collection's vectors (every one scored), as statements like indexSearch's. */
export function exactSearch(collectionId: number, literal: string, limit: number, probeLiteral: string | null = null): string {
  // `(vec <=> q) + 0` is no index's ordering: the rows of the collection, every one scored.
  return `SET LOCAL jit = off;
    SELECT chunk_id, vec <=> '${literal}'::vector AS d${probeLiteral ? `, vec <#> '${probeLiteral}'::vector AS p` : ''} FROM rag_vectors
    WHERE collection_id = ${Math.trunc(collectionId)} AND vec IS NOT NULL ORDER BY (vec <=> '${literal}'::vector) + 0, chunk_id LIMIT ${Math.trunc(limit)}`
}
/** How long what pg_index says of a collection's index answers for it. */
const INDEX_STATE_TTL_MS = 2_000
/** After a failed build, or one left to another server, the next try. */
const RETRY_MS = 30_000
/**
 * PostgreSQL's memory for building one index's graph (the build goes on, much slower, on disk past
 * it): a million 384-dimension halfvecs with their neighbours take about 1.2 GB.
 */
const BUILD_MEMORY = '2GB'

/** Why the server serves from memory, or that it serves with pgvector. */
export interface PgvectorSetup {
  kind: 'pgvector' | 'in-memory'
  /** One sentence: what the server found (for the start-up line, /health and /system/info). */
  reason: string
  /** pgvector's version, when it serves. */
  version?: string
}

/** The advisory lock the pgvector set-up and index builds take (one server at a time on a database). */
const SETUP_LOCK = 7_054_001

/** Rows of existing float32 vectors moved into the vec column per statement (see convertVectors). */
const CONVERT_BATCH = 2_000

/**
 * A vector as pgvector's text input: 9 significant digits give back the float32 exactly (a
 * plain `String()` would write the float64 of it, twice as long).
 */
export function vectorLiteral(vector: Float32Array): string {
  let text = '['
  for (let i = 0; i < vector.length; i++) {
    const value = vector[i]!
    text += (i ? ',' : '') + (value === 0 ? '0' : value.toPrecision(9))
  }
  return `${text}]`
}

/**
 * Whether this database serves vectors with pgvector, and everything that needs: the extension
 * (created when this role may: a superuser, or a trusted extension and a role allowed to create
 * it in the database; else a DBA creates it once), rag_vectors' `vec` column, the float32 vectors
 * of the memory path moved into it (a database that gained the extension later), and one HNSW
 * index per dimension count. Without the extension, or without the rights to change the table:
 * the memory path, and the reason.
 */
export async function preparePgvector(sql: Postgres, log: (line: string) => void = () => {}): Promise<PgvectorSetup> {
  const version = async () => {
    const [row] = await sql`SELECT extversion FROM pg_extension WHERE extname = 'vector'`
    return row ? String(row.extversion) : null
  }
  let installed = await version()
  if (!installed) {
    const [available] = await sql`SELECT default_version FROM pg_available_extensions WHERE name = 'vector'`
    if (!available) return { kind: 'in-memory', reason: 'the vector extension (pgvector) is not installed on the PostgreSQL server' }
    try {
      await sql.begin(async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(${SETUP_LOCK})`
        await tx.unsafe('CREATE EXTENSION IF NOT EXISTS vector')
      })
    } catch (error) {
      const message = (error as Error).message.replace(/\s+/g, ' ').trim()
      return { kind: 'in-memory', reason: `pgvector ${available.default_version} is installed but this role may not create the extension (${message}); a superuser can, once: CREATE EXTENSION vector` }
    }
    installed = await version()
    if (!installed) return { kind: 'in-memory', reason: 'the vector extension could not be created' }
    log(`pgvector ${installed}: CREATE EXTENSION vector done in this database`)
  }
  try {
    await sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(${SETUP_LOCK})`
      const [column] = await tx`SELECT 1 AS there FROM pg_attribute WHERE attrelid = 'rag_vectors'::regclass AND attname = 'vec' AND NOT attisdropped`
      if (!column) await tx.unsafe('ALTER TABLE rag_vectors ADD COLUMN vec vector')
    })
  } catch (error) {
    const message = (error as Error).message.replace(/\s+/g, ' ').trim()
    return { kind: 'in-memory', reason: `pgvector ${installed} is there but rag_vectors could not get its vector column (${message}); start a server whose role owns the tables once` }
  }
  // Once every vector was in `vec` (rag_vector_layout says so), nothing more is looked for: the
  // look through rag_vectors reads all of it (seconds at a million rows).
  const [layout] = await sql`SELECT value FROM rag_vector_layout WHERE name = 'vectors'`
  if (layout?.value !== 'pgvector') {
    const converted = await convertVectors(sql, log)
    if (converted) log(`pgvector: ${converted} vector(s) stored before the extension was there moved into rag_vectors.vec`)
    await sql`INSERT INTO rag_vector_layout (name, value, changed_at) VALUES ('vectors', 'pgvector', ${new Date().toISOString()})
      ON CONFLICT (name) DO UPDATE SET value = excluded.value, changed_at = excluded.changed_at`
  }
  // Indexes of collections deleted since (a server stopped before it dropped them): they index nothing.
  for (const row of await sql`SELECT i.relname FROM pg_class i JOIN pg_index x ON x.indexrelid = i.oid
      WHERE x.indrelid = 'rag_vectors'::regclass AND i.relname ~ '^rag_vectors_hnsw_[0-9]+_[0-9]+$'
        AND NOT EXISTS (SELECT 1 FROM rag_collections c WHERE i.relname LIKE 'rag\\_vectors\\_hnsw\\_' || c.id || '\\_%')`) {
    await sql.unsafe(`DROP INDEX CONCURRENTLY IF EXISTS ${String(row.relname).replace(/[^a-z0-9_]/g, '')}`).catch(() => {})
  }
  return { kind: 'pgvector', reason: `pgvector ${installed}: vectors are searched in the database (an HNSW index over halfvec per collection of more than ${INDEX_MIN_ROWS} chunks, candidates rescored exactly; smaller ones exactly)`, version: installed }
}

/**
 * The float32 vectors of the memory path (`embedding`, bytea) moved into `vec`, in batches by
 * chunk id, each batch in its own transaction that writes `vec` and clears `embedding` together:
 * a crash leaves every row with one or the other, and the next start goes on from there.
 */
export async function convertVectors(sql: Postgres, log: (line: string) => void = () => {}): Promise<number> {
  let after = 0
  let moved = 0
  for (;;) {
    const rows = await sql`SELECT chunk_id, embedding FROM rag_vectors WHERE chunk_id > ${after} AND embedding IS NOT NULL ORDER BY chunk_id LIMIT ${CONVERT_BATCH}`
    if (!rows.length) return moved
    after = Number(rows[rows.length - 1].chunk_id)
    const ids = rows.map((row: { chunk_id: number }) => Number(row.chunk_id))
    const literals = rows.map((row: { embedding: Uint8Array }) => vectorLiteral(new Float32Array(row.embedding.buffer.slice(row.embedding.byteOffset, row.embedding.byteOffset + row.embedding.byteLength))))
    await sql`UPDATE rag_vectors v SET vec = x.vec::vector, embedding = NULL FROM unnest(${ids}::int[], ${literals}::text[]) AS x(id, vec)
      WHERE v.chunk_id = x.id AND v.embedding IS NOT NULL`
    moved += rows.length
    if (moved % 100_000 < CONVERT_BATCH) log(`pgvector: ${moved} vectors moved into rag_vectors.vec so far`)
  }
}

/**
 * The name of a collection's HNSW index: a partial index of rag_vectors over the collection's rows
 * up to chunk id `watermark` (its rows when it was built; later ones are searched exactly beside it).
 */
export const indexName = (collectionId: number, watermark: number) => `rag_vectors_hnsw_${Math.trunc(collectionId)}_${Math.trunc(watermark)}`
/** The LIKE pattern of a collection's index names. */
const indexPattern = (collectionId: number) => `rag\\_vectors\\_hnsw\\_${Math.trunc(collectionId)}\\_%`

/** A collection's valid index with the highest watermark, and the others (older, or invalid). */
async function indexesOf(sql: Postgres, collectionId: number): Promise<{ current: { name: string; watermark: number } | null; others: string[] }> {
  const rows = await sql`SELECT i.relname AS name, x.indisvalid AS valid FROM pg_class i JOIN pg_index x ON x.indexrelid = i.oid
    WHERE x.indrelid = 'rag_vectors'::regclass AND i.relname LIKE ${indexPattern(collectionId)}`
  let current: { name: string; watermark: number } | null = null
  for (const row of rows) {
    const watermark = Number(String(row.name).split('_').at(-1))
    if (row.valid && Number.isFinite(watermark) && (!current || watermark > current.watermark)) current = { name: row.name, watermark }
  }
  return { current, others: rows.map((row: { name: string }) => row.name).filter((name: string) => name !== current?.name) }
}

/** A name of ours as an identifier (letters, digits and underscores only). */
const identifier = (name: string) => name.replace(/[^a-z0-9_]/g, '')

/**
 * A fixed pseudo-random vector per dimension count: a candidate's inner product with it, beside
 * its distance to the query, tells twins (copies of one passage: the same vector) from different
 * chunks at the same distance, without sending the vectors (see nearest).
 */
function probe(dimensions: number): string {
  let seed = 0x9e3779b9 ^ dimensions
  const values = new Float32Array(dimensions)
  for (let i = 0; i < dimensions; i++) {
    seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) | 0
    values[i] = ((seed >>> 8) / 0x1000000) * 2 - 1
  }
  return vectorLiteral(values)
}

/**
 * The vectors in rag_vectors' `vec` column (pgvector), searched in the database. A collection of
 * up to INDEX_MIN_ROWS chunks is searched exactly; a larger one gets an HNSW index of its own (a
 * partial index: `WHERE collection_id = <id>`), built in bulk once its writes pause, so a small
 * collection is never filtered out of a big one's graph (each is searched completely, by its own
 * rows or its own index) and a search reads no other collection's vectors. The index's candidates
 * (halfvec) are rescored with the float32 vectors. Replicas hold no vectors: the cache stays
 * empty, and every replica reads the same rows and indexes.
 */
export class PgvectorVectors implements VectorPath {
  readonly kind = 'pgvector' as const
  /** Never filled: distinctHits then keeps every keyword candidate, as on SQLite's small collections. */
  readonly cache = new VectorCache({ minRows: Number.POSITIVE_INFINITY, budgetBytes: 0 })
  private readonly probes = new Map<number, string>()
  /** Each collection's current index (its watermark), as last read (see currentIndex). */
  private readonly indexes = new Map<number, { watermark: number | null; at: number }>()
  /** When this replica last wrote each collection, and the builds it has under way. */
  private readonly writtenAt = new Map<number, number>()
  private readonly building = new Map<number, Promise<void>>()
  private readonly timers = new Map<number, ReturnType<typeof setTimeout>>()
  private lastBuild: Promise<void> = Promise.resolve()
  /** Searches by plan, and index builds (tests, Prometheus, the bench). */
  readonly plans = { exact: 0, index: 0 }
  readonly builds: { collectionId: number; rows: number; seconds: number }[] = []
  private readonly minRows: number
  private readonly quietMs: number
  private closed = false

  constructor(
    private readonly sql: Postgres,
    private readonly versionOf: VersionOf,
    private readonly options: { indexMinRows?: number; indexQuietMs?: number; log?: (line: string) => void } = {},
  ) {
    this.minRows = options.indexMinRows ?? INDEX_MIN_ROWS
    this.quietMs = options.indexQuietMs ?? INDEX_QUIET_MS
  }

  bytesUsed(): number {
    return 0
  }

  insertValue(vector: Float32Array): string {
    return vectorLiteral(vector)
  }

  /** A deleted collection's index goes with it (its rows went by cascade). */
  drop(collectionId: number): void {
    this.indexes.delete(collectionId)
    this.writtenAt.delete(collectionId)
    clearTimeout(this.timers.get(collectionId))
    this.timers.delete(collectionId)
    void (this.building.get(collectionId) ?? Promise.resolve())
      .then(async () => {
        // CONCURRENTLY: a plain DROP INDEX locks rag_vectors for every collection until it is done.
        const { current, others } = await indexesOf(this.sql, collectionId)
        for (const name of [...(current ? [current.name] : []), ...others]) await this.sql.unsafe(`DROP INDEX CONCURRENTLY IF EXISTS ${identifier(name)}`)
      })
      .catch(() => {})
  }

  /** Writes of this replica under way, per collection: no index is built while one is (see scheduleIndex). */
  private readonly writing = new Map<number, number>()

  writeStarted(collectionId: number): void {
    this.writing.set(collectionId, (this.writing.get(collectionId) ?? 0) + 1)
  }

  writeEnded(collectionId: number): void {
    const left = (this.writing.get(collectionId) ?? 1) - 1
    if (left > 0) this.writing.set(collectionId, left)
    else this.writing.delete(collectionId)
    this.writtenAt.set(collectionId, performance.now())
  }

  /** After a write: a collection past INDEX_MIN_ROWS without an index (or with many rows past it) gets one once its writes pause. */
  followWrite(collectionId: number): void {
    this.writtenAt.set(collectionId, performance.now())
    this.indexes.delete(collectionId)
    this.scheduleIndex(collectionId, this.quietMs)
  }

  matrixOf(): undefined {
    return undefined
  }

  /** Stops the timers of index builds not started (a server closing). */
  close(): void {
    this.closed = true
    for (const timer of this.timers.values()) clearTimeout(timer)
    this.timers.clear()
  }

  private scheduleIndex(collectionId: number, delay: number): void {
    if (this.closed) return
    clearTimeout(this.timers.get(collectionId))
    const timer = setTimeout(() => {
      this.timers.delete(collectionId)
      const quiet = performance.now() - (this.writtenAt.get(collectionId) ?? 0)
      if (this.writing.has(collectionId)) return this.scheduleIndex(collectionId, this.quietMs)
      if (quiet < this.quietMs) return this.scheduleIndex(collectionId, this.quietMs - quiet)
      void this.indexCollection(collectionId).catch((error) => {
        this.options.log?.(`pgvector: indexing collection ${collectionId} failed (tried again in ${RETRY_MS / 1000} s): ${(error as Error).message}`)
        this.scheduleIndex(collectionId, RETRY_MS)
      })
    }, delay)
    ;(timer as { unref?: () => void }).unref?.()
    this.timers.set(collectionId, timer)
  }

  /** Resolves once the index builds under way on this replica are done (tests, the bench). */
  async settled(): Promise<void> {
    while (this.building.size) await Promise.all([...this.building.values()])
  }

  /**
   * Builds a collection's HNSW index when it has more than INDEX_MIN_ROWS chunks and none yet, or
   * more than INDEX_MIN_ROWS written since its index was built: over its rows up to its highest
   * chunk id now (the index's watermark; rows written later are never added to it, so a write
   * never pays for an HNSW insert, and are searched exactly beside it until the next build).
   * CREATE INDEX CONCURRENTLY (writes and searches go on; searches use the previous index, or are
   * exact, until it is valid), then the previous index is dropped. One build at a time, on one
   * server at a time (a session advisory lock; another server finds it taken and it is tried
   * again later). An index left invalid by a build that died is dropped.
   */
  indexCollection(collectionId: number): Promise<void> {
    const running = this.building.get(collectionId)
    if (running) return running
    // One build at a time: two CREATE INDEX CONCURRENTLY on one table wait for each other (a deadlock).
    const build = this.lastBuild.catch(() => {}).then(() => this.build(collectionId)).finally(() => this.building.delete(collectionId))
    this.lastBuild = build
    this.building.set(collectionId, build)
    return build
  }

  private async build(collectionId: number): Promise<void> {
    const [row] = await this.sql`SELECT dimensions, chunk_count FROM rag_collections WHERE id = ${collectionId}`
    if (!row) return
    const dimensions = Number(row.dimensions)
    if (Number(row.chunk_count) <= this.minRows || dimensions > HNSW_MAX_DIMENSIONS) return
    const connection = await this.sql.reserve()
    try {
      // One build at a time on the database too (other servers' builds): this one is tried again later.
      const [lock] = await connection`SELECT pg_try_advisory_lock(${SETUP_LOCK}, 0) AS taken`
      if (!lock?.taken) {
        this.scheduleIndex(collectionId, RETRY_MS)
        return
      }
      try {
        const { current, others } = await indexesOf(connection as unknown as Postgres, collectionId)
        // Invalid indexes (a build that died) and those an earlier build replaced.
        for (const name of others) await connection.unsafe(`DROP INDEX CONCURRENTLY IF EXISTS ${identifier(name)}`)
        const [rows] = await connection`SELECT max(id)::float8 AS top, count(*) FILTER (WHERE id > ${current?.watermark ?? 0})::float8 AS pending
          FROM rag_chunks WHERE collection_id = ${collectionId}`
        const watermark = Number(rows?.top ?? 0)
        if (current && Number(rows?.pending ?? 0) <= this.minRows) return
        const started = performance.now()
        const name = indexName(collectionId, watermark)
        await connection.unsafe(`SET maintenance_work_mem = '${BUILD_MEMORY}'`)
        await connection.unsafe(
          `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${name} ON rag_vectors USING hnsw ((vec::halfvec(${dimensions})) halfvec_cosine_ops) WHERE collection_id = ${Math.trunc(collectionId)} AND chunk_id <= ${watermark}`,
        )
        const seconds = (performance.now() - started) / 1000
        const [indexed] = await connection`SELECT count(*)::float8 AS n FROM rag_chunks WHERE collection_id = ${collectionId} AND id <= ${watermark}`
        this.builds.push({ collectionId, rows: Number(indexed?.n ?? 0), seconds })
        this.options.log?.(`pgvector: HNSW index of collection ${collectionId} (${Number(indexed?.n ?? 0)} chunks) built in ${seconds.toFixed(1)} s`)
        this.indexes.delete(collectionId)
        if (current) await connection.unsafe(`DROP INDEX CONCURRENTLY IF EXISTS ${identifier(current.name)}`)
      } finally {
        await connection.unsafe('RESET maintenance_work_mem').catch(() => {})
        await connection`SELECT pg_advisory_unlock(${SETUP_LOCK}, 0)`.catch(() => {})
      }
    } finally {
      connection.release()
    }
  }

  /** The watermark of the collection's current index, null without one (read at most every 2 s). */
  async currentIndex(collectionId: number): Promise<number | null> {
    const known = this.indexes.get(collectionId)
    if (known && performance.now() - known.at < INDEX_STATE_TTL_MS) return known.watermark
    const { current } = await indexesOf(this.sql, collectionId)
    const watermark = current?.watermark ?? null
    this.indexes.set(collectionId, { watermark, at: performance.now() })
    return watermark
  }

  async nearest(collection: CollectionRow, vector: Float32Array, k: number, distinct?: { dropped: number }): Promise<{ chunkId: number; distance: number | null }[]> {
    if (k <= 0) return []
    const state = await this.versionOf(collection.id)
    const chunks = state?.chunks ?? 0
    if (!chunks) return []
    const dimensions = collection.dimensions
    if (vector.length !== dimensions) return []
    let key = this.probes.get(dimensions)
    if (!key) this.probes.set(dimensions, (key = probe(dimensions)))
    const query = vectorLiteral(vector)
    // Twins are left out here, so ask for more when they are to be.
    const wanted = Math.min(chunks, Math.ceil((distinct ? k * 2 : k) * OVERFETCH) + 10)
    const watermark = chunks > this.minRows ? await this.currentIndex(collection.id) : null
    // A large collection without its index (another server's writes, a restart): one is built once its writes pause.
    if (chunks > this.minRows && watermark === null && !this.building.has(collection.id) && !this.timers.has(collection.id)) this.scheduleIndex(collection.id, 0)
    if (watermark !== null) this.plans.index++
    else this.plans.exact++
    const results = await this.sql.unsafe(watermark !== null ? indexSearch(collection.id, dimensions, query, wanted, key, watermark) : exactSearch(collection.id, query, wanted, key))
    const rows: { chunk_id: number; d: number | null; p: number | null }[] = results[results.length - 1]
    // Exactly rescored (float32), nearest first; ties by chunk id, as the memory path orders them.
    const ranked = rows
      .map((row) => ({ chunkId: Number(row.chunk_id), distance: row.d === null ? null : Number(row.d), probe: row.p === null ? null : Number(row.p) }))
      .sort((a, b) => (a.distance ?? 2) - (b.distance ?? 2) || a.chunkId - b.chunkId)
    const kept: { chunkId: number; distance: number | null }[] = []
    const seen = new Set<string>()
    for (const row of ranked) {
      if (distinct) {
        const twin = `${row.distance}:${row.probe}`
        if (seen.has(twin)) {
          distinct.dropped++
          continue
        }
        seen.add(twin)
      }
      kept.push({ chunkId: row.chunkId, distance: row.distance })
      if (kept.length >= k) break
    }
    return kept
  }

  async vectors(collection: CollectionRow, chunkIds: number[]): Promise<Map<number, Float32Array>> {
    const found = new Map<number, Float32Array>()
    if (!chunkIds.length) return found
    const rows = await this.sql`SELECT chunk_id AS id, vec::real[] AS v FROM rag_vectors WHERE chunk_id = ANY(${chunkIds}::int[]) AND collection_id = ${collection.id} AND vec IS NOT NULL`
    for (const row of rows) found.set(Number(row.id), Float32Array.from(row.v as number[]))
    return found
  }
}
