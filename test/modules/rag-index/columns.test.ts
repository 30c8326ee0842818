// Large collections' int8 columns (issue 54; vectors/cache.ts `VectorCache.columns`, `columnsNearest`):
// read into memory in the background, following every write meanwhile, within the budget; a sparse
// query is answered by scanning them and rescoring the best candidates with their stored vectors, a
// dense one by the index's walk.
import { afterEach, describe, expect, spyOn, test } from 'bun:test'
import { join } from 'node:path'
import { openDatabase, type Database } from '../../../src/db'
import { ExtractiveGenerator } from '../../../src/ml/builtin/extractive-generator'
import { HashEmbedder } from '../../../src/ml/builtin/hash-embedder'
import { RagService } from '../../../src/modules/rag/service'
import { SqliteRagStore } from '../../../src/modules/rag/store/sqlite'
import { DEFAULT_VECTOR_INDEX } from '../../../src/modules/rag/store/sqlite/vector-index'
import { caughtUp } from '../../../src/modules/rag/store/sqlite/vector-index-catch-up'
import { loadIndexLibrary } from '../../../src/modules/rag/store/sqlite/vector-index-library'
import { cosineDistance } from '../../../src/modules/rag/ranking/scoring'
import { columnsNearest, isSparse, type Matrix, VectorCache } from '../../../src/modules/rag/vectors/cache'
import { scaleDocuments } from '../../../bench/rag-scale-corpus'
import { tempDir } from '../../temp'

const embedder = new HashEmbedder()
const DIMS = 384

/** Rows as a database would hold them: float32 bytes by chunk id, read in pages of ids above `after`. */
class Table {
  readonly rows = new Map<number, Float32Array>()
  pages = 0
  page(after: number, limit: number): { id: number; bytes: Uint8Array }[] {
    this.pages++
    return [...this.rows.keys()]
      .filter((id) => id > after)
      .sort((a, b) => a - b)
      .slice(0, limit)
      .map((id) => ({ id, bytes: new Uint8Array(this.rows.get(id)!.buffer.slice(0)) }))
  }
  vectorsOf = (ids: number[]) => new Map(ids.filter((id) => this.rows.has(id)).map((id) => [id, this.rows.get(id)!]))
}

/** The exact nearest `k` by cosine similarity, best first (ties by chunk id), over every row. */
function exact(table: Table, query: Float32Array, k: number) {
  return [...table.rows]
    .map(([id, vector]) => ({ id, similarity: 1 - (cosineDistance(vector, query) ?? 1) }))
    .sort((a, b) => b.similarity - a.similarity || a.id - b.id)
    .slice(0, k)
}

async function loaded(cache: VectorCache, load: () => Matrix | null): Promise<Matrix> {
  for (let i = 0; i < 2_000; i++) {
    const matrix = load()
    if (matrix) return matrix
    await Bun.sleep(1)
  }
  throw new Error('the columns never loaded')
}

async function tableOf(from: number, to: number): Promise<Table> {
  const table = new Table()
  const documents = scaleDocuments(from, to, 3)
  const vectors = await embedder.embed(documents.map((document) => document.content))
  vectors.forEach((vector, i) => table.rows.set(10 + (from + i) * 3, vector))
  return table
}

const queryTexts = (from: number, count: number) => scaleDocuments(from, from + count, 3).map((document) => document.content.split(' ').slice(4, 12).join(' '))

describe('int8 columns of large collections', () => {
  test('loaded in the background a page at a time, then a sparse query gets the exact best chunks with their exact distances', async () => {
    const table = await tableOf(0, 5_000)
    const cache = new VectorCache({ minRows: 0, budgetBytes: 64 * 1024 * 1024 })
    const load = () => cache.columns(1, () => table.rows.size, DIMS, (after, limit) => table.page(after, limit))
    // The first call only starts it: nothing is read on the caller's turn.
    expect(load()).toBeNull()
    expect(table.pages).toBe(0)
    expect(cache.columnsState()).toEqual({ ready: 0, loading: 1 })
    const matrix = await loaded(cache, load)
    expect(table.pages).toBeGreaterThanOrEqual(3) // 5,000 rows in pages of 2,048
    expect(matrix.columnsOnly).toBe(true)
    expect(matrix.rows).toBe(5_000)
    expect(matrix.vectors.length).toBe(0)
    expect(cache.columnsState()).toEqual({ ready: 1, loading: 0 })
    expect(cache.usedBytes).toBeGreaterThan(5_000 * DIMS)
    expect(cache.usedBytes).toBeLessThan(5_000 * DIMS * 2)
    let recalled = 0
    const texts = queryTexts(0, 60)
    for (const text of texts) {
      const query = (await embedder.embed([text]))[0]!
      expect(isSparse(query)).toBe(true)
      const found = columnsNearest(matrix, query, 10, table.vectorsOf)
      const best = exact(table, query, 10)
      const tenth = best[9]!.similarity - 1e-6
      recalled += found.filter((hit) => 1 - hit.distance! >= tenth).length / 10
      // Every distance is the exact one (rescored with the stored vector), not the int8 estimate.
      for (const hit of found) expect(Math.abs(cosineDistance(table.rows.get(hit.chunkId)!, query)! - hit.distance!)).toBeLessThan(1e-9)
    }
    expect(recalled / texts.length).toBeGreaterThanOrEqual(0.99)
  })

  test('writes while it loads (rows removed before and after the cursor, rows added, a row rewritten) leave it equal to the table', async () => {
    const table = await tableOf(0, 6_000)
    const cache = new VectorCache({ minRows: 0, budgetBytes: 64 * 1024 * 1024 })
    const ids = [...table.rows.keys()].sort((a, b) => a - b)
    const extra = await tableOf(6_000, 6_010)
    let writes = 0
    const load = () =>
      cache.columns(7, () => table.rows.size, DIMS, (after, limit) => {
        // Between pages (before the second is read): a write commits, and the cache follows it as the store makes it.
        if (writes++ === 1) {
          const removed = [ids[5]!, ids[4_000]!] // one already read, one not yet
          for (const id of removed) table.rows.delete(id)
          const added = [...extra.rows].map(([id, vector]) => ({ id, vector }))
          // A chunk id rewritten with another vector (not read yet), and new ids past every page.
          const rewritten = { id: ids[5_500]!, vector: extra.rows.get(10 + 6_000 * 3)! }
          for (const { id, vector } of [...added, rewritten]) table.rows.set(id, vector)
          cache.update(7, removed, [...added, rewritten])
        }
        return table.page(after, limit)
      })
    expect(load()).toBeNull()
    const matrix = await loaded(cache, load)
    expect(matrix.rows).toBe(table.rows.size)
    expect(new Set(Array.from(matrix.ids.subarray(0, matrix.rows)))).toEqual(new Set(table.rows.keys()))
    // Every row's int8 values match its current vector: each row is its own nearest.
    for (const id of [ids[0]!, ids[3_000]!, ids[5_500]!, ...extra.rows.keys()]) {
      const [first] = columnsNearest(matrix, table.rows.get(id)!, 1, table.vectorsOf)
      expect(table.rows.get(first!.chunkId)).toEqual(table.rows.get(id)!)
      expect(first!.distance!).toBeLessThan(1e-6)
    }
    const gone = columnsNearest(matrix, (await tableOf(5, 6)).rows.values().next().value!, 20, table.vectorsOf)
    expect(gone.map((hit) => hit.chunkId)).not.toContain(ids[5]!)
  })

  test('past the budget nothing is held; a load stops when the collection is dropped or the cache closed', async () => {
    const table = await tableOf(0, 3_000)
    const small = new VectorCache({ minRows: 0, budgetBytes: 3_000 * DIMS })
    expect(small.columns(1, () => table.rows.size, DIMS, (after, limit) => table.page(after, limit))).toBeNull()
    expect(small.columnsState()).toEqual({ ready: 0, loading: 0 })
    expect(small.usedBytes).toBe(0)
    await Bun.sleep(5)
    expect(table.pages).toBe(0)

    const cache = new VectorCache({ minRows: 0, budgetBytes: 64 * 1024 * 1024 })
    cache.columns(2, () => table.rows.size, DIMS, (after, limit) => table.page(after, limit))
    cache.invalidate(2)
    cache.columns(3, () => table.rows.size, DIMS, (after, limit) => table.page(after, limit))
    cache.close()
    await Bun.sleep(20)
    expect(table.pages).toBe(0)
    expect(cache.columns(4, () => table.rows.size, DIMS, (after, limit) => table.page(after, limit))).toBeNull()
    await Bun.sleep(5)
    expect(table.pages).toBe(0)
  })

  test('twins count once when asked', async () => {
    const table = await tableOf(0, 3_000)
    const copy = table.rows.get(10)!
    for (const id of [100_001, 100_002, 100_003]) table.rows.set(id, copy)
    const cache = new VectorCache({ minRows: 0, budgetBytes: 64 * 1024 * 1024 })
    const matrix = await loaded(cache, () => cache.columns(1, () => table.rows.size, DIMS, (after, limit) => table.page(after, limit)))
    const all = columnsNearest(matrix, copy, 5, table.vectorsOf)
    expect(all.slice(0, 4).map((hit) => hit.chunkId).sort((a, b) => a - b)).toEqual([10, 100_001, 100_002, 100_003])
    const report = { dropped: 0 }
    const distinct = columnsNearest(matrix, copy, 5, table.vectorsOf, report)
    expect(distinct[0]!.chunkId).toBe(10)
    expect(distinct.slice(1).some((hit) => [100_001, 100_002, 100_003].includes(hit.chunkId))).toBe(false)
    expect(report.dropped).toBe(3)
  })
})

describe.if(loadIndexLibrary() !== null)('a large SQLite collection: columns for sparse queries, the index for dense ones', () => {
  const opened: { db: Database; store: SqliteRagStore }[] = []
  afterEach(() => {
    for (const { db, store } of opened.splice(0)) {
      store.close()
      db.close()
    }
  })

  test('the store answers a sparse query from the columns once they are in, a dense one through the index walk', async () => {
    const db = openDatabase(join(tempDir('columns'), 'uagent.db'))
    db.run("INSERT INTO users (id, email, password_hash, roles, created_at) VALUES ('u', 'u@example.com', 'x', '[\"user\"]', '')")
    const rag = new RagService({
      db,
      embedder: async () => embedder,
      generator: async () => new ExtractiveGenerator(),
      vectorCache: { minRows: Number.POSITIVE_INFINITY, budgetBytes: 64 * 1024 * 1024 },
      vectorIndex: { ...DEFAULT_VECTOR_INDEX, minChunks: 300, buildThreads: 1, log: () => {} },
    })
    const store = rag.store as SqliteRagStore
    opened.push({ db, store })
    const documents = scaleDocuments(0, 3_000, 5)
    for (let i = 0; i < documents.length; i += 500) await rag.ingest('u', 'big', documents.slice(i, i + 500))
    const collection = store.findCollection('u', 'big')!
    store.indexes.flush()
    await store.indexes.settled(60_000)
    expect(store.indexes.status(collection.id)).toBe('ready')
    const walk = spyOn(store.indexes, 'nearest')
    const release = spyOn(store.indexes, 'releasePages')
    const sparse = (await embedder.embed([documents[1_234]!.content.split(' ').slice(3, 11).join(' ')]))[0]!
    // The first search starts reading the columns and is answered by the index meanwhile.
    store.nearest(collection, sparse, 10)
    expect(walk).toHaveBeenCalledTimes(1)
    for (let i = 0; i < 1_000 && !store.cache.peek(collection.id)?.columnsOnly; i++) await Bun.sleep(1)
    for (let i = 0; i < 1_000 && store.cache.columnsState().loading; i++) await Bun.sleep(1)
    expect(store.cache.columnsState()).toEqual({ ready: 1, loading: 0 })
    // The pages of the index file the first walk read are let go (the file mapped anew), once.
    expect(release).toHaveBeenCalledTimes(1)
    expect(release).toHaveBeenCalledWith(collection.id)
    const viaColumns = store.nearest(collection, sparse, 10)
    expect(walk).toHaveBeenCalledTimes(1)
    const [top] = viaColumns
    expect(store.chunks([top!.chunkId]).get(top!.chunkId)!.docId).toBe('scale-1234')
    // A dense query (every component non-zero, as a transformer's) walks the index.
    const dense = Float32Array.from({ length: collection.dimensions }, (_, d) => Math.sin(d + 1))
    expect(isSparse(dense)).toBe(false)
    const walked = store.nearest(collection, dense, 10)
    expect(walked).toHaveLength(10)
    expect(walk).toHaveBeenCalledTimes(2)
    // The index unable to serve (its pending vectors evicted): the columns answer the dense query too.
    walk.mockImplementationOnce(() => null)
    expect(store.nearest(collection, dense, 10).map((hit) => hit.chunkId)).toEqual(walked.map((hit) => hit.chunkId))
    expect(walk).toHaveBeenCalledTimes(3)
    // A write reaches the columns at once; a deleted document leaves them.
    await rag.ingest('u', 'big', [{ id: 'fresh', content: 'zyxwv quokka marmalade telescope harbour lantern' }])
    const fresh = (await embedder.embed(['zyxwv quokka marmalade telescope harbour lantern']))[0]!
    const [found] = store.nearest(collection, fresh, 3)
    expect(store.chunks([found!.chunkId]).get(found!.chunkId)!.docId).toBe('fresh')
    expect(rag.deleteDocument('u', 'big', 'fresh').success).toBe(true)
    expect(store.nearest(collection, fresh, 20).map((hit) => hit.chunkId)).not.toContain(found!.chunkId)
    expect(walk).toHaveBeenCalledTimes(3)
    // Keyword-only candidates still get their stored vectors (the columns hold none).
    expect(store.vectors(collection, [top!.chunkId]).get(top!.chunkId)).toHaveLength(collection.dimensions)
    walk.mockRestore()
    release.mockRestore()
  })
})

describe('a fresh index build catches up with what was written while it read the rows', () => {
  test('chunks added meanwhile stay as read, ones added after the last page are added, removed ones leave, removed-and-added ones get their current vector; the change it holds is the last one', () => {
    const db = openDatabase(join(tempDir('catch-up'), 'uagent.db'))
    try {
      const vector = (value: number) => new Uint8Array(new Float32Array(4).fill(value).buffer)
      const row = db.query('INSERT INTO rag_vector_rows (chunk_id, collection_id, embedding) VALUES (?, ?, ?)')
      const change = db.query('INSERT INTO rag_vector_changes (collection_id, chunk_id, added) VALUES (?, ?, ?)')
      // Before the build began (seq 1-2), then while it read (seq 3-9); another collection's change too.
      change.run(1, 1, 1)
      change.run(1, 2, 1)
      const from = 2
      row.run(10, 1, vector(10))
      change.run(1, 10, 1) // added, read by a page
      row.run(11, 1, vector(11))
      change.run(1, 11, 1) // added after the last page
      change.run(1, 12, 1) // added, read by a page, then removed
      change.run(1, 12, 0)
      row.run(13, 1, vector(13.5))
      change.run(1, 13, 0) // read by a page with its old vector, removed, added again under its id
      change.run(1, 13, 1)
      change.run(2, 99, 1)
      const inIndex = new Set([1n, 2n, 10n, 12n, 13n])
      const index = { contains: (key: bigint) => inIndex.has(key), remove: (key: bigint) => Number(inIndex.delete(key)) }
      const put: [number, number][] = []
      const to = caughtUp(db, index, 1, from, (id, embedding) => put.push([id, new Float32Array(embedding.buffer.slice(embedding.byteOffset, embedding.byteOffset + embedding.byteLength))[0]!]))
      expect(to).toBe(8) // the last of its own collection (seq 9 is the other one's)
      expect(put).toEqual([
        [11, 11],
        [13, 13.5],
      ])
      expect([...inIndex].sort((a, b) => Number(a - b))).toEqual([1n, 2n, 10n]) // 13 taken out, then put back with its current vector (above)
    } finally {
      db.close()
    }
  })
})
