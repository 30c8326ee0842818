import { beforeAll, describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { openDatabase } from '../../src/db'
import type { Postgres } from '../../src/db/postgres'
import { ExtractiveGenerator } from '../../src/ml/builtin/extractive-generator'
import { HashEmbedder } from '../../src/ml/builtin/hash-embedder'
import { RagService, WRITE_BATCH } from '../../src/modules/rag/service'
import type { CollectionRow, RagStore, StoredDocument } from '../../src/modules/rag/store'
import { bestFirst, filteredOffsets, keywordText, matchLines, positionCount, PostgresRagStore, termFrequency } from '../../src/modules/rag/store/postgres'
import { distinctHits } from '../../src/modules/rag/vectors/cache'
import { freshPostgres, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../postgres'

const embedder = new HashEmbedder()

/** Documents of one chunk each (the chunks as given), with their embeddings. */
async function documents(chunks: string[], prefix = 'doc'): Promise<StoredDocument[]> {
  const vectors = await embedder.embed(chunks)
  return chunks.map((chunk, i) => ({ docId: `${prefix}-${i}`, content: chunk, metadata: {}, chunks: [chunk], vectors: [vectors[i]!] }))
}

test("the positions of a tsvector's text as keyword search reads them: quotes and backslashes as PostgreSQL writes them", () => {
  expect(filteredOffsets("'backup':3A,9A 'restor':4A")).toEqual(
    new Map([
      ['backup', [3, 9]],
      ['restor', [4]],
    ]),
  )
  // As PostgreSQL prints ts_filter(setweight($$'o''reilli':1 'a\\b':2,5 '''':7 plain:3$$::tsvector, 'A'), '{a}').
  expect(filteredOffsets("'''':7A 'a\\\\b':2A,5A 'o''reilli':1A 'plain':3A")).toEqual(
    new Map([
      ["'", [7]],
      ['a\\b', [2, 5]],
      ["o'reilli", [1]],
      ['plain', [3]],
    ]),
  )
  expect(filteredOffsets('')).toEqual(new Map())
  // How often a word or a phrase occurs, from the same text; a lexeme ending another one is not it.
  const text = "'backup':3A,9A,12A 'nightli':2A,8A 'xbackup':5A"
  expect(termFrequency(text, ["'backup'"])).toBe(3)
  expect(termFrequency(text, ["'nightli'", "'backup'"])).toBe(2)
  expect(termFrequency(text, ["'backup'", "'nightli'"])).toBe(0)
  expect(termFrequency("'xbackup':5A", ["'backup'"])).toBe(0)
  expect(termFrequency("'data':4A,5A,6A", ["'data'", "'data'"])).toBe(2)
  // A word's count as keyword search takes it (the needle built once per query): termFrequency's.
  for (const [own, quoted] of [[text, "'backup'"], [text, "'nightli'"], [text, "'xbackup'"], [text, "'restor'"], ["'xbackup':5A", "'backup'"], ["'o''reilli':1A,4A", "'o''reilli'"], ['', "'backup'"]] as const) {
    expect(positionCount(own, `${quoted}:`)).toBe(termFrequency(own, [quoted]))
  }
  expect(positionCount(text, "'backup':")).toBe(3)
  // The keyword query's matches, a line each: id, length in tokens, the tsvector text cut down.
  const lines = matchLines(`17 12 ${text}\n3 9 'o''reilli':1A\n120045 1 `)
  expect([...lines.ids]).toEqual([17, 3, 120045])
  expect([...lines.lengths]).toEqual([12, 9, 1])
  expect(lines.texts).toEqual([text, "'o''reilli':1A", ''])
  expect(matchLines('')).toEqual({ ids: new Float64Array(0), lengths: new Float64Array(0), texts: [] })
})

test("keyword matches in the order of a full sort by (BM25, id), sorted only as far as they are read", () => {
  let seed = 7
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31)
  for (const n of [0, 1, 5, 50, 239, 240, 241, 3000]) {
    // Few distinct scores, ids out of order: ties are broken by id, as the query's rows were sorted.
    const scores = Float64Array.from({ length: n }, () => -Math.floor(random() * 20) / 4)
    const ids = Float64Array.from({ length: n }, (_, i) => (i * 7919) % 100_003)
    const sorted = Array.from({ length: n }, (_, r) => r).sort((a, b) => scores[a]! - scores[b]! || ids[a]! - ids[b]!)
    expect([...bestFirst(scores, ids, 120)]).toEqual(sorted)
  }
  // distinctHits reads no further than its k-th kept hit: the rest of such an order is never sorted.
  let read = 0
  const hits = (function* () {
    for (let chunkId = 1; chunkId <= 1000; chunkId++) {
      read++
      yield { chunkId, bm25: -chunkId }
    }
  })()
  expect(distinctHits(undefined, hits, 120, (hit) => hit.bm25).map((hit) => hit.chunkId)).toEqual(Array.from({ length: 120 }, (_, i) => i + 1))
  expect(read).toBe(120)
  expect(distinctHits(undefined, [{ chunkId: 1 }], 0, () => 0)).toEqual([])
})

describe.skipIf(!TEST_DATABASE_URL)(`RAG ingest on PostgreSQL${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  let sql: Postgres
  beforeAll(async () => {
    sql = await freshPostgres()
  })

  async function collection(store: PostgresRagStore): Promise<CollectionRow> {
    const user = randomUUID()
    await sql`INSERT INTO users (id, email, password_hash, roles, created_at) VALUES (${user}, ${`${user}@example.com`}, 'x', '["user"]', ${new Date().toISOString()})`
    return store.createCollection(user, 'kb', embedder.id, embedder.dimensions)
  }

  /** How many of a collection's chunks hold each lexeme, counted from their stored tsvectors. */
  async function countedFrequencies(collectionId: number): Promise<Map<string, number>> {
    const rows = await sql`SELECT l AS lexeme, count(*)::int AS n FROM rag_chunks c CROSS JOIN LATERAL unnest(tsvector_to_array(c.tsv)) l WHERE c.collection_id = ${collectionId} GROUP BY l`
    return new Map(rows.map((row: { lexeme: string; n: number }) => [row.lexeme, row.n]))
  }

  /** The document frequencies the store keeps (summed term counts and the rows not summed yet). */
  async function keptFrequencies(collectionId: number): Promise<Map<string, number>> {
    const rows = await sql`SELECT lexeme, sum(n)::int AS n FROM (
        SELECT lexeme, df AS n FROM rag_terms WHERE collection_id = ${collectionId}
        UNION ALL SELECT b.lexeme, b.n FROM rag_term_batches t CROSS JOIN LATERAL unnest(t.lexemes, t.counts) AS b(lexeme, n) WHERE t.collection_id = ${collectionId}
      ) x GROUP BY lexeme HAVING sum(n) <> 0`
    return new Map(rows.map((row: { lexeme: string; n: number }) => [row.lexeme, row.n]))
  }

  test("every chunk's tsvector is exactly PostgreSQL's to_tsvector of its keyword text, whatever the text; term counts follow", async () => {
    const store = new PostgresRagStore(sql)
    const kb = await collection(store)
    const chunks = [
      'Backups run nightly at two; restore a backup with harbor restore and the snapshot id.',
      'Running runners ran: the RUNNER runs, relational relations relate. Generalizations generalize!',
      'Café naïve résumé Straße ÜBER İstanbul ﬁne œuvre — Ελληνικά кириллица 日本語のテキスト 한국어 emoji 🚀 done',
      'Numbers: 12e3x 1e5 0x1f v1.4.30 CVE-2024-3094 00123 3d 1st 2nd a1b2c3 foo42bar 123abc 1.5e-3 user@example.com http://example.com/a?b=c',
      `${'data '.repeat(300)}end`,
      `${'word '.repeat(254)}word`,
      `short ${'x'.repeat(2100)} after a very long word`,
      Array.from({ length: 17_000 }, (_, i) => `w${i % 50}`).join(' '),
      Array.from({ length: 17_000 }, (_, i) => `v${i % 100}`).join(' '),
      "it's O'Reilly's \"quoted\" back\\slash colon: semi;colon comma, and 'single' quotes",
      '   ',
      'the the the and of a an',
    ]
    const written = await documents(chunks)
    await store.writeDocuments(kb, written)
    // The same words again (now remembered), in another order and with new ones.
    const again = await documents([...chunks].reverse().map((chunk) => `${chunk} zebra quokka`), 'again')
    await store.writeDocuments(kb, again)
    const stored = await sql`SELECT c.id, c.content, c.tsv::text AS tsv, c.tokens FROM rag_chunks c WHERE c.collection_id = ${kb.id} ORDER BY c.id`
    expect(stored).toHaveLength(chunks.length * 2)
    const texts = stored.map((row: { content: string }) => keywordText(row.content))
    const differing = await sql`SELECT c.id, c.tsv::text AS stored, to_tsvector('rag_english', x.text)::text AS expected
      FROM rag_chunks c JOIN unnest(${stored.map((row: { id: number }) => row.id)}::int[], ${texts}::text[]) AS x(id, text) ON x.id = c.id
      WHERE c.tsv IS DISTINCT FROM to_tsvector('rag_english', x.text)`
    expect(differing).toEqual([])
    expect(stored.map((row: { tokens: number }) => row.tokens)).toEqual(texts.map((text: string) => (text ? text.split(' ').length : 0)))
    expect(await keptFrequencies(kb.id)).toEqual(await countedFrequencies(kb.id))
    // A write of one chunk without a word (its tsvector empty).
    await store.writeDocuments(kb, await documents(['—  …  !'], 'empty'))
    expect((await sql`SELECT tsv::text AS tsv, tokens FROM rag_chunks c JOIN rag_documents d ON d.id = c.document_id WHERE d.doc_id = 'empty-0'`)[0]).toEqual({ tsv: '', tokens: 0 })
    // What a user sees: the words are found, stemmed as PostgreSQL stems them.
    const terms = await store.queryTerms(kb, 'relations quokka 12e3x')
    expect(terms.terms.map((term) => [term.word, term.df])).toEqual([
      ['relations', 2],
      ['quokka', chunks.length],
      ['12e3x', 2],
    ])
  })

  test('an ingest of several write batches merges the keyword index once, after its end: nothing is left pending, and frequencies stay exact at every step', async () => {
    const store = new PostgresRagStore(sql)
    const kb = await collection(store)
    const pendingPages = async () => Number((await sql`SELECT gin_clean_pending_list('rag_chunks_tsv'::regclass) AS n`)[0].n)
    await pendingPages()
    // Two writes of an ingest with more to come: their entries wait in the index's pending list, still found.
    await store.writeDocuments(kb, await documents(['The harbour crane lifts containers.', 'Tugboats guide tankers into the harbour.'], 'a'), undefined, true)
    await store.writeDocuments(kb, await documents(['Cranes of the harbour are serviced in winter.'], 'b'), undefined, true)
    expect(await keptFrequencies(kb.id)).toEqual(await countedFrequencies(kb.id))
    expect((await store.queryTerms(kb, 'harbour')).terms[0]!.df).toBe(3)
    expect((await store.keywordCandidates(kb, await store.queryTerms(kb, 'tugboats'), 5)).length).toBe(1)
    expect(await pendingPages()).toBeGreaterThan(0)
    // After the last write of an ingest, the store merges them.
    await store.writeDocuments(kb, await documents(['Pilots board ships outside the harbour.'], 'c'), undefined, true)
    await store.writeDocuments(kb, await documents(['The harbour master keeps the tide tables.'], 'd'))
    await store.settled()
    expect(await pendingPages()).toBe(0)
    expect((await sql`SELECT count(*)::int AS n FROM rag_term_batches WHERE collection_id = ${kb.id}`)[0].n).toBe(0)
    expect(await keptFrequencies(kb.id)).toEqual(await countedFrequencies(kb.id))

    // Through the service: an ingest of more chunks than one write batch holds.
    const rag = new RagService<RagStore>({ db: openDatabase(':memory:'), store, embedder: async () => embedder, generator: async () => new ExtractiveGenerator() })
    // PostgreSQL's write batches are larger than SQLite's.
    expect(store.writeBatch).toBeGreaterThan(WRITE_BATCH)
    const many = Array.from({ length: store.writeBatch + 10 }, (_, i) => ({ id: `n${i}`, content: `Note ${i} about harbour ${i % 7 ? 'cranes' : 'pilots'} and berth ${i}.` }))
    expect(await rag.ingest(kb.user_id, 'kb', many)).toMatchObject({ ingested: many.length, failed: 0 })
    await store.settled()
    expect(await pendingPages()).toBe(0)
    expect(await keptFrequencies(kb.id)).toEqual(await countedFrequencies(kb.id))
    expect((await rag.search(kb.user_id, 'kb', 'berth 517', 1)).results[0]!.id).toBe('n517')
  })

  test('after an ingest of many chunks the planner learns how large the collection is, vacuumed and analyzed without waiting for autovacuum', async () => {
    const store = new PostgresRagStore(sql, { analyzeMinRows: 50 })
    const kb = await collection(store)
    const counted = async () => Number((await sql`SELECT greatest(reltuples, 0)::float8 AS n FROM pg_class WHERE oid = 'rag_chunks'::regclass`)[0].n)
    const [{ n: before }] = await sql`SELECT count(*)::int AS n FROM rag_chunks`
    await store.writeDocuments(
      kb,
      await documents(Array.from({ length: 120 }, (_, i) => `Chunk ${i} of the planner test.`)),
    )
    await store.settled()
    expect(await counted()).toBe(before + 120)
    // Vacuumed too (only VACUUM marks pages all-visible), so autovacuum has nothing left to do there.
    const [{ visible }] = await sql`SELECT relallvisible AS visible FROM pg_class WHERE oid = 'rag_chunks'::regclass`
    expect(Number(visible)).toBeGreaterThan(0)
  })
})
