// The in-memory vector scan alone (src/modules/rag/vectors/cache.ts scanNearest) at 100,000+ chunks of
// real text: the Debian PostgreSQL and Git documentation (as in rag-real), ingested in-process with the
// built-in embedder, then the query vectors and pool sizes that 300 real searches hand to the store are
// scanned again, timed one by one. Prints the int8 queries' non-zero columns, the scan's p50/p95, and
// the int8 kernel's share of it.
import { join } from 'node:path'
import { openDatabase } from '../src/db'
import { HashEmbedder } from '../src/ml/builtin/hash-embedder'
import { RagService } from '../src/modules/rag/service'
import { type Matrix, scanNearest } from '../src/modules/rag/vectors/cache'
import { ensurePackages, loadPages, questions } from './debian-docs'

const CACHE = process.env.BENCH_CACHE ?? join(import.meta.dir, '..', '.bench')
const MIN_CHUNKS = Number(process.env.BENCH_RAG_CHUNKS ?? 100_000)
const ROUNDS = 5
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!

export async function benchVectorScan() {
  console.log('\n== In-memory vector scan (exact top-k, int8 scan + float re-rank) on real text, in-process')
  if (!ensurePackages(CACHE, ['postgresql-doc-15', 'git-doc'])) return
  const pages = loadPages(CACHE, ['postgresql-doc-15', 'git-doc'])
  const db = openDatabase(':memory:')
  db.run("INSERT INTO users (id, email, password_hash, roles, created_at) VALUES ('u', 'u@example.com', 'x', '[\"user\"]', '')")
  const embedder = new HashEmbedder()
  const rag = new RagService({ db, embedder: async () => embedder, generator: async () => { throw new Error('no generator') } })
  const chunks = () => (db.query('SELECT count(*) AS n FROM rag_chunks').get() as { n: number }).n
  for (let copy = 0; chunks() < MIN_CHUNKS; copy++) {
    const documents = pages.map((page) => ({ id: `${copy}/${page.id}`, content: page.text }))
    for (let i = 0; i < documents.length; i += 400) await rag.ingest('u', 'docs', documents.slice(i, i + 400))
  }
  // What the searches ask of the store: each query vector, pool size and distinct flag.
  const asked: { vector: Float32Array; k: number; distinct: boolean }[] = []
  const store = rag.store
  const nearest = store.nearest.bind(store)
  store.nearest = (collection, vector, k, distinct) => {
    asked.push({ vector: vector.slice(), k, distinct: distinct !== undefined })
    return nearest(collection, vector, k, distinct)
  }
  for (const question of questions(pages, 300)) await rag.search('u', 'docs', question.query, 10)
  store.nearest = nearest
  const matrix = store.cache.peek(rag.collection('u', 'docs').id) as Matrix
  const int8Queries = asked.map(({ vector }) => {
    const largest = vector.reduce((m, x) => Math.max(m, Math.abs(x)), 0)
    return Int8Array.from(vector, (x) => Math.round(x / (largest / 127)))
  })
  const nonZero = int8Queries.map((q) => q.filter((x) => x !== 0).length)
  console.log(`${matrix.rows} rows × ${matrix.dimensions} dimensions, ${asked.length} queries; non-zero int8 query columns: p50 ${percentile(nonZero, 50)}, p95 ${percentile(nonZero, 95)}, max ${Math.max(...nonZero)}`)
  const scan: number[] = []
  const kernel: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    asked.forEach(({ vector, k, distinct }, i) => {
      let started = performance.now()
      scanNearest(matrix, vector, k, distinct ? { dropped: 0 } : undefined)
      scan.push(performance.now() - started)
      started = performance.now()
      matrix.quantized?.scores(int8Queries[i]!, matrix.rows)
      kernel.push(performance.now() - started)
    })
  }
  console.log(`${'scanNearest'.padEnd(34)} p50 ${percentile(scan, 50).toFixed(2).padStart(6)} ms  p95 ${percentile(scan, 95).toFixed(2).padStart(6)} ms`)
  console.log(`${'  of which the int8 kernel'.padEnd(34)} p50 ${percentile(kernel, 50).toFixed(2).padStart(6)} ms  p95 ${percentile(kernel, 95).toFixed(2).padStart(6)} ms`)
}

if (import.meta.main) await benchVectorScan()
