// Keyword top-k of large collections (store/sqlite/keyword-topk.ts, postings.ts): block-max
// MaxScore gives exactly the best k of an exhaustive BM25 over every informative word (ids and
// scores, also against FTS5's own bm25()), for common, rare and absent words, after deletes and
// after more ingest; kept postings that a write made stale are dropped and read again.
import type { Database } from 'bun:sqlite'
import { describe, expect, spyOn, test } from 'bun:test'
import { join } from 'node:path'
import { openDatabase } from '../../../src/db'
import { ExtractiveGenerator } from '../../../src/ml/builtin/extractive-generator'
import { HashEmbedder } from '../../../src/ml/builtin/hash-embedder'
import { idf, keywordPlan } from '../../../src/modules/rag/ranking/scoring'
import { RagService } from '../../../src/modules/rag/service'
import { SqliteRagStore } from '../../../src/modules/rag/store/sqlite'
import { BLOCK, readVarint, type TermPostings, topScores } from '../../../src/modules/rag/store/sqlite/postings'
import { ACCUMULATOR_SLOTS, accumulatedScores } from '../../../src/modules/rag/store/sqlite/accumulated-scores'
import type { CollectionRow } from '../../../src/modules/rag/store'
import { tempDir } from '../../temp'
import { random as generator } from '../../fixtures/identifier-corpus'

const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'ta', 'vo', 'zi', 'pe', 'du']
/** The i-th word of the vocabulary: made of syllables, none an English function word, none stemmed by porter. */
const word = (i: number) => `${SYLLABLES[i % 10]}${SYLLABLES[Math.floor(i / 10) % 10]}${SYLLABLES[Math.floor(i / 100) % 10]}x`
const VOCABULARY = 400

/** A document of 8 to 40 words, drawn with weights 1/(rank + 20): the commonest word in about a third of them. */
function documentText(random: () => number): string {
  const weights = Array.from({ length: VOCABULARY }, (_, i) => 1 / (i + 20))
  const total = weights.reduce((a, b) => a + b, 0)
  const length = 8 + Math.floor(random() * 33)
  return Array.from({ length }, () => {
    let u = random() * total
    for (let i = 0; i < VOCABULARY; i++) if ((u -= weights[i]!) <= 0) return word(i)
    return word(VOCABULARY - 1)
  }).join(' ')
}

const embedder = new HashEmbedder()
/** Postings ranked by the plan: few, so that common words' queries are capped, as at a million chunks. */
const POSTINGS = 40
const TOPK = { budgetBytes: 64 * 1024 * 1024, minChunks: 1, keptFrom: 25 }

function service(path: string, budgetBytes = TOPK.budgetBytes) {
  const db = openDatabase(path)
  db.run("INSERT OR IGNORE INTO users (id, email, password_hash, roles, created_at) VALUES ('u', 'u@example.com', 'x', '[\"user\"]', '')")
  const rag = new RagService({ db, embedder: async () => embedder, generator: async () => new ExtractiveGenerator(), keywordPostings: POSTINGS, keywordTopK: { ...TOPK, budgetBytes } })
  return { db, rag, store: rag.store as SqliteRagStore }
}

/** Ingests `count` random documents named `prefix<i>`, in requests of at most 1,000. */
async function ingestRandom(rag: RagService, prefix: string, count: number, random: () => number) {
  for (let start = 0; start < count; start += 1000) {
    await rag.ingest('u', 'kb', Array.from({ length: Math.min(1000, count - start) }, (_, i) => ({ id: `${prefix}${start + i}`, content: documentText(random) })))
  }
}

/** BM25 of every chunk of the collection over the query's words found in it, summed in their order, read from the index itself: best k, ties by id. */
function exhaustive(db: Database, collection: CollectionRow, tokens: string[], k: number): { chunkId: number; score: number }[] {
  const table = `rag_fts_${collection.id}`
  db.run(`CREATE VIRTUAL TABLE IF NOT EXISTS temp.${table}_test_instances USING fts5vocab(main, ${table}, instance)`)
  const lengths = new Map(db.query<{ id: number; sz: Uint8Array }, []>(`SELECT id, sz FROM ${table}_docsize`).all().map((row) => [row.id, readVarint(row.sz, 0)[0]]))
  const rows = lengths.size
  let tokensInAll = 0
  for (const length of lengths.values()) tokensInAll += length
  const averageLength = tokensInAll / rows
  const counts = tokens.map((token) => {
    const tf = new Map<number, number>()
    for (const { doc } of db.query<{ doc: number }, [string]>(`SELECT doc FROM temp.${table}_test_instances WHERE term = ?`).all(token)) tf.set(doc, (tf.get(doc) ?? 0) + 1)
    return tf
  })
  const scores: { chunkId: number; score: number }[] = []
  for (const [chunkId, length] of lengths) {
    let score = 0
    let held = false
    counts.forEach((tf) => {
      const n = tf.get(chunkId)
      if (!n) return
      held = true
      score += (idf(tf.size, rows) * (n * (1.2 + 1))) / (n + 1.2 * (1 - 0.75 + (0.75 * length) / averageLength))
    })
    if (held) scores.push({ chunkId, score })
  }
  return scores.sort((a, b) => b.score - a.score || a.chunkId - b.chunkId).slice(0, k)
}

/** Random queries: common words only, rare words only, a mix, and words the collection lacks. */
function queries(random: () => number, count: number): string[] {
  const pick = (from: number, to: number) => word(from + Math.floor(random() * (to - from)))
  return Array.from({ length: count }, (_, i) => {
    const kind = i % 4
    const size = 1 + Math.floor(random() * 5)
    const words = Array.from({ length: size }, () => (kind === 0 ? pick(0, 25) : kind === 1 ? pick(200, VOCABULARY) : pick(0, VOCABULARY)))
    if (kind === 3) words.push(`absent${Math.floor(random() * 1000)}q`)
    return words.join(' ')
  })
}

/**
 * Checks the store's keyword candidates against the exhaustive scorer (and FTS5's bm25()) for each
 * query whose candidates are exact: those of capped plans (top-k), and those whose plan holds every
 * word found (FTS5 ranks all their matches). Others (rare words find the candidates, common ones
 * only rescore them) are searched as before. How many capped queries were checked.
 */
async function compare(db: Database, store: SqliteRagStore, collection: CollectionRow, texts: string[], k: number): Promise<number> {
  let capped = 0
  for (const text of texts) {
    const terms = store.queryTerms(collection, text)
    const plan = keywordPlan(terms.terms, terms.chunks, POSTINGS)
    const found = terms.terms.filter((term) => term.df > 0)
    if (!plan.capped && found.some((term) => !plan.words.includes(term.word))) continue
    if (plan.capped) capped++
    const got = await store.keywordCandidates(collection, terms, k, undefined)
    const tokens = found.map((term) => term.tokens[0]!)
    const expected = exhaustive(db, collection, tokens, k)
    expect(got.map((hit) => hit.chunkId)).toEqual(expected.map((hit) => hit.chunkId))
    got.forEach((hit, i) => expect(-hit.bm25).toBeCloseTo(expected[i]!.score, 9))
    // FTS5's own bm25() of the same chunks agrees.
    const table = `rag_fts_${collection.id}`
    if (got.length) {
      const fts = new Map(
        db
          .query<{ id: number; rank: number }, [string]>(`SELECT rowid AS id, bm25(${table}) AS rank FROM ${table} WHERE ${table} MATCH ?`)
          .all(tokens.map((token) => `"${token}"`).join(' OR '))
          .map((row) => [row.id, row.rank]),
      )
      for (const hit of got) expect(hit.bm25).toBeCloseTo(fts.get(hit.chunkId)!, 9)
    }
  }
  return capped
}

/** A database file with 1,200 random documents in collection "kb", and the generator that made them (for the queries). */
async function randomCollection(seed: number) {
  const path = join(tempDir('keyword-topk'), 'uagent.db')
  const { db, rag, store } = service(path)
  const random = generator(seed)
  await ingestRandom(rag, 'd', 1200, random)
  return { path, db, rag, store, random, collection: rag.collection('u', 'kb') }
}

/** Searches each query once, so that the postings they need are read on the warm-up thread, and waits for them. */
async function warm(store: SqliteRagStore, collection: CollectionRow, texts: string[]) {
  for (const text of texts) await store.keywordCandidates(collection, store.queryTerms(collection, text), 10, undefined)
  await store.keywords.topk.settled()
}

describe('keyword top-k (SQLite, large collections)', () => {
  test('a plan not capped: its rare words\' best matches come from their postings, rescored with every word, the same candidates as its FTS5 query gives', async () => {
    const { db, store, random, collection } = await randomCollection(31)
    // Rare words with common ones: the rare ones find the candidates, the common ones only rescore them.
    const texts = Array.from({ length: 40 }, () => `${word(200 + Math.floor(random() * 200))} ${word(Math.floor(random() * 10))} ${word(Math.floor(random() * 25))}`)
    await warm(store, collection, texts)
    // The same database through FTS5 alone: top-k off.
    const plain = new SqliteRagStore(db, undefined, POSTINGS, undefined, { ...TOPK, budgetBytes: 0 })
    const search = spyOn(store.keywords.topk, 'search')
    let checked = 0
    for (const text of texts) {
      const terms = store.queryTerms(collection, text)
      const plan = keywordPlan(terms.terms, terms.chunks, POSTINGS)
      if (plan.capped || plan.words.length === plan.scored.length) continue
      checked++
      const calls = search.mock.calls.length
      const got = await store.keywordCandidates(collection, terms, 10, undefined)
      expect(search.mock.calls.length).toBe(calls + 1)
      const expected = await plain.keywordCandidates(collection, plain.queryTerms(collection, text), 10, undefined)
      expect(got.map((hit) => hit.chunkId)).toEqual(expected.map((hit) => hit.chunkId))
      got.forEach((hit, i) => expect(hit.bm25).toBeCloseTo(expected[i]!.bm25, 9))
    }
    expect(checked).toBeGreaterThan(20)
    search.mockRestore()
    plain.close()
    store.close()
  })

  test('block-max MaxScore returns the exhaustive top k, ids and scores, on random postings (ties, repeated terms, deleted chunks)', () => {
    const random = generator(7)
    for (let round = 0; round < 300; round++) {
      const universe = 50 + Math.floor(random() * 3000)
      const lists = Array.from({ length: 1 + Math.floor(random() * 6) }, () => {
        const share = random() < 0.3 ? 0.01 + random() * 0.05 : 0.05 + random() * 0.9
        const ids: number[] = []
        for (let id = 1; id <= universe; id++) if (random() < share) ids.push(id * 3)
        return ids
      })
      // A repeated term (one word twice in a query: FTS5 counts it twice).
      if (random() < 0.2) lists.push(lists[0]!)
      const lengthOf = (id: number) => 5 + ((id * 7919) % (random() < 0.5 ? 3 : 60))
      const lengthById = new Map<number, number>()
      const postings: TermPostings[] = lists.map((ids) => {
        const tfs = Uint16Array.from(ids, () => (random() < 0.8 ? 1 : 1 + Math.floor(random() * 4)))
        const lengths = Uint16Array.from(ids, (id) => {
          if (!lengthById.has(id)) lengthById.set(id, lengthOf(id))
          return lengthById.get(id)!
        })
        const blocks = Math.ceil(ids.length / BLOCK)
        const blockMaxTf = new Uint16Array(blocks)
        const blockMinLength = new Uint16Array(blocks).fill(0xffff)
        for (let i = 0; i < ids.length; i++) {
          const b = Math.floor(i / BLOCK)
          blockMaxTf[b] = Math.max(blockMaxTf[b]!, tfs[i]!)
          blockMinLength[b] = Math.min(blockMinLength[b]!, lengths[i]!)
        }
        return { ids: Uint32Array.from(ids), tfs, lengths, blockMaxTf, blockMinLength }
      })
      const idfs = postings.map(() => (random() < 0.1 ? 1e-6 : 0.1 + random() * 8))
      const averageLength = 20 + random() * 20
      const deleted = random() < 0.3 ? new Set(Array.from({ length: 40 }, () => 3 * (1 + Math.floor(random() * universe)))) : null
      const k = 1 + Math.floor(random() * 60)
      const scores = new Map<number, number>()
      const ids = [...new Set(lists.flat())].sort((a, b) => a - b)
      for (const id of ids) {
        if (deleted?.has(id)) continue
        let score = 0
        postings.forEach((list, t) => {
          const i = list.ids.indexOf(id)
          if (i >= 0) score += (idfs[t]! * (list.tfs[i]! * (1.2 + 1))) / (list.tfs[i]! + 1.2 * (1 - 0.75 + (0.75 * list.lengths[i]!) / averageLength))
        })
        scores.set(id, score)
      }
      const expected = [...scores].sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, k)
      const got = topScores(
        postings.map((list, t) => ({ postings: list, idf: idfs[t]! })),
        k,
        averageLength,
        deleted,
      )
      expect([...got.ids]).toEqual(expected.map(([id]) => id))
      expect([...got.scores]).toEqual(expected.map(([, score]) => score))
      // Term at a time: the same ids and the same floats.
      const accumulated = accumulatedScores(
        postings.map((list, t) => ({ postings: list, idf: idfs[t]! })),
        k,
        averageLength,
        deleted,
      )!
      expect([...accumulated.ids]).toEqual(expected.map(([id]) => id))
      expect([...accumulated.scores]).toEqual(expected.map(([, score]) => score))
    }
  })

  test('term at a time declines postings spanning more chunk ids than its accumulator holds', () => {
    const list = (ids: number[]): TermPostings => ({
      ids: Uint32Array.from(ids),
      tfs: Uint16Array.from(ids, () => 1),
      lengths: Uint16Array.from(ids, () => 10),
      blockMaxTf: Uint16Array.of(1),
      blockMinLength: Uint16Array.of(10),
    })
    const near = [{ postings: list([5, 9]), idf: 2 }, { postings: list([9, ACCUMULATOR_SLOTS + 4]), idf: 1 }]
    expect([...accumulatedScores(near, 2, 10, null)!.ids]).toEqual([9, 5])
    const far = [{ postings: list([5, 9]), idf: 2 }, { postings: list([9, ACCUMULATOR_SLOTS + 5]), idf: 1 }]
    expect(accumulatedScores(far, 2, 10, null)).toBeNull()
    expect([...topScores(far, 2, 10, null).ids]).toEqual([9, 5])
  })

  test('in memory: the store gives the exhaustive BM25 top k for random queries, after deletes and after more ingest', async () => {
    const { db, rag, store } = service(':memory:')
    const random = generator(11)
    await ingestRandom(rag, 'd', 1500, random)
    const collection = rag.collection('u', 'kb')
    for (const term of store.queryTerms(collection, Array.from({ length: VOCABULARY }, (_, i) => word(i)).join(' ')).terms) expect(term.df).toBeLessThan(750)
    const texts = queries(random, 120)
    expect(await compare(db, store, collection, texts, 10)).toBeGreaterThan(30)
    await compare(db, store, collection, texts.slice(0, 30), 50)
    expect(store.keywords.topk.keptBytes).toBeGreaterThan(0)
    // Deleted: never returned, the rest still exact (the kept postings skip them).
    for (let i = 0; i < 1500; i += 7) rag.deleteDocument('u', 'kb', `d${i}`)
    expect(store.keywords.topk.keptBytes).toBeGreaterThan(0)
    await compare(db, store, collection, texts, 10)
    // More ingest: the kept postings are stale, dropped, read again.
    await ingestRandom(rag, 'e', 400, random)
    expect(store.keywords.topk.keptBytes).toBe(0)
    await compare(db, store, collection, texts, 10)
    expect(store.keywords.topk.keptBytes).toBeGreaterThan(0)
    // A replaced document (deleted and written again in one batch).
    await rag.ingest('u', 'kb', [{ id: 'e1', content: `${word(0)} ${word(0)} ${word(1)} ${word(1)} ${word(2)}` }])
    await compare(db, store, collection, texts, 10)
  })

  test('a budget smaller than the postings: the least recently used are dropped, never past the budget, results still exact', async () => {
    const { db, rag, store } = service(':memory:', 40_000)
    const random = generator(5)
    await ingestRandom(rag, 'd', 1500, random)
    const collection = rag.collection('u', 'kb')
    const texts = queries(random, 60)
    expect(await compare(db, store, collection, texts, 10)).toBeGreaterThan(15)
    expect(store.keywords.topk.keptBytes).toBeGreaterThan(0)
    expect(store.keywords.topk.keptBytes).toBeLessThanOrEqual(40_000)
  })

  test('a database file: postings read on the warm-up thread, top k found on the keyword thread, the same as exhaustive; rebuilt after writes and for a collection made again', async () => {
    const { path, db, rag, store, random, collection: first } = await randomCollection(23)
    let collection = first
    const texts = queries(random, 60)
    // The first searches ask for the postings (and search as before meanwhile).
    await warm(store, collection, texts)
    expect(store.keywords.topk.keptBytes).toBeGreaterThan(0)
    expect(await compare(db, store, collection, texts, 10)).toBeGreaterThan(15)
    for (let i = 0; i < 1200; i += 5) rag.deleteDocument('u', 'kb', `d${i}`)
    await compare(db, store, collection, texts, 10)
    await ingestRandom(rag, 'e', 300, random)
    expect(store.keywords.topk.keptBytes).toBe(0)
    await warm(store, collection, texts)
    expect(store.keywords.topk.keptBytes).toBeGreaterThan(0)
    await compare(db, store, collection, texts, 10)
    // The collection deleted and made again (SQLite may give it the same id): nothing of the old one is kept.
    rag.deleteCollection('u', 'kb')
    expect(store.keywords.topk.keptBytes).toBe(0)
    await ingestRandom(rag, 'f', 600, random)
    collection = rag.collection('u', 'kb')
    await warm(store, collection, texts)
    await compare(db, store, collection, texts, 10)
    store.close()
    // Another process over the same file (a restart, a restored backup): nothing kept, the postings read again from the index.
    const again = service(path)
    const reopened = again.rag.collection('u', 'kb')
    expect(again.store.keywords.topk.keptBytes).toBe(0)
    await warm(again.store, reopened, texts)
    expect(again.store.keywords.topk.keptBytes).toBeGreaterThan(0)
    expect(await compare(again.db, again.store, reopened, texts, 10)).toBeGreaterThan(15)
    again.store.close()
  })
})
