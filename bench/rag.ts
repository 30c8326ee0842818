// RAG: ingest throughput with the built-in embedder, search latency at 10k and 100k chunks next to a
// brute-force cosine scan in TypeScript, and recall@10 of the vector search against that scan.
import { SqliteRagStore as RagStore } from '../src/modules/rag/store/sqlite'
import { inMemoryRag } from '../test/rag-service'
import { seededRandom } from '../scripts/fixtures/onnx-graph'

const DIMENSIONS = 384
const random = seededRandom(42)
const VOCABULARY = Array.from({ length: 5000 }, (_, i) => `term${i.toString(36)}`)
const word = () => VOCABULARY[Math.floor(random.uniform() ** 2 * VOCABULARY.length)]!

function sentence(): string {
  const words = Array.from({ length: 8 + Math.floor(random.uniform() * 10) }, word)
  return `${words.join(' ')}.`
}

/** ~1 KB of prose in two paragraphs. */
function documentText(): string {
  const paragraph = () => Array.from({ length: 5 }, sentence).join(' ')
  let text = `${paragraph()}\n\n${paragraph()}`
  while (text.length < 1000) text += ` ${sentence()}`
  return text.slice(0, 1100)
}

function randomUnitVector(): Float32Array {
  const v = new Float32Array(DIMENSIONS)
  let norm = 0
  for (let i = 0; i < DIMENSIONS; i++) {
    v[i] = random.normal()
    norm += v[i]! * v[i]!
  }
  norm = Math.sqrt(norm)
  for (let i = 0; i < DIMENSIONS; i++) v[i]! /= norm
  return v
}

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!

const setup = () => inMemoryRag({ user: 'bench' })

async function benchIngest() {
  const { rag, db } = setup()
  const documents = Array.from({ length: 10_000 }, (_, i) => ({ id: `doc-${i}`, content: documentText(), metadata: { title: `Document ${i}` } }))
  const started = performance.now()
  for (let i = 0; i < documents.length; i += 1000) await rag.ingest('bench', 'ingest', documents.slice(i, i + 1000))
  const seconds = (performance.now() - started) / 1000
  const chunks = (db.query('SELECT count(*) AS n FROM rag_chunks').get() as { n: number }).n
  console.log(`ingest 10,000 documents of ~1 KB        ${(documents.length / seconds).toFixed(0).padStart(7)} docs/s  ${(chunks / seconds).toFixed(0).padStart(7)} chunks/s  (${chunks} chunks, ${seconds.toFixed(1)} s)   goal >= 500 docs/s  ${documents.length / seconds >= 500 ? 'ok' : 'MISSED'}`)
}

/** Fills a collection with `count` chunks of synthetic text and random unit vectors, straight into the tables. */
function fill(count: number) {
  const { db, rag, embedder } = setup()
  const collection = rag.store.createCollection('bench', `c${count}`, embedder.id, DIMENSIONS)
  const vectors: Float32Array[] = []
  const ids: number[] = []
  db.transaction(() => {
    const insertDocument = db.prepare("INSERT INTO rag_documents (collection_id, doc_id, metadata, content_hash, created_at) VALUES (?, ?, '{}', '', '')")
    const insertChunk = db.prepare('INSERT INTO rag_chunks (document_id, collection_id, position, content) VALUES (?, ?, ?, ?)')
    const insertVector = db.prepare(`INSERT INTO rag_vec_${DIMENSIONS} (rowid, collection_id, embedding) VALUES (?, ?, ?)`)
    // The exact copy that keyword candidates' vectors are read from (see store/sqlite/vector-index.ts).
    const insertRow = db.prepare('INSERT INTO rag_vector_rows (chunk_id, collection_id, embedding) VALUES (?, ?, ?)')
    // The collection's own keyword index, as the store writes it.
    const insertText = db.prepare(`INSERT INTO rag_fts_${collection.id} (rowid, content) VALUES (?, ?)`)
    for (let i = 0; i < count; i++) {
      const documentId = i % 10 === 0 ? Number(insertDocument.run(collection.id, `doc-${i / 10}`).lastInsertRowid) : Number((db.query('SELECT max(id) AS n FROM rag_documents').get() as { n: number }).n)
      const text = sentence()
      const chunkId = Number(insertChunk.run(documentId, collection.id, i % 10, text).lastInsertRowid)
      insertText.run(chunkId, text)
      const vector = randomUnitVector()
      insertVector.run(chunkId, collection.id, vector)
      insertRow.run(chunkId, collection.id, vector)
      vectors.push(vector)
      ids.push(chunkId)
    }
  })()
  return { db, rag, collection, vectors, ids }
}

function bruteForce(vectors: Float32Array[], ids: number[], query: Float32Array, k: number): number[] {
  const scored = vectors.map((v, i) => {
    let dot = 0
    for (let d = 0; d < DIMENSIONS; d++) dot += v[d]! * query[d]!
    return { id: ids[i]!, similarity: dot }
  })
  return scored
    .sort((a, b) => b.similarity - a.similarity)
    .slice(0, k)
    .map((s) => s.id)
}

async function benchSearch(count: number) {
  const { db, rag, collection, vectors, ids } = fill(count)
  const queries = Array.from({ length: 50 }, randomUnitVector)
  // The same vectors searched by sqlite-vec alone (no in-memory copy), for comparison.
  const sqliteOnly = new RagStore(db, { minRows: Number.POSITIVE_INFINITY, budgetBytes: 0 })
  const sqliteKnn: number[] = []
  for (const query of queries.slice(0, 20)) {
    const t = performance.now()
    sqliteOnly.nearest(collection, query, 10)
    sqliteKnn.push(performance.now() - t)
  }
  const knn: number[] = []
  const brute: number[] = []
  const hybrid: number[] = []
  let recalled = 0
  for (const query of queries) {
    let t = performance.now()
    const found = rag.store.nearest(collection, query, 10).map((hit) => hit.chunkId)
    knn.push(performance.now() - t)
    t = performance.now()
    const exact = bruteForce(vectors, ids, query, 10)
    brute.push(performance.now() - t)
    recalled += found.filter((id) => exact.includes(id)).length / 10
  }
  const embedder = await rag.embedder()
  for (let i = 0; i < 50; i++) {
    const t = performance.now()
    await rag.retrieve('bench', collection, embedder, `${word()} ${word()} ${word()}`, 10)
    hybrid.push(performance.now() - t)
  }
  const ms = (v: number[]) => `p50 ${percentile(v, 50).toFixed(1).padStart(6)} ms  p95 ${percentile(v, 95).toFixed(1).padStart(6)} ms`
  const label = `${count.toLocaleString('en')} chunks`
  console.log(`${`search ${label}, hybrid (service)`.padEnd(40)} ${ms(hybrid)}   goal p95 <= 50 ms  ${count < 100_000 || percentile(hybrid, 95) <= 50 ? 'ok' : 'MISSED'}`)
  console.log(`${`search ${label}, vector KNN (exact)`.padEnd(40)} ${ms(knn)}`)
  console.log(`${`search ${label}, sqlite-vec vec0 alone`.padEnd(40)} ${ms(sqliteKnn)}`)
  console.log(`${`search ${label}, brute-force scan (TS)`.padEnd(40)} ${ms(brute)}   baseline`)
  console.log(`${`recall@10 of KNN vs brute force`.padEnd(40)} ${(recalled / queries.length).toFixed(3)}   goal 1.0  ${recalled / queries.length === 1 ? 'ok' : 'MISSED'}`)
}

export async function benchRag() {
  console.log('\n== RAG (built-in embedder, 384 dimensions)')
  await benchIngest()
  await benchSearch(10_000)
  await benchSearch(100_000)
}

if (import.meta.main) await benchRag()
