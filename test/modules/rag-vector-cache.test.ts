import { describe, expect, test } from 'bun:test'
import { openDatabase } from '../../src/db'
import { ExtractiveGenerator } from '../../src/ml/builtin/extractive-generator'
import { HashEmbedder } from '../../src/ml/builtin/hash-embedder'
import { RagService } from '../../src/modules/rag/service'
import { createDotKernel } from '../../src/modules/rag/simd-dot'
import { scanNearest, VectorCache } from '../../src/modules/rag/vector-cache'
import corpus from '../fixtures/rag-corpus.json'

function service(minRows: number) {
  const db = openDatabase(':memory:')
  db.run("INSERT INTO users (id, email, password_hash, roles, created_at) VALUES ('u', 'u@example.com', 'x', '[\"user\"]', '')")
  const embedder = new HashEmbedder()
  return new RagService({ db, embedder: async () => embedder, generator: async () => new ExtractiveGenerator(), vectorCache: { minRows, budgetBytes: 64 * 1024 * 1024 } })
}

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

  test('collections below the size floor, or over the budget, stay with sqlite-vec', () => {
    const cache = new VectorCache({ minRows: 100, budgetBytes: 1000 })
    expect(cache.matrix(1, () => 50, 4, () => [])).toBeNull()
    expect(cache.matrix(2, () => 500, 4, () => [])).toBeNull()
  })
})
