import { describe, expect, test } from 'bun:test'
import corpus from '../../fixtures/rag-corpus.json'
import { openDatabase } from '../../../src/db'
import { ExtractiveGenerator } from '../../../src/ml/builtin/extractive-generator'
import { HashEmbedder } from '../../../src/ml/builtin/hash-embedder'
import type { Postgres } from '../../../src/db/postgres'
import { RagService } from '../../../src/modules/rag/service'
import type { CollectionRow, RagStore, StoredDocument } from '../../../src/modules/rag/store'
import { PostgresRagStore } from '../../../src/modules/rag/store/postgres'
import { indexSearch, vectorLiteral } from '../../../src/modules/rag/store/postgres/vectors-pgvector'
import { freshPgvectorPostgres, freshPostgres, insertTestUser, PGVECTOR_SKIPPED, POSTGRES_SKIPPED, TEST_DATABASE_URL, TEST_PGVECTOR_TEMPLATE } from '../../postgres'

const embedder = new HashEmbedder()
const QUERIES = ['WireGuard VPN configuration', 'reset a forgotten password', 'expense report receipts', 'how long is the reset link valid', 'printer on the third floor']

/** A RagService over a PostgreSQL store on `sql` (prepared: pgvector when the database has it), and a user. */
async function ragOn(sql: Postgres, options: ConstructorParameters<typeof PostgresRagStore>[1] = {}, prepare = true) {
  const db = openDatabase(':memory:')
  const store = new PostgresRagStore(sql, options)
  if (prepare) await store.prepareVectors()
  const rag = new RagService<RagStore>({ db, store, embedder: async () => embedder, generator: async () => new ExtractiveGenerator() })
  const user = await insertTestUser({ kind: 'postgres', sql, db })
  return { rag, store, user, db }
}

/** Deterministic unit vectors around a few centres (clustered, as embeddings are). */
function vectors(count: number, seed: number, dimensions = embedder.dimensions): Float32Array[] {
  let state = seed >>> 0
  const next = () => {
    state = (Math.imul(state ^ (state >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0
    return state / 0x100000000 - 0.5
  }
  const centres = Array.from({ length: 8 }, () => Float32Array.from({ length: dimensions }, next))
  return Array.from({ length: count }, (_, i) => {
    const centre = centres[i % centres.length]!
    const v = Float32Array.from({ length: dimensions }, (_, d) => centre[d]! + next() * 0.8)
    const norm = Math.hypot(...v)
    return v.map((x) => x / norm)
  })
}

/** One-chunk documents `<prefix>-<from + i>`, one per vector. */
const documentsOf = (prefix: string, vectorsOf: Float32Array[], from = 0): StoredDocument[] =>
  vectorsOf.map((vector, i) => ({ docId: `${prefix}-${from + i}`, content: `${prefix} chunk ${from + i}`, metadata: {}, chunks: [`${prefix} chunk ${from + i}`], vectors: [vector] }))

const cosineDistance = (a: Float32Array, b: Float32Array) => {
  let dot = 0
  let na = 0
  let nb = 0
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!
    na += a[i]! * a[i]!
    nb += b[i]! * b[i]!
  }
  return 1 - dot / Math.sqrt(na * nb)
}

describe.skipIf(!TEST_PGVECTOR_TEMPLATE)(`RAG on PostgreSQL with pgvector${TEST_PGVECTOR_TEMPLATE ? '' : ` (${PGVECTOR_SKIPPED})`}`, () => {
  test('search gives what the memory path gives on the same data (ids, order, scores); the pgvector store holds no vector in memory', async () => {
    const pgvector = await ragOn((await freshPgvectorPostgres()).sql)
    const memory = await ragOn(await freshPostgres())
    expect(pgvector.store.vectorSearchPath).toBe('pgvector')
    expect(memory.store.vectorSearchPath).toBe('in-memory')
    expect(memory.store.vectorSearchReason).toContain('pgvector')
    for (const side of [pgvector, memory]) await side.rag.ingest(side.user, 'kb', corpus.documents)
    for (const query of QUERIES) {
      const [a, b] = await Promise.all([pgvector.rag.search(pgvector.user, 'kb', query, 5), memory.rag.search(memory.user, 'kb', query, 5)])
      expect(a.results.map((r) => r.id)).toEqual(b.results.map((r) => r.id))
      a.results.forEach((result, i) => expect(result.score).toBeCloseTo(b.results[i]!.score, 4))
    }
    // The vectors are in the vec column, none as float32 bytes, and none in this server's memory.
    const [rows] = await pgvector.store['sql']`SELECT count(vec)::int AS vec, count(embedding)::int AS bytes FROM rag_vectors`
    expect(rows).toEqual({ vec: expect.any(Number), bytes: 0 })
    expect(rows.vec).toBeGreaterThan(0)
    expect(pgvector.store.cache.usedBytes).toBe(0)
    expect(pgvector.store.vectorMemoryBytes()).toBe(0)
    expect(memory.store.vectorMemoryBytes()).toBeGreaterThan(0)
    // A deleted document is gone from the next search.
    await pgvector.rag.deleteDocument(pgvector.user, 'kb', 'vpn-setup')
    expect((await pgvector.rag.search(pgvector.user, 'kb', 'WireGuard VPN configuration', 10)).results.map((r) => r.id)).not.toContain('vpn-setup')
  })

  test('large collections get an HNSW index of their own once their writes pause; a small collection among a big one gets all its k nearest; recall@10 against exact; twins counted once', async () => {
    const { sql } = await freshPgvectorPostgres()
    const { store, user } = await ragOn(sql, { indexMinRows: 100, indexQuietMs: 300 })
    const big = await store.createCollection(user, 'big', embedder.id, embedder.dimensions)
    const small = await store.createCollection(user, 'small', embedder.id, embedder.dimensions)
    const bigVectors = vectors(4_000, 1)
    for (let i = 0; i < bigVectors.length; i += 1000) await store.writeDocuments(big, documentsOf('big', bigVectors.slice(i, i + 1000), i))
    const smallVectors = vectors(150, 2)
    await store.writeDocuments(small, documentsOf('small', smallVectors))
    const pgvector = store.pgvector!
    const fresh = async (name: string) => (await store.findCollection(user, name)) as CollectionRow
    const queries = vectors(20, 3)
    // Before the indexes are built: exact, and complete.
    expect(await store.nearest(await fresh('small'), queries[0]!, 10)).toHaveLength(10)
    expect(pgvector.plans).toEqual({ exact: 1, index: 0 })
    // Once the writes paused (300 ms here), each large collection gets its index, built once.
    for (let i = 0; i < 100 && pgvector.builds.length < 2; i++) await Bun.sleep(100)
    await pgvector.settled()
    expect(pgvector.builds.map((build) => build.rows).sort((a, b) => a - b)).toEqual([150, 4000])
    const indexes = await sql`SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'rag_vectors' AND indexname LIKE 'rag_vectors_hnsw_%' ORDER BY indexname`
    expect(indexes).toHaveLength(2)
    for (const index of indexes) expect(index.indexdef).toContain('USING hnsw')
    await sql`ANALYZE rag_vectors`
    let found = 0
    let wanted = 0
    for (const query of queries) {
      const near = await store.nearest(await fresh('small'), query, 10)
      // All ten, all of the small collection, nearest first.
      expect(near).toHaveLength(10)
      const exact = smallVectors.map((v, i) => ({ i, d: cosineDistance(query, v) })).sort((a, b) => a.d - b.d)
      const rows = await sql`SELECT c.id, d.doc_id FROM rag_chunks c JOIN rag_documents d ON d.id = c.document_id WHERE c.id = ANY(${near.map((hit) => hit.chunkId)}::int[])`
      for (const row of rows) expect(row.doc_id).toStartWith('small-')
      const docs = new Set(rows.map((row: { doc_id: string }) => row.doc_id))
      found += exact.slice(0, 10).filter((e) => docs.has(`small-${e.i}`)).length
      wanted += 10
      for (let i = 1; i < near.length; i++) expect(near[i]!.distance!).toBeGreaterThanOrEqual(near[i - 1]!.distance!)
      // Distances are the exact float32 cosine distances (rescored), not halfvec's.
      const nearest = rows.find((row: { id: number }) => Number(row.id) === near[0]!.chunkId)!
      expect(near[0]!.distance!).toBeCloseTo(cosineDistance(query, smallVectors[Number(nearest.doc_id.slice(6))]!), 5)
      // The big collection through its index too: its own chunks only.
      const inBig = await store.nearest(await fresh('big'), query, 10)
      expect(inBig).toHaveLength(10)
    }
    expect(pgvector.plans.index).toBe(queries.length * 2)
    expect(found / wanted).toBeGreaterThanOrEqual(0.95)
    // The query plan is the collection's own index (over its rows up to the watermark).
    const smallIndex = String(indexes.find((index: { indexname: string }) => index.indexname.startsWith(`rag_vectors_hnsw_${small.id}_`))!.indexname)
    const watermark = Number(smallIndex.split('_').at(-1))
    const statements = indexSearch(small.id, 384, vectorLiteral(queries[0]!), 20, null, watermark)
    const last = statements.lastIndexOf(';') + 1
    const plan = (await sql.unsafe(`${statements.slice(0, last)} EXPLAIN ${statements.slice(last)}`)).at(-1)
    expect(plan.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n')).toContain(`Index Scan using ${smallIndex}`)

    // Rows written after the build are not added to the index (no HNSW insert on a write): they are
    // searched exactly beside it, found at once; past indexMinRows of them the index is built again.
    const late = vectors(60, 9)
    await store.writeDocuments(await fresh('small'), documentsOf('late', late))
    const lateHit = await store.nearest(await fresh('small'), late[5]!, 3)
    const [lateRow] = await sql`SELECT d.doc_id FROM rag_chunks c JOIN rag_documents d ON d.id = c.document_id WHERE c.id = ${lateHit[0]!.chunkId}`
    expect(lateRow.doc_id).toBe('late-5')
    expect(lateHit[0]!.distance!).toBeCloseTo(0, 5)
    await Bun.sleep(500)
    await pgvector.settled()
    expect(pgvector.builds).toHaveLength(2)
    await store.writeDocuments(await fresh('small'), documentsOf('later', vectors(50, 10)))
    for (let i = 0; i < 100 && pgvector.builds.length < 3; i++) await Bun.sleep(100)
    await pgvector.settled()
    expect(pgvector.builds.at(-1)!.rows).toBe(260)
    const rebuilt = await sql`SELECT indexname FROM pg_indexes WHERE indexname LIKE ${`rag\\_vectors\\_hnsw\\_${small.id}\\_%`}`
    expect(rebuilt).toHaveLength(1)
    expect(Number(String(rebuilt[0].indexname).split('_').at(-1))).toBeGreaterThan(watermark)
    // A collection at or under indexMinRows is searched exactly: every chunk when k covers them.
    const tiny = await store.createCollection(user, 'tiny', embedder.id, embedder.dimensions)
    await store.writeDocuments(tiny, documentsOf('tiny', vectors(40, 4)))
    expect(await store.nearest(await fresh('tiny'), queries[0]!, 50)).toHaveLength(40)
    expect(pgvector.plans.exact).toBe(2)
    // Twins (one passage in several documents: the same vector) count once when asked.
    const twins = await store.createCollection(user, 'twins', embedder.id, embedder.dimensions)
    const one = vectors(3, 5)
    await store.writeDocuments(twins, [...documentsOf('a', one), ...documentsOf('b', one)])
    const report = { dropped: 0 }
    expect(await store.nearest(await fresh('twins'), one[0]!, 3, report)).toHaveLength(3)
    expect(report.dropped).toBeGreaterThan(0)
    // A deleted collection's index goes with it.
    await store.deleteCollection(await fresh('small'))
    await pgvector.settled()
    const left = () => sql`SELECT 1 FROM pg_indexes WHERE indexname LIKE ${`rag\\_vectors\\_hnsw\\_${small.id}\\_%`}`
    for (let i = 0; i < 50 && (await left()).length; i++) await Bun.sleep(50)
    expect(await left()).toHaveLength(0)
    expect(await sql`SELECT 1 FROM pg_indexes WHERE indexname LIKE ${`rag\\_vectors\\_hnsw\\_${big.id}\\_%`}`).toHaveLength(1)
    pgvector.close()
  })

  test('a database that gained the extension later: vectors written by the memory path move into the vec column, none lost, searches unchanged', async () => {
    const { sql } = await freshPgvectorPostgres()
    // Written before anything looked for pgvector (as a server of the previous version did).
    const before = await ragOn(sql, {}, false)
    expect(before.store.vectorSearchPath).toBe('in-memory')
    await before.rag.ingest(before.user, 'kb', corpus.documents)
    const expected = await Promise.all(QUERIES.map((query) => before.rag.search(before.user, 'kb', query, 5)))
    const [stored] = await sql`SELECT count(*)::int AS n, count(embedding)::int AS bytes FROM rag_vectors`
    expect(stored.bytes).toBe(stored.n)
    const after = new PostgresRagStore(sql)
    const setup = await after.prepareVectors()
    expect(setup.kind).toBe('pgvector')
    const [moved] = await sql`SELECT count(*)::int AS n, count(vec)::int AS vec, count(embedding)::int AS bytes FROM rag_vectors`
    expect(moved).toEqual({ n: stored.n, vec: stored.n, bytes: 0 })
    // The same float32 values: every vector is back exactly.
    const [one] = await sql`SELECT chunk_id FROM rag_vectors LIMIT 1`
    const collection = (await after.findCollection(before.user, 'kb'))!
    const back = (await after.vectors(collection, [Number(one.chunk_id)])).get(Number(one.chunk_id))!
    expect(back).toHaveLength(embedder.dimensions)
    const rag = new RagService<RagStore>({ db: before.db, store: after, embedder: async () => embedder, generator: async () => new ExtractiveGenerator() })
    for (const [i, query] of QUERIES.entries()) {
      const results = (await rag.search(before.user, 'kb', query, 5)).results
      expect(results.map((r) => r.id)).toEqual(expected[i]!.results.map((r) => r.id))
    }
    // A second start finds nothing to move.
    expect((await new PostgresRagStore(sql).prepareVectors()).kind).toBe('pgvector')
  })

  test('two replicas on one database see each other’s ingests and deletes at once, holding no vectors', async () => {
    const { sql } = await freshPgvectorPostgres()
    const a = await ragOn(sql)
    const bStore = new PostgresRagStore(sql)
    await bStore.prepareVectors()
    const b = new RagService<RagStore>({ db: a.db, store: bStore, embedder: async () => embedder, generator: async () => new ExtractiveGenerator() })
    await a.rag.ingest(a.user, 'kb', corpus.documents)
    expect((await b.search(a.user, 'kb', 'WireGuard VPN configuration', 3)).results[0]!.id).toBe('vpn-setup')
    await Bun.sleep(150)
    await b.deleteDocument(a.user, 'kb', 'vpn-setup')
    await Bun.sleep(150)
    expect((await a.rag.search(a.user, 'kb', 'WireGuard VPN configuration', 10)).results.map((r) => r.id)).not.toContain('vpn-setup')
    await b.ingest(a.user, 'kb', [{ id: 'new-vpn', content: 'WireGuard VPN configuration for the new office: import the tunnel file.' }])
    await Bun.sleep(150)
    expect((await a.rag.search(a.user, 'kb', 'WireGuard VPN configuration new office', 3)).results.map((r) => r.id)).toContain('new-vpn')
    expect(a.store.cache.usedBytes + bStore.cache.usedBytes).toBe(0)
    // Another user never sees the collection.
    const other = await insertTestUser({ kind: 'postgres', sql, db: a.db })
    expect(b.search(other, 'kb', 'WireGuard', 3)).rejects.toMatchObject({ code: 'NOT_FOUND' })
    expect((await b.listCollections(other)).collections).toEqual([])
  })
})

describe.skipIf(!TEST_DATABASE_URL)(`RAG on PostgreSQL without pgvector${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('a collection larger than the memory budget is searched exactly, in slices, never loaded whole', async () => {
    const sql = await freshPostgres()
    // 3,000 vectors of 384 dimensions: some 6 MB in the cache; a budget of 1 MB holds none of them.
    const { store, user } = await ragOn(sql, { vectorCache: { minRows: 0, budgetBytes: 1024 * 1024 }, streamRows: 700 })
    expect(store.vectorSearchPath).toBe('in-memory')
    const big = await store.createCollection(user, 'big', embedder.id, embedder.dimensions)
    const all = vectors(3_000, 7)
    for (let i = 0; i < all.length; i += 1000) await store.writeDocuments(big, documentsOf('big', all.slice(i, i + 1000), i))
    const query = vectors(1, 8)[0]!
    const near = await store.nearest((await store.findCollection(user, 'big'))!, query, 10)
    const rows = await sql`SELECT c.id, d.doc_id FROM rag_chunks c JOIN rag_documents d ON d.id = c.document_id WHERE c.id = ANY(${near.map((hit) => hit.chunkId)}::int[])`
    const docOf = new Map(rows.map((row: { id: number; doc_id: string }) => [Number(row.id), row.doc_id]))
    const exact = all.map((v, i) => ({ doc: `big-${i}`, d: cosineDistance(query, v) })).sort((a, b) => a.d - b.d)
    expect(near.map((hit) => docOf.get(hit.chunkId))).toEqual(exact.slice(0, 10).map((e) => e.doc))
    expect(store.cache.usedBytes).toBe(0)
    expect(store.vectorMemoryBytes()).toBe(0)
  })
})
