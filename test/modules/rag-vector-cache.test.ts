import { describe, expect, test } from 'bun:test'
import { openDatabase } from '../../src/db'
import { ExtractiveGenerator } from '../../src/ml/builtin/extractive-generator'
import { HashEmbedder } from '../../src/ml/builtin/hash-embedder'
import { RagService } from '../../src/modules/rag/service'
import { createDotKernel, createInt8Kernel } from '../../src/modules/rag/vectors/simd-dot'
import { SqliteRagStore as RagStore } from '../../src/modules/rag/store/sqlite'
import { freedAfterCopy, matrixEntries, QUANTIZED_MIN_ROWS, scanNearest, VectorCache } from '../../src/modules/rag/vectors/cache'
import corpus from '../fixtures/rag-corpus.json'

function service(minRows: number) {
  return serviceWithDb(minRows).rag
}

function serviceWithDb(minRows: number) {
  const db = openDatabase(':memory:')
  db.run("INSERT INTO users (id, email, password_hash, roles, created_at) VALUES ('u', 'u@example.com', 'x', '[\"user\"]', '')")
  const embedder = new HashEmbedder()
  return { db, rag: new RagService({ db, embedder: async () => embedder, generator: async () => new ExtractiveGenerator(), vectorCache: { minRows, budgetBytes: 64 * 1024 * 1024 } }) }
}

/** The cached (chunk id → vector) of a collection, and the same read afresh from the database by a new store. */
function cachedAndRebuilt(db: ReturnType<typeof openDatabase>, rag: RagService, name: string) {
  const collection = rag.collection('u', name)
  const cached = rag.store.cache.peek(collection.id)
  const fresh = new RagStore(db, { minRows: 1, budgetBytes: 64 * 1024 * 1024 })
  fresh.nearest(collection, new Float32Array(collection.dimensions).fill(1), 1)
  return { cached: cached && matrixEntries(cached), rebuilt: matrixEntries(fresh.cache.peek(collection.id)!) }
}

const asArrays = (entries: Map<number, Float32Array>) => new Map([...entries].map(([id, vector]) => [id, [...vector]]))

describe('in-memory vector copy of large collections', () => {
  test('returns exactly what sqlite-vec returns, and follows changes to the collection', async () => {
    const viaSqlite = service(1_000_000)
    const viaCache = service(1)
    for (const rag of [viaSqlite, viaCache]) await rag.ingest('u', 'kb', corpus.documents)
    for (const query of corpus.queries.slice(0, 10)) {
      const [a, b] = await Promise.all([viaSqlite.search('u', 'kb', query.paraphrase, 10), viaCache.search('u', 'kb', query.paraphrase, 10)])
      // Same documents in the same order; scores agree to float32 precision.
      expect(b.results.map((r) => r.id)).toEqual(a.results.map((r) => r.id))
      b.results.forEach((r, i) => expect(Math.abs(r.score - a.results[i]!.score)).toBeLessThan(0.001))
    }
    // A document added after the copy was made is found; a deleted one is gone.
    await viaCache.ingest('u', 'kb', [{ id: 'new', content: 'Zebras have black and white stripes.' }])
    expect((await viaCache.search('u', 'kb', 'zebra stripes', 1)).results[0]!.id).toBe('new')
    viaCache.deleteDocument('u', 'kb', 'new')
    expect((await viaCache.search('u', 'kb', 'zebra stripes', 5)).results.some((r) => r.id === 'new')).toBe(false)
  })

  test('after ingest, re-ingest of an id, document delete and collection delete, the copy equals one rebuilt from the database, without reloading', async () => {
    const { db, rag } = serviceWithDb(1)
    await rag.ingest('u', 'kb', corpus.documents.slice(0, 10))
    // The first search builds the copy; from then on writes update it in place.
    await rag.search('u', 'kb', 'password', 3)
    const collection = rag.collection('u', 'kb')
    const matrix = rag.store.cache.peek(collection.id)!
    expect(matrix).toBeDefined()
    const check = () => {
      const { cached, rebuilt } = cachedAndRebuilt(db, rag, 'kb')
      // The same object: updated, never rebuilt.
      expect(rag.store.cache.peek(collection.id)).toBe(matrix)
      expect(asArrays(cached!)).toEqual(asArrays(rebuilt))
      expect(cached!.size).toBe((db.query('SELECT count(*) AS n FROM rag_chunks WHERE collection_id = ?').get(collection.id) as { n: number }).n)
    }
    // Ingest: enough new chunks to make it grow past its room.
    await rag.ingest('u', 'kb', corpus.documents.slice(10))
    await rag.ingest('u', 'kb', Array.from({ length: 60 }, (_, i) => ({ id: `extra-${i}`, content: `Extra note ${i} about ${corpus.documents[i % 32]!.content}` })))
    check()
    // Re-ingest of an id: its old chunks leave, its new ones arrive.
    await rag.ingest('u', 'kb', [{ id: corpus.documents[3]!.id, content: 'Entirely new text about lighthouses and their keepers.' }])
    check()
    expect((await rag.search('u', 'kb', 'lighthouse keepers', 1)).results[0]!.id).toBe(corpus.documents[3]!.id)
    // Document delete.
    for (const id of ['extra-5', corpus.documents[0]!.id, 'extra-59']) rag.deleteDocument('u', 'kb', id)
    check()
    // Search results agree with sqlite-vec's own (no copy) on the updated collection.
    const plain = new RagStore(db, { minRows: Number.POSITIVE_INFINITY, budgetBytes: 0 })
    for (const query of corpus.queries.slice(0, 8)) {
      const [vector] = await (await rag.embedder()).embed([query.paraphrase])
      expect(rag.store.nearest(collection, vector!, 10).map((h) => h.chunkId)).toEqual(plain.nearest(collection, vector!, 10).map((h) => h.chunkId))
    }
    // Collection delete: the copy goes with it, and a collection made anew (SQLite may reuse the id) starts from its own rows.
    rag.deleteCollection('u', 'kb')
    expect(rag.store.cache.peek(collection.id)).toBeUndefined()
    await rag.ingest('u', 'kb', [{ id: 'only', content: 'A single document about tea.' }])
    await rag.search('u', 'kb', 'tea', 1)
    const again = cachedAndRebuilt(db, rag, 'kb')
    expect(again.cached!.size).toBe(1)
    expect(asArrays(again.cached!)).toEqual(asArrays(again.rebuilt))
  })

  test('the copy follows removals and growth in the plain TypeScript path too (dimensions not a multiple of 16)', () => {
    const cache = new VectorCache({ minRows: 1, budgetBytes: 1e9 })
    const vector = (i: number) => Float32Array.from({ length: 7 }, (_, d) => Math.sin(i * 7 + d))
    const rows = new Map(Array.from({ length: 20 }, (_, i) => [i + 1, vector(i + 1)]))
    const matrix = cache.matrix(1, () => rows.size, 7, () => [...rows].map(([id, v]) => ({ id, bytes: new Uint8Array(v.buffer) })))!
    expect(matrix.kernel).toBeNull()
    for (let i = 21; i <= 80; i++) rows.set(i, vector(i))
    cache.update(1, [], Array.from({ length: 60 }, (_, i) => ({ id: i + 21, vector: vector(i + 21) })))
    for (const id of [1, 40, 80, 2]) rows.delete(id)
    cache.update(1, [1, 40, 80, 2], [])
    expect(asArrays(matrixEntries(cache.peek(1)!))).toEqual(asArrays(rows))
    const query = vector(1000)
    const expected = [...rows]
      .map(([id, v]) => ({ id, similarity: v.reduce((s, x, d) => s + x * query[d]!, 0) / Math.sqrt(v.reduce((s, x) => s + x * x, 0)) }))
      .sort((a, b) => b.similarity - a.similarity)
      .slice(0, 5)
      .map((e) => e.id)
    expect(scanNearest(cache.peek(1)!, query, 5).map((h) => h.chunkId)).toEqual(expected)
  })

  for (const [dims, path] of [
    [7, 'the TypeScript loop'],
    [48, 'the WebAssembly SIMD kernel'],
  ] as const) {
    test(`the scan is exact: it matches a plain sort of every similarity (${dims} dimensions, ${path})`, () => {
      const cache = new VectorCache({ minRows: 1, budgetBytes: 1e9 })
      const rows = Array.from({ length: 500 }, (_, i) => ({ id: i + 1, vector: Float32Array.from({ length: dims }, (_, d) => Math.sin(i * dims + d)) }))
      const matrix = cache.matrix(1, () => rows.length, dims, () => rows.map((r) => ({ id: r.id, bytes: new Uint8Array(r.vector.buffer) })))!
      expect(matrix.kernel !== null).toBe(dims % 16 === 0)
      const query = Float32Array.from({ length: dims }, (_, d) => Math.cos(d))
      const norm = (v: Float32Array) => Math.sqrt(v.reduce((s, x) => s + x * x, 0))
      const expected = rows
        .map((r) => ({ id: r.id, similarity: r.vector.reduce((s, x, d) => s + x * query[d]!, 0) / (norm(r.vector) * norm(query)) }))
        .sort((a, b) => b.similarity - a.similarity)
        .slice(0, 10)
      const hits = scanNearest(matrix, query, 10)
      expect(hits.map((h) => h.chunkId)).toEqual(expected.map((e) => e.id))
      hits.forEach((hit, i) => expect(hit.distance!).toBeCloseTo(1 - expected[i]!.similarity, 5))
    })
  }

  test('past QUANTIZED_MIN_ROWS the int8 scan with its exact re-rank returns exactly the float top-k, also after rows come and go', () => {
    const dims = 64
    const cache = new VectorCache({ minRows: 1, budgetBytes: 1e9 })
    let seed = 7
    const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32) * 2 - 1
    // Sparse, uneven vectors like the built-in embedder's, a zero vector, and exact duplicates (ties).
    const make = () => Float32Array.from({ length: dims }, () => (random() > 0.6 ? random() * (random() > 0.9 ? 4 : 1) : 0))
    const rows = new Map<number, Float32Array>()
    for (let id = 1; id <= QUANTIZED_MIN_ROWS + 2000; id++) rows.set(id, id % 997 === 0 ? rows.get(id - 1)! : make())
    rows.set(5, new Float32Array(dims))
    const matrix = cache.matrix(1, () => rows.size, dims, () => [...rows].map(([id, v]) => ({ id, bytes: new Uint8Array(v.buffer, v.byteOffset, v.byteLength) })))!
    expect(matrix.quantized).not.toBeNull()
    const exactTop = (query: Float32Array, k: number) => {
      const norm = (v: Float32Array) => Math.sqrt(v.reduce((s, x) => s + x * x, 0))
      const order = [...matrix.rowOf].map(([id, row]) => {
        const v = rows.get(id)!
        const n = norm(v)
        return { id, row, similarity: n ? v.reduce((s, x, d) => s + x * query[d]!, 0) / (n * norm(query)) : 0 }
      })
      return order.sort((a, b) => b.similarity - a.similarity || a.row - b.row).slice(0, k)
    }
    const check = () => {
      for (let i = 0; i < 15; i++) {
        const query = i % 3 === 0 ? rows.get(100 + i)! : make()
        const hits = scanNearest(matrix, query, 10)
        const expected = exactTop(query, 10)
        expect(hits.map((h) => h.chunkId)).toEqual(expected.map((e) => e.id))
        hits.forEach((hit, j) => expect(1 - (hit.distance ?? 1)).toBeCloseTo(expected[j]!.similarity, 5))
      }
    }
    check()
    const removed = [1, 2, 3, 500, 4000, QUANTIZED_MIN_ROWS + 1999]
    for (const id of removed) rows.delete(id)
    const added = Array.from({ length: 3000 }, (_, i) => ({ id: 100_000 + i, vector: make() }))
    for (const { id, vector } of added) rows.set(id, vector)
    cache.update(1, removed, added)
    check()
  })

  test('the int8 scan\'s error bound keeps a row whose estimate is far below its similarity: error from the row\'s rounding, and from the query\'s', () => {
    // Each case: a query, and one row B that rounding to int8 makes look worse (an estimate of 0.125)
    // than 100 others whose similarity (about 0.136) is below B's (0.155): B is out of the pool by
    // estimate, and only the error bound brings it back.
    const dims = 64
    const cases = [
      // The row's small components round to 0 (‖q‖₁ · s_v / 2 covers it): q all ones, B = e₀ + 0.00386 elsewhere.
      {
        query: new Float32Array(dims).fill(1),
        b: Float32Array.from({ length: dims }, (_, d) => (d === 0 ? 1 : 0.00386)),
        other: (i: number) => Float32Array.from({ length: dims }, (_, d) => (d === 0 ? 1 : d === 1 ? 0.1 + i * 1e-4 : 0)),
      },
      // The query's small components round to 0 (‖v‖₁ · s_q / 2 covers it): q = e₀ + 0.00386 elsewhere, B all ones.
      {
        query: Float32Array.from({ length: dims }, (_, d) => (d === 0 ? 1 : 0.00386)),
        b: new Float32Array(dims).fill(1),
        other: (i: number) => Float32Array.from({ length: dims }, (_, d) => (d === 0 ? 0.14 + i * 1e-5 : d === 1 ? -0.99 : 0)),
      },
    ]
    for (const { query, b, other } of cases) {
      const cache = new VectorCache({ minRows: 1, budgetBytes: 1e9 })
      // B, the 100 others, and enough rows pointing away from the query for the int8 path.
      const vectors = [b, ...Array.from({ length: 100 }, (_, i) => other(i)), ...Array.from({ length: QUANTIZED_MIN_ROWS }, (_, i) => Float32Array.from({ length: dims }, (_, d) => -1 - ((i * 31 + d * 17) % 7)))]
      const matrix = cache.matrix(1, () => vectors.length, dims, () => vectors.map((v, i) => ({ id: i + 1, bytes: new Uint8Array(v.buffer) })))!
      expect(matrix.quantized).not.toBeNull()
      const norm = (v: Float32Array) => Math.sqrt(v.reduce((s, x) => s + x * x, 0))
      const expected = vectors
        .map((v, i) => ({ id: i + 1, similarity: v.reduce((s, x, d) => s + x * query[d]!, 0) / (norm(v) * norm(query)) }))
        .sort((x, y) => y.similarity - x.similarity || x.id - y.id)
        .slice(0, 10)
      expect(expected[0]!.id).toBe(1)
      expect(scanNearest(matrix, query, 10).map((h) => h.chunkId)).toEqual(expected.map((e) => e.id))
    }
  })

  for (const [rows, path] of [
    [300, 'the float scan'],
    [QUANTIZED_MIN_ROWS + 500, 'the int8 scan'],
  ] as const) {
    test(`a distinct scan counts copies of a vector once (${path}), also after rows come and go; a plain scan keeps them`, () => {
      const dims = 64
      const cache = new VectorCache({ minRows: 1, budgetBytes: 1e9 })
      let seed = 11
      const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32) * 2 - 1
      const make = () => Float32Array.from({ length: dims }, () => (random() > 0.5 ? random() : 0))
      const query = make()
      // Five vectors near the query, each copied 20 times; the rest random.
      const near = Array.from({ length: 5 }, (_, n) => Float32Array.from(query, (x, d) => x + 0.05 * n * Math.sin(d)))
      const all = Array.from({ length: rows }, (_, i) => ({ id: i + 1, vector: i < 100 ? near[i % 5]! : make() }))
      const matrix = cache.matrix(1, () => all.length, dims, () => all.map((r) => ({ id: r.id, bytes: new Uint8Array(r.vector.buffer, r.vector.byteOffset, r.vector.byteLength) })))!
      const copyOf = (id: number) => (id === 10_001 ? 0 : id <= 100 ? (id - 1) % 5 : -1)
      const check = () => {
        const report = { dropped: 0 }
        const distinct = scanNearest(matrix, query, 8, report)
        expect(distinct).toHaveLength(8)
        // The five near vectors once each, best first, then other rows.
        expect(distinct.slice(0, 5).map((h) => copyOf(h.chunkId))).toEqual([0, 1, 2, 3, 4])
        expect(distinct.slice(5).every((h) => copyOf(h.chunkId) === -1)).toBe(true)
        expect(report.dropped).toBeGreaterThan(0)
        const plain = scanNearest(matrix, query, 8)
        expect(plain.every((h) => copyOf(h.chunkId) === 0 || copyOf(h.chunkId) === 1)).toBe(true)
      }
      check()
      // Copies leave (the last row fills each hole) and new ones come: keys follow their rows.
      cache.update(1, [1, 2, 3, 50, 99], [
        { id: 10_001, vector: near[0]! },
        { id: 10_002, vector: make() },
      ])
      check()
      expect(scanNearest(matrix, query, 30).filter((h) => copyOf(h.chunkId) === 0)).toHaveLength(20)
    })
  }

  test('a collection is loaded row by row from an iterator: each row read once, in order, none kept (one buffer for every row), more rows than counted grow it', () => {
    const dims = 32
    const vectors = Array.from({ length: 5000 }, (_, i) => Float32Array.from({ length: dims }, (_, d) => Math.sin(i * 0.37 + d * 1.3)))
    // What a database iterator hands over: each row's bytes in the one buffer, overwritten by the next row.
    const buffer = new Uint8Array(dims * 4)
    let read = 0
    function* rows() {
      for (const [i, vector] of vectors.entries()) {
        buffer.set(new Uint8Array(vector.buffer))
        read++
        yield { id: i + 1, bytes: buffer }
      }
    }
    const cache = new VectorCache({ minRows: 1, budgetBytes: 1e9 })
    // Counted short (rows written meanwhile): the matrix grows to take them all.
    const matrix = cache.matrix(1, () => 3000, dims, rows)!
    expect(read).toBe(vectors.length)
    expect(matrix.rows).toBe(vectors.length)
    const entries = matrixEntries(matrix)
    expect(vectors.every((vector, i) => entries.get(i + 1)!.every((x, d) => x === vector[d]))).toBe(true)
    const hits = scanNearest(matrix, vectors[1234]!, 3)
    expect(hits[0]).toMatchObject({ chunkId: 1235 })
    expect(hits[0]!.distance).toBeCloseTo(0, 5)
  })

  test('rows read for a matrix have their bytes freed once copied (a buffer they share with others is left alone); the matrix holds them all', () => {
    const dims = 16
    const owned = Array.from({ length: 100 }, (_, i) => ({ id: i + 1, bytes: new Uint8Array(Float32Array.from({ length: dims }, (_, d) => i + d / 10).buffer) }))
    const pool = new Float32Array(dims * 2).fill(7)
    const shared = { id: 101, bytes: new Uint8Array(pool.buffer, 0, dims * 4) }
    const expected = [...owned, shared].map((row) => [...new Float32Array(row.bytes.slice().buffer)])
    const cache = new VectorCache({ minRows: 1, budgetBytes: 1e9 })
    const matrix = cache.matrix(1, () => 101, dims, () => freedAfterCopy([...owned, shared]))!
    const entries = matrixEntries(matrix)
    expect(expected.every((vector, i) => entries.get(i + 1)!.every((x, d) => x === vector[d]))).toBe(true)
    expect(owned.every((row) => row.bytes.byteLength === 0 && row.bytes.buffer.byteLength === 0)).toBe(true)
    expect(pool.every((x) => x === 7)).toBe(true)
    expect(shared.bytes.byteLength).toBe(dims * 4)
  })

  test('the SIMD kernel computes every row\'s dot product', () => {
    const rows = 37
    const dims = 64
    const kernel = createDotKernel(rows, dims)!
    expect(kernel).not.toBeNull()
    for (let i = 0; i < rows * dims; i++) kernel.vectors[i] = ((i * 7919) % 101) / 50 - 1
    const query = Float32Array.from({ length: dims }, (_, d) => ((d * 31) % 17) / 8 - 1)
    const scores = Array.from(kernel.scores(query, rows))
    expect(scores).toHaveLength(rows)
    scores.forEach((score, row) => {
      let expected = 0
      for (let d = 0; d < dims; d++) expected += kernel.vectors[row * dims + d]! * query[d]!
      expect(score).toBeCloseTo(expected, 4)
    })
    expect(createDotKernel(10, 7)).toBeNull()
  })

  test('the int8 kernel (column-major) computes every row\'s exact dot product over the query\'s non-zero columns, also after rows move and it grows', () => {
    const dims = 64
    let rows = 37
    const kernel = createInt8Kernel(rows, dims)!
    expect(kernel).not.toBeNull()
    expect(createInt8Kernel(10, 7)).toBeNull()
    const stored: Int8Array[] = []
    const put = (row: number, seed: number) => {
      stored[row] = Int8Array.from({ length: dims }, (_, d) => (((row + seed) * 7919 + d * 104729) % 255) - 127)
      kernel.setRow(row, stored[row]!)
    }
    for (let row = 0; row < rows; row++) put(row, 0)
    // Queries: dense, sparse with an odd and an even count of non-zero columns (more than one pass of
    // columns and fewer), the extremes ±127 everywhere, one column, none.
    const queries = [
      Int8Array.from({ length: dims }, (_, d) => ((d * 31) % 255) - 127),
      Int8Array.from({ length: dims }, (_, d) => (d % 5 === 0 ? ((d * 31) % 255) - 127 || 1 : 0)),
      Int8Array.from({ length: dims }, (_, d) => (d % 3 === 1 ? 127 - d : 0)),
      new Int8Array(dims).fill(-127),
      Int8Array.from({ length: dims }, (_, d) => (d === dims - 1 ? 127 : 0)),
      new Int8Array(dims),
    ]
    const check = () => {
      for (let row = 0; row < rows; row++) expect([...kernel.row(row)]).toEqual([...stored[row]!])
      for (const query of queries) {
        const scores = [...kernel.scores(query, rows)]
        expect(scores).toEqual(stored.slice(0, rows).map((values) => values.reduce((sum, x, d) => sum + x * query[d]!, 0)))
      }
    }
    check()
    // The last row fills a hole; rows are rewritten.
    kernel.copyRow(rows - 1, 4)
    stored[4] = stored[rows - 1]!
    rows--
    put(0, 11)
    check()
    // Growth past the stride moves every column: the rows stay, and new ones land in place.
    expect(kernel.grow(200)).toBe(true)
    check()
    for (let row = rows; row < 200; row++) put(row, 5)
    rows = 200
    check()
    for (const count of [1, 15, 16, 17, 199]) expect([...kernel.scores(queries[0]!, count)]).toHaveLength(count)
  })

  test('collections below the size floor, or over the budget, stay with sqlite-vec', () => {
    const cache = new VectorCache({ minRows: 100, budgetBytes: 1000 })
    expect(cache.matrix(1, () => 50, 4, () => [])).toBeNull()
    expect(cache.matrix(2, () => 500, 4, () => [])).toBeNull()
  })
})
