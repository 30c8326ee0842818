// The approximate vector index of large SQLite collections (issue 54; store/sqlite/vector-index.ts),
// at small sizes: UAGENT_ANN_MIN_CHUNKS set low. Searches through it agree with exact search, and a
// file missing, cut short, damaged or behind the database is found out and repaired from the tables.
import { afterEach, describe, expect, test } from 'bun:test'
import { readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { openDatabase, type Database } from '../../../src/db'
import { ExtractiveGenerator } from '../../../src/ml/builtin/extractive-generator'
import { HashEmbedder } from '../../../src/ml/builtin/hash-embedder'
import { RagService } from '../../../src/modules/rag/service'
import type { CollectionRow } from '../../../src/modules/rag/store'
import { SqliteRagStore } from '../../../src/modules/rag/store/sqlite'
import { DEFAULT_VECTOR_INDEX, indexFolderOf, RESCORE_DEPTH, type VectorIndexOptions } from '../../../src/modules/rag/store/sqlite/vector-index'
import { loadIndexLibrary, type UsearchLibrary } from '../../../src/modules/rag/store/sqlite/vector-index-library'
import { scaleDocuments } from '../../../bench/rag-scale-corpus'
import { tempDir } from '../../temp'

const MIN = 300
const embedder = new HashEmbedder()
const opened: { db: Database; rag: RagService }[] = []

function open(file: string, index: Partial<VectorIndexOptions> = {}) {
  const db = openDatabase(file)
  for (const user of ['u', 'v']) db.run("INSERT OR IGNORE INTO users (id, email, password_hash, roles, created_at) VALUES (?, ?, 'x', '[\"user\"]', '')", [user, `${user}@example.com`])
  const rag = new RagService({
    db,
    embedder: async () => embedder,
    generator: async () => new ExtractiveGenerator(),
    // No in-memory copy: the exact path is sqlite-vec's scan, the index path the index.
    vectorCache: { minRows: Number.POSITIVE_INFINITY, budgetBytes: 0 },
    vectorIndex: { ...DEFAULT_VECTOR_INDEX, minChunks: MIN, buildThreads: 1, log: () => {}, ...index },
  })
  opened.push({ db, rag })
  return { db, rag, store: rag.store as SqliteRagStore }
}

function close(handle: { db: Database; rag: RagService }) {
  ;(handle.rag.store as SqliteRagStore).close()
  handle.db.close()
  opened.splice(opened.indexOf(handle), 1)
}

afterEach(() => {
  for (const handle of [...opened]) close(handle)
})

/** The exact nearest chunks: the same database searched by sqlite-vec alone. */
function exactNearest(db: Database, collection: CollectionRow, vector: Float32Array, k: number) {
  const exact = new SqliteRagStore(db, { minRows: Number.POSITIVE_INFINITY, budgetBytes: 0 }, undefined, { ...DEFAULT_VECTOR_INDEX, enabled: false })
  try {
    return exact.nearest(collection, vector, k)
  } finally {
    exact.close()
  }
}

async function vectorOf(text: string) {
  return (await embedder.embed([text]))[0]!
}

async function ingest(rag: RagService, user: string, name: string, from: number, to: number) {
  const documents = scaleDocuments(from, to, 7).map((document) => ({ ...document, metadata: { ...document.metadata } }))
  for (let i = 0; i < documents.length; i += 250) await rag.ingest(user, name, documents.slice(i, i + 250))
}

async function ready(store: SqliteRagStore, collection: CollectionRow) {
  store.indexes.flush()
  await store.indexes.settled(60_000)
  expect(store.indexes.status(collection.id)).toBe('ready')
}

/** Recall@10 of the store's search against exact search over some queries, and whether every distance returned is the exact one. */
async function agreement(db: Database, store: SqliteRagStore, collection: CollectionRow, queries: string[]) {
  let recalled = 0
  let exactDistances = true
  for (const query of queries) {
    const vector = await vectorOf(query)
    const found = store.nearest(collection, vector, 10)
    const exact = exactNearest(db, collection, vector, 10)
    const exactIds = new Set(exact.map((hit) => hit.chunkId))
    recalled += found.filter((hit) => exactIds.has(hit.chunkId)).length / exact.length
    const exactOf = new Map(exactNearest(db, collection, vector, 50).map((hit) => [hit.chunkId, hit.distance!]))
    for (const hit of found) if (exactOf.has(hit.chunkId) && Math.abs(exactOf.get(hit.chunkId)! - hit.distance!) > 1e-5) exactDistances = false
  }
  return { recall: recalled / queries.length, exactDistances }
}

const queries = (from: number, count: number) =>
  scaleDocuments(from, from + count, 7).map((document) =>
    document.content
      .split(' ')
      .slice(5, 15)
      .join(' '),
  )

describe('approximate vector index (SQLite)', () => {
  test('a collection past the size is served by its index, and agrees with exact search', async () => {
    const file = join(tempDir('ann'), 'uagent.db')
    const { db, rag, store } = open(file)
    await ingest(rag, 'u', 'big', 0, 200)
    const collection = store.findCollection('u', 'big')!
    expect(store.indexes.status(collection.id)).toBe('exact')
    await ingest(rag, 'u', 'big', 200, 600)
    await ready(store, collection)
    expect(readdirSync(indexFolderOf(file)).filter((name) => name.endsWith('.usearch'))).toHaveLength(1)
    const { recall, exactDistances } = await agreement(db, store, collection, queries(0, 40))
    expect(recall).toBeGreaterThanOrEqual(0.95)
    expect(exactDistances).toBe(true)
    // The hybrid search finds a document by its own words first.
    const [first] = (await rag.search('u', 'big', scaleDocuments(123, 124, 7)[0]!.content, 5)).results
    expect(first!.id).toBe('scale-123')
    expect(store.indexes.state()).toMatchObject({ path: 'usearch', indexes: { ready: 1, building: 0 } })
  })

  test('writes after the file are searched at once, deletes disappear, and both reach the next file', async () => {
    const file = join(tempDir('ann'), 'uagent.db')
    const { db, rag, store } = open(file)
    await ingest(rag, 'u', 'big', 0, 400)
    const collection = store.findCollection('u', 'big')!
    await ready(store, collection)
    // A new document, not in the file yet: found first by its own text.
    await rag.ingest('u', 'big', [{ id: 'fresh', content: 'zyxwv quokka marmalade telescope harbour lantern' }])
    const fresh = await vectorOf('zyxwv quokka marmalade telescope harbour lantern')
    const [hit] = store.nearest(collection, fresh, 5)
    expect(store.chunks([hit!.chunkId]).get(hit!.chunkId)!.docId).toBe('fresh')
    // A document deleted: its chunk is gone from the results before and after the next file.
    const target = await vectorOf(scaleDocuments(42, 43, 7)[0]!.content)
    const before = store.nearest(collection, target, 5)
    expect(store.chunks([before[0]!.chunkId]).get(before[0]!.chunkId)!.docId).toBe('scale-42')
    expect(rag.deleteDocument('u', 'big', 'scale-42').success).toBe(true)
    expect(store.nearest(collection, target, 50).map((h) => h.chunkId)).not.toContain(before[0]!.chunkId)
    await ready(store, collection)
    expect(store.nearest(collection, target, 50).map((h) => h.chunkId)).not.toContain(before[0]!.chunkId)
    const again = store.nearest(collection, fresh, 5)
    expect(again[0]!.chunkId).toBe(hit!.chunkId)
    expect(db.query('SELECT count(*) AS n FROM rag_vector_changes').get()).toEqual({ n: 0 })
    const { recall } = await agreement(db, store, collection, queries(100, 20))
    expect(recall).toBeGreaterThanOrEqual(0.95)
  })

  test("another user's collection never appears", async () => {
    const file = join(tempDir('ann'), 'uagent.db')
    const { db, rag, store } = open(file)
    await ingest(rag, 'u', 'docs', 0, 350)
    // The other user's collection holds the very same texts.
    await ingest(rag, 'v', 'docs', 0, 350)
    const mine = store.findCollection('u', 'docs')!
    const theirs = store.findCollection('v', 'docs')!
    await ready(store, mine)
    await ready(store, theirs)
    const own = new Set(db.query<{ id: number }, [number]>('SELECT id FROM rag_chunks WHERE collection_id = ?').all(mine.id).map((row) => row.id))
    for (const query of queries(0, 20)) {
      for (const hit of store.nearest(mine, await vectorOf(query), 20)) expect(own.has(hit.chunkId)).toBe(true)
    }
    const results = (await rag.search('u', 'docs', queries(3, 1)[0]!, 20)).results
    expect(results.length).toBe(20)
  })

  for (const damage of ['deleted', 'truncated', 'overwritten'] as const) {
    test(`an index file ${damage} is found out at start and rebuilt from the tables`, async () => {
      const file = join(tempDir('ann'), 'uagent.db')
      const first = open(file)
      await ingest(first.rag, 'u', 'big', 0, 400)
      const collection = first.store.findCollection('u', 'big')!
      await ready(first.store, collection)
      close(first)
      const folder = indexFolderOf(file)
      const [name] = readdirSync(folder)
      const path = join(folder, name!)
      if (damage === 'deleted') rmSync(path)
      else if (damage === 'truncated') truncateSync(path, 1000)
      else writeFileSync(path, Buffer.alloc(Bun.file(path).size, 7))
      const second = open(file)
      // Exact meanwhile: the file is checked (and rebuilt) on the index thread.
      expect(second.store.indexes.status(collection.id)).not.toBe('ready')
      const vector = await vectorOf(queries(5, 1)[0]!)
      expect(second.store.nearest(collection, vector, 10)).toEqual(exactNearest(second.db, collection, vector, 10))
      await second.store.indexes.settled(60_000)
      expect(second.store.indexes.status(collection.id)).toBe('ready')
      expect(readdirSync(folder)).not.toContain(name)
      const { recall } = await agreement(second.db, second.store, collection, queries(0, 20))
      expect(recall).toBeGreaterThanOrEqual(0.95)
    })
  }

  test('documents committed while the index was not updated (a crash) are found after the restart, and reach the file', async () => {
    const file = join(tempDir('ann'), 'uagent.db')
    const first = open(file)
    await ingest(first.rag, 'u', 'big', 0, 400)
    const collection = first.store.findCollection('u', 'big')!
    await ready(first.store, collection)
    // Committed, then the process "dies" before any index work: the thread is stopped at once.
    await ingest(first.rag, 'u', 'big', 400, 450)
    close(first)
    // A server without the index library (or with it off) writes too: its writes are logged as well.
    const blind = open(file, { enabled: false })
    await ingest(blind.rag, 'u', 'big', 450, 480)
    expect(blind.store.indexes.state()).toMatchObject({ path: 'exact', reason: 'turned off (UAGENT_VECTOR_INDEX=off)' })
    close(blind)
    const second = open(file)
    await second.store.indexes.settled(60_000)
    expect(second.store.indexes.status(collection.id)).toBe('ready')
    // Every committed document is found first by its own text, through the index.
    for (const i of [401, 420, 449, 455, 479]) {
      const text = scaleDocuments(i, i + 1, 7)[0]!.content
      const [hit] = second.store.nearest(collection, await vectorOf(text), 1)
      expect(second.store.chunks([hit!.chunkId]).get(hit!.chunkId)!.docId).toBe(`scale-${i}`)
    }
    await ready(second.store, collection)
    expect(second.db.query('SELECT rows FROM rag_vector_indexes WHERE collection_id = ?').get(collection.id)).toEqual({ rows: 480 })
    const { recall } = await agreement(second.db, second.store, collection, queries(440, 20))
    expect(recall).toBeGreaterThanOrEqual(0.95)
  })

  test('without the index library every collection is searched exactly, and the store says why', async () => {
    const file = join(tempDir('ann'), 'uagent.db')
    const { db, rag, store } = open(file, { library: () => null })
    await ingest(rag, 'u', 'big', 0, 400)
    const collection = store.findCollection('u', 'big')!
    await store.indexes.settled(5_000)
    expect(store.indexes.status(collection.id)).toBe('exact')
    expect(store.indexes.state()).toMatchObject({ path: 'exact', indexes: { ready: 0, building: 0 } })
    expect(store.indexes.state().reason).toContain('usearch')
    const vector = await vectorOf(queries(9, 1)[0]!)
    expect(store.nearest(collection, vector, 10)).toEqual(exactNearest(db, collection, vector, 10))
  })

  test('the search expansion sets how deep the graph is walked; the best candidates of the walk are rescored', async () => {
    // The library as the store sees it, each search's k (the depth of the walk) noted.
    const asked: number[] = []
    const real = loadIndexLibrary()!
    const Index = function (options: ConstructorParameters<UsearchLibrary['Index']>[0]) {
      const index = new real.Index(options)
      const search = index.search.bind(index)
      index.search = (vector, k, threads) => {
        asked.push(k)
        return search(vector, k, threads)
      }
      return index
    } as unknown as UsearchLibrary['Index']
    const library: UsearchLibrary = { Index }
    const file = join(tempDir('ann'), 'uagent.db')
    const first = open(file, { library: () => library, searchExpansion: 300 })
    await ingest(first.rag, 'u', 'big', 0, 400)
    const collection = first.store.findCollection('u', 'big')!
    await ready(first.store, collection)
    const vector = await vectorOf(queries(3, 1)[0]!)
    const deep = first.store.nearest(collection, vector, 10)
    expect(asked).toEqual([300])
    close(first)
    // Searched again with a shallow walk: the candidates rescored are the walk's best RESCORE_DEPTH.
    const second = open(file, { library: () => library, searchExpansion: 16 })
    await second.store.indexes.settled(60_000)
    const shallow = second.store.nearest(collection, vector, 10)
    expect(asked).toEqual([300, RESCORE_DEPTH])
    expect(shallow.length).toBe(10)
    // The exact ten are found by the deep walk; the distances are exact either way.
    expect(deep.map((hit) => hit.chunkId)).toEqual(exactNearest(second.db, collection, vector, 10).map((hit) => hit.chunkId))
    const exactOf = new Map(exactNearest(second.db, collection, vector, 400).map((hit) => [hit.chunkId, hit.distance!]))
    for (const hit of shallow) expect(hit.distance!).toBeCloseTo(exactOf.get(hit.chunkId)!, 5)
  })

  test('deleting an indexed collection removes its file and its log', async () => {
    const file = join(tempDir('ann'), 'uagent.db')
    const { db, rag, store } = open(file)
    await ingest(rag, 'u', 'big', 0, 350)
    const collection = store.findCollection('u', 'big')!
    await ready(store, collection)
    rag.deleteCollection('u', 'big')
    expect(readdirSync(indexFolderOf(file))).toEqual([])
    expect(db.query('SELECT count(*) AS n FROM rag_vector_indexes').get()).toEqual({ n: 0 })
    expect(db.query('SELECT count(*) AS n FROM rag_vector_rows').get()).toEqual({ n: 0 })
  })
})
