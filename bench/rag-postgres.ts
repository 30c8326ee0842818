// RAG on PostgreSQL beside SQLite: ingest throughput (MB/s) through RagService with the built-in
// embedder, and hybrid search latency at 100,000 chunks, the same chunks and queries on both
// stores. Goals (issue 34): search p95 on PostgreSQL <= 1.5x SQLite's; ingest >= 2 MB/s.
// Needs UAGENT_TEST_DATABASE_URL (a scratch database is made and dropped); skipped without it.
import { openDatabase } from '../src/db'
import { ExtractiveGenerator } from '../src/ml/builtin/extractive-generator'
import { HashEmbedder } from '../src/ml/builtin/hash-embedder'
import { RagService } from '../src/modules/rag/service'
import type { RagStore, StoredDocument } from '../src/modules/rag/store'
import { PostgresRagStore } from '../src/modules/rag/store/postgres'
import { seededRandom } from '../scripts/fixtures/onnx-graph'
import { BENCH_DATABASE_SKIPPED, scratchPostgres } from './postgres-database'

const DIMENSIONS = 384
const CHUNKS = Number(process.env.BENCH_RAG_PG_CHUNKS ?? 100_000)
const INGEST_DOCUMENTS = 5_000

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!

function corpus(seed: number) {
  const random = seededRandom(seed)
  const vocabulary = Array.from({ length: 5000 }, (_, i) => `term${i.toString(36)}`)
  const word = () => vocabulary[Math.floor(random.uniform() ** 2 * vocabulary.length)]!
  const sentence = () => `${Array.from({ length: 8 + Math.floor(random.uniform() * 10) }, word).join(' ')}.`
  const unit = () => {
    const v = new Float32Array(DIMENSIONS)
    let norm = 0
    for (let i = 0; i < DIMENSIONS; i++) norm += (v[i] = random.normal()) ** 2
    for (let i = 0; i < DIMENSIONS; i++) v[i]! /= Math.sqrt(norm)
    return v
  }
  const documentText = () => {
    let text = Array.from({ length: 5 }, sentence).join(' ')
    while (text.length < 1000) text += ` ${sentence()}`
    return text.slice(0, 1100)
  }
  return { word, sentence, unit, documentText }
}

function services(store?: RagStore) {
  const db = openDatabase(':memory:')
  db.run("INSERT INTO users (id, email, password_hash, roles, created_at) VALUES ('bench', 'bench@example.com', 'x', '[\"user\"]', '')")
  const embedder = new HashEmbedder()
  const rag = new RagService<RagStore>({ db, ...(store ? { store } : {}), embedder: async () => embedder, generator: async () => new ExtractiveGenerator() })
  return { db, rag, embedder }
}

async function ingest(rag: RagService<RagStore>): Promise<number> {
  const { documentText } = corpus(7)
  const documents = Array.from({ length: INGEST_DOCUMENTS }, (_, i) => ({ id: `doc-${i}`, content: documentText(), metadata: { title: `Document ${i}` } }))
  const bytes = documents.reduce((sum, d) => sum + Buffer.byteLength(d.content), 0)
  const started = performance.now()
  for (let i = 0; i < documents.length; i += 1000) await rag.ingest('bench', 'ingest', documents.slice(i, i + 1000))
  return bytes / 1024 / 1024 / ((performance.now() - started) / 1000)
}

/** `CHUNKS` chunks of synthetic text with random unit vectors, ten per document, written through the store. */
async function fill(rag: RagService<RagStore>) {
  const { sentence, unit } = corpus(42)
  const collection = await rag.store.createCollection('bench', 'big', new HashEmbedder().id, DIMENSIONS)
  const started = performance.now()
  for (let d = 0; d < CHUNKS / 10; d += 500) {
    const batch: StoredDocument[] = []
    for (let i = d; i < Math.min(d + 500, CHUNKS / 10); i++) {
      const chunks = Array.from({ length: 10 }, sentence)
      batch.push({ docId: `doc-${i}`, content: chunks.join(' '), metadata: {}, chunks, vectors: chunks.map(unit) })
    }
    await rag.store.writeDocuments(collection, batch)
  }
  return { collection: (await rag.collection('bench', 'big'))!, seconds: (performance.now() - started) / 1000 }
}

async function searches(rag: RagService<RagStore>, queries: string[]) {
  const collection = await rag.collection('bench', 'big')
  const embedder = await rag.embedder()
  let t = performance.now()
  await rag.retrieve('bench', collection, embedder, 'warm up', 10)
  const first = performance.now() - t
  const times: number[] = []
  for (const query of queries) {
    t = performance.now()
    await rag.retrieve('bench', collection, embedder, query, 10)
    times.push(performance.now() - t)
  }
  return { first, p50: percentile(times, 50), p95: percentile(times, 95) }
}

export async function benchRagPostgres() {
  console.log(`\n== RAG on PostgreSQL beside SQLite (built-in embedder, ${DIMENSIONS} dimensions)`)
  const database = await scratchPostgres()
  if (!database) {
    console.log(BENCH_DATABASE_SKIPPED)
    return
  }
  try {
    const sqlite = services()
    const postgres = services(new PostgresRagStore(database.sql))
    const sqliteMbs = await ingest(sqlite.rag)
    const postgresMbs = await ingest(postgres.rag)
    console.log(`ingest ${INGEST_DOCUMENTS.toLocaleString('en')} documents of ~1 KB          SQLite ${sqliteMbs.toFixed(2).padStart(6)} MB/s   PostgreSQL ${postgresMbs.toFixed(2).padStart(6)} MB/s   goal PostgreSQL >= 2 MB/s  ${postgresMbs >= 2 ? 'ok' : 'MISSED'}`)

    const { word } = corpus(99)
    const queries = Array.from({ length: 60 }, () => `${word()} ${word()} ${word()}`)
    const filledSqlite = await fill(sqlite.rag)
    const filledPostgres = await fill(postgres.rag)
    console.log(`write ${CHUNKS.toLocaleString('en')} chunks through the store          SQLite ${filledSqlite.seconds.toFixed(1).padStart(6)} s      PostgreSQL ${filledPostgres.seconds.toFixed(1).padStart(6)} s`)
    const a = await searches(sqlite.rag, queries)
    const b = await searches(postgres.rag, queries)
    const ratio = b.p95 / a.p95
    console.log(`search ${CHUNKS.toLocaleString('en')} chunks, hybrid (service)  SQLite p50 ${a.p50.toFixed(1)} ms p95 ${a.p95.toFixed(1)} ms   PostgreSQL p50 ${b.p50.toFixed(1)} ms p95 ${b.p95.toFixed(1)} ms   ×${ratio.toFixed(2)}   goal <= 1.5×  ${ratio <= 1.5 ? 'ok' : 'MISSED'}`)
    console.log(`first search (loads the vectors)          SQLite ${a.first.toFixed(0)} ms   PostgreSQL ${b.first.toFixed(0)} ms`)
    sqlite.db.close()
    postgres.db.close()
  } finally {
    await database.drop()
  }
}

if (import.meta.main) await benchRagPostgres()
