// `bun run bench rag-scale-postgres` (and the end of `bun run bench rag-scale`): the knowledge base at
// library scale on PostgreSQL with pgvector, over HTTP with real server processes (issue 54).
// BENCH_RAG_SCALE_PG_DOCUMENTS one-chunk documents (default 1,000,000, bench/rag-scale-corpus.ts)
// and its 200 notes go to POST /rag/ingest in batches of 1,000 (two requests in flight); then:
// ingest documents/s (whole run and its last tenth), the collection's HNSW index build (its writes
// paused), search p50/p95 over HTTP for the three kinds of query (10 results), vector recall@10 of
// the index against an exact scan, the notes found first, the servers' resident memory (sampled
// every 0.5 s), the database's size per chunk, and a second server on the same database (a replica:
// its memory, its searches, and that it sees the first one's ingests).
// Needs UAGENT_TEST_DATABASE_URL (a role that may CREATE DATABASE) and a database with pgvector to
// copy (UAGENT_TEST_PGVECTOR_TEMPLATE, see .ci/run) or a role that may CREATE EXTENSION vector.
import { SQL } from 'bun'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { HashEmbedder } from '../src/ml/builtin/hash-embedder'
import { EF_SEARCH, exactSearch, indexSearch, vectorLiteral } from '../src/modules/rag/store/postgres/vectors-pgvector'
import { BENCH_DATABASE_SKIPPED, BENCH_DATABASE_URL } from './postgres-database'
import { needles, NEEDLES, type QueryKind, scaleDocuments, scaleQueries } from './rag-scale-corpus'
import { benchLogin, startServerProcess } from './server'

const DOCUMENTS = Number(process.env.BENCH_RAG_SCALE_PG_DOCUMENTS ?? 1_000_000)
const BATCH = 1_000
const IN_FLIGHT = 2
const QUERIES = Number(process.env.BENCH_RAG_SCALE_QUERIES ?? 100)
/** Queries whose index results are compared with an exact scan (each exact scan reads every vector of the collection). */
const RECALL_QUERIES = Number(process.env.BENCH_RAG_SCALE_PG_RECALL ?? 100)
const TEMPLATE = process.env.UAGENT_TEST_PGVECTOR_TEMPLATE?.trim() || undefined
/** How long to wait for the HNSW index after the ingest (seconds); past it the rest is measured on the exact path, without recall. */
const BUILD_TIMEOUT = Number(process.env.BENCH_RAG_SCALE_PG_BUILD_TIMEOUT ?? 3 * 3600)
/** Or until this time (ISO 8601), whichever comes first. */
const WAIT_UNTIL = process.env.BENCH_RAG_SCALE_PG_WAIT_UNTIL ? Date.parse(process.env.BENCH_RAG_SCALE_PG_WAIT_UNTIL) : Number.POSITIVE_INFINITY
const KINDS: QueryKind[] = ['document', 'common', 'rare']

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`

/** Resident memory of a process (VmRSS), in bytes. */
function rss(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Number(match[1]) * 1024 : 0
  } catch {
    return 0
  }
}

/** The largest resident memory of a process seen since start() (sampled every 0.5 s), per phase. */
function memorySampler(pid: () => number | null) {
  let peak = 0
  const timer = setInterval(() => {
    const id = pid()
    if (id) peak = Math.max(peak, rss(id))
  }, 500)
  return {
    /** The peak since the last call, and a new phase. */
    take(): number {
      const id = pid()
      const value = Math.max(peak, id ? rss(id) : 0)
      peak = 0
      return value
    },
    stop: () => clearInterval(timer),
  }
}

/** A login that is renewed before its access token expires (15 minutes), for runs longer than that. */
function session(base: string) {
  let current: { token: string; at: number } | null = null
  return async (): Promise<string> => {
    if (!current || performance.now() - current.at > 10 * 60_000) current = { token: (await benchLogin(base)).accessToken, at: performance.now() }
    return current.token
  }
}

async function post(base: string, token: string | (() => Promise<string>), path: string, body: unknown): Promise<{ status: number; json: any; ms: number }> {
  const bearer = typeof token === 'string' ? token : await token()
  const started = performance.now()
  const response = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` }, body: JSON.stringify(body) })
  const json = await response.json()
  return { status: response.status, json, ms: performance.now() - started }
}

async function searchTimes(base: string, token: () => Promise<string>, queries: string[]): Promise<number[]> {
  const times: number[] = []
  for (const query of queries) {
    const answer = await post(base, token, '/rag/search', { collection: 'scale', query, limit: 10 })
    if (answer.status !== 200) throw new Error(`search failed: ${answer.status} ${JSON.stringify(answer.json)}`)
    times.push(answer.ms)
  }
  return times
}

export async function ragScalePostgres(documents = DOCUMENTS): Promise<void> {
  console.log(`\n== rag-scale-postgres: ${documents.toLocaleString('en')} one-chunk documents on PostgreSQL + pgvector, over HTTP ==`)
  if (!BENCH_DATABASE_URL) {
    console.log(BENCH_DATABASE_SKIPPED)
    return
  }
  const name = `uagent_bench_${randomBytes(5).toString('hex')}`
  const admin = new SQL(BENCH_DATABASE_URL, { max: 1 })
  await admin.unsafe(TEMPLATE ? `CREATE DATABASE ${name} TEMPLATE "${TEMPLATE}"` : `CREATE DATABASE ${name}`)
  const url = new URL(BENCH_DATABASE_URL)
  url.pathname = `/${name}`
  const databaseUrl = url.toString()
  const sql = new SQL(databaseUrl, { max: 4 })
  let first: Awaited<ReturnType<typeof startServerProcess>> | null = null
  let second: Awaited<ReturnType<typeof startServerProcess>> | null = null
  const memoryA = memorySampler(() => first?.pid ?? null)
  const memoryB = memorySampler(() => second?.pid ?? null)
  try {
    first = await startServerProcess({ env: { UAGENT_DATABASE_URL: databaseUrl, UAGENT_RATE_LIMIT_MAX: '1000000000' } })
    const [extension] = await sql`SELECT extversion FROM pg_extension WHERE extname = 'vector'`
    if (!extension) {
      console.log('skipped: the database has no pgvector (set UAGENT_TEST_PGVECTOR_TEMPLATE to a database where a superuser ran CREATE EXTENSION vector, see .ci/run)')
      return
    }
    const health = await (await fetch(`${first.base}/health`)).json()
    console.log(`server: connections.vectorSearch = ${health.connections.vectorSearch}, pgvector ${extension.extversion}; ${memoryA.take() ? mb(rss(first.pid)) : '?'} resident at start`)
    const token = session(first.base)

    // Ingest: batches of 1,000, two requests in flight; the notes first.
    const notes = needles()
    const noted = await post(first.base, token, '/rag/ingest', { collection: 'scale', documents: notes.map((n) => n.note) })
    if (noted.status !== 200) throw new Error(`ingest failed: ${noted.status} ${JSON.stringify(noted.json)}`)
    const started = performance.now()
    const done: { at: number; documents: number }[] = []
    let next = 0
    let ingested = 0
    const worker = async () => {
      while (next < documents) {
        const from = next
        const to = Math.min(documents, from + BATCH)
        next = to
        const answer = await post(first!.base, token, '/rag/ingest', { collection: 'scale', documents: scaleDocuments(from, to) })
        if (answer.status !== 200 || answer.json.ingested !== to - from) throw new Error(`ingest of ${from}..${to} failed: ${answer.status} ${JSON.stringify(answer.json).slice(0, 300)}`)
        ingested += to - from
        done.push({ at: performance.now(), documents: ingested })
        if (ingested % 100_000 < BATCH) console.log(`  ${ingested.toLocaleString('en')} documents, ${(ingested / ((performance.now() - started) / 1000)).toFixed(0)} documents/s, server ${mb(rss(first!.pid))}`)
      }
    }
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker))
    const seconds = (performance.now() - started) / 1000
    const tenth = done.find((entry) => entry.documents >= documents * 0.9)!
    const lastTenth = (documents - tenth.documents) / ((done.at(-1)!.at - tenth.at) / 1000)
    const ingestPeak = memoryA.take()
    console.log(`ingest: ${documents.toLocaleString('en')} documents in ${seconds.toFixed(0)} s: ${(documents / seconds).toFixed(0)} documents/s (last tenth ${lastTenth.toFixed(0)}/s); server peak ${mb(ingestPeak)}`)

    // The collection's HNSW index, built once its writes paused.
    const [collection] = await sql`SELECT id, chunk_count FROM rag_collections WHERE name = 'scale'`
    const waitStarted = performance.now()
    let index = ''
    while ((performance.now() - waitStarted) / 1000 < BUILD_TIMEOUT && Date.now() < WAIT_UNTIL) {
      const [row] = await sql`SELECT i.relname AS name FROM pg_class i JOIN pg_index x ON x.indexrelid = i.oid
        WHERE x.indrelid = 'rag_vectors'::regclass AND x.indisvalid AND i.relname LIKE ${`rag\\_vectors\\_hnsw\\_${Number(collection.id)}\\_%`}`
      if (row) {
        index = row.name
        break
      }
      await Bun.sleep(1000)
    }
    const watermark = Number(index.split('_').at(-1))
    const buildSeconds = (performance.now() - waitStarted) / 1000
    const buildPeak = memoryA.take()
    console.log(
      index
        ? `HNSW index of ${Number(collection.chunk_count).toLocaleString('en')} chunks valid ${buildSeconds.toFixed(0)} s after the last ingest (including its 3 s pause; the server logs the build's own time); server peak meanwhile ${mb(buildPeak)}`
        : `HNSW index of ${Number(collection.chunk_count).toLocaleString('en')} chunks NOT built after ${buildSeconds.toFixed(0)} s (BENCH_RAG_SCALE_PG_BUILD_TIMEOUT): what follows is the exact path, no recall; server peak meanwhile ${mb(buildPeak)}`,
    )
    await sql.unsafe('VACUUM (ANALYZE) rag_chunks, rag_vectors')

    // Searches over HTTP: warm-up, then each kind.
    await searchTimes(first.base, token, scaleQueries('document', 10, documents, 99))
    const queries = index ? QUERIES : Math.min(QUERIES, 10)
    for (const kind of KINDS) {
      const times = await searchTimes(first.base, token, scaleQueries(kind, queries, documents))
      console.log(`search (${kind}, ${queries} queries, 10 results): p50 ${percentile(times, 50).toFixed(1)} ms, p95 ${percentile(times, 95).toFixed(1)} ms`)
    }
    // The notes: each question's note first?
    let firstPlace = 0
    for (const { note, question } of index ? notes : notes.slice(0, 10)) {
      const answer = await post(first.base, token, '/rag/search', { collection: 'scale', query: question, limit: 10 })
      if (answer.json.results?.[0]?.id === note.id) firstPlace++
    }
    const asked = index ? NEEDLES : 10
    console.log(`notes ranked first: ${firstPlace}/${asked} (${(firstPlace / asked).toFixed(3)})`)
    const searchPeak = memoryA.take()

    // Recall@10 of the index against exact, on the vectors of document-like queries.
    const embedder = new HashEmbedder()
    const recallQueries = index ? scaleQueries('document', RECALL_QUERIES, documents, 7) : []
    let agreed = 0
    let firstFound = 0
    let tenthGap = 0
    let indexMs = 0
    let exactMs = 0
    for (const text of recallQueries) {
      const [vector] = await embedder.embed([text])
      const literal = vectorLiteral(vector!)
      let t = performance.now()
      // As the server asks for a search's 40 vector candidates (70 from the index, rescored), the first ten kept.
      const approximate = ((await sql.unsafe(indexSearch(Number(collection.id), 384, literal, 70, null, watermark))).at(-1) as { chunk_id: number; d: number }[]).sort((a, b) => a.d - b.d).slice(0, 10)
      indexMs += performance.now() - t
      t = performance.now()
      const exact = (await sql.unsafe(exactSearch(Number(collection.id), literal, 10))).at(-1) as { chunk_id: number; d: number }[]
      exactMs += performance.now() - t
      const truth = new Set(exact.map((row: { chunk_id: number }) => Number(row.chunk_id)))
      agreed += approximate.filter((row) => truth.has(Number(row.chunk_id))).length
      if (approximate[0] && exact[0] && Number(approximate[0].chunk_id) === Number(exact[0].chunk_id)) firstFound++
      if (approximate[9] && exact[9]) tenthGap += Number(approximate[9].d) - Number(exact[9].d)
    }
    if (index) console.log(
      `vector recall@10 of the index (ef_search ${EF_SEARCH}, 70 candidates rescored, as the server asks for 40) against exact, ${RECALL_QUERIES} queries: ${(agreed / (RECALL_QUERIES * 10)).toFixed(3)} (the nearest found first: ${(firstFound / RECALL_QUERIES).toFixed(3)}; the tenth found ${(tenthGap / RECALL_QUERIES).toFixed(4)} farther than the true tenth, in cosine distance, on average); index query ${(indexMs / RECALL_QUERIES).toFixed(1)} ms, exact scan ${(exactMs / RECALL_QUERIES).toFixed(0)} ms on average (in SQL)`,
    )

    // More documents into the indexed collection: past the index's watermark, so no HNSW insert;
    // searched exactly beside the index until 20,000 of them gather.
    if (index) {
      const more = 10_000
      const moreStarted = performance.now()
      for (let from = documents; from < documents + more; from += BATCH) {
        const answer = await post(first.base, token, '/rag/ingest', { collection: 'scale', documents: scaleDocuments(from, from + BATCH) })
        if (answer.status !== 200) throw new Error(`ingest failed: ${answer.status} ${JSON.stringify(answer.json).slice(0, 300)}`)
      }
      const moreRate = more / ((performance.now() - moreStarted) / 1000)
      const times = await searchTimes(first.base, token, scaleQueries('document', QUERIES, documents + more, 11))
      console.log(
        `ingest into the indexed collection: ${more.toLocaleString('en')} more documents at ${moreRate.toFixed(0)} documents/s; then search (document) with them searched beside the index: p50 ${percentile(times, 50).toFixed(1)} ms, p95 ${percentile(times, 95).toFixed(1)} ms`,
      )
    }

    // The database per chunk.
    const [size] = await sql.unsafe(`SELECT pg_database_size(current_database())::float8 AS database, pg_total_relation_size('rag_vectors')::float8 AS vectors,
      ${index ? `pg_relation_size('${index}')` : '0'}::float8 AS hnsw, pg_total_relation_size('rag_chunks')::float8 AS chunks`)
    const [counted] = await sql`SELECT sum(chunk_count)::float8 AS n FROM rag_collections`
    const chunks = Number(counted.n)
    console.log(
      `database: ${mb(size.database)} (${(size.database / chunks).toFixed(0)} bytes per chunk): rag_vectors ${mb(size.vectors)} with indexes, of which the HNSW index ${mb(size.hnsw)} (${(size.hnsw / chunks).toFixed(0)} bytes per chunk); rag_chunks ${mb(size.chunks)}`,
    )

    // A second server on the same database: no copy of the vectors, the same searches, the first one's writes.
    second = await startServerProcess({ env: { UAGENT_DATABASE_URL: databaseUrl, UAGENT_RATE_LIMIT_MAX: '1000000000' } })
    const tokenB = session(second.base)
    await searchTimes(second.base, tokenB, scaleQueries('document', 10, documents, 98))
    for (const kind of KINDS) {
      const times = await searchTimes(second.base, tokenB, scaleQueries(kind, queries, documents, 5))
      console.log(`replica B search (${kind}): p50 ${percentile(times, 50).toFixed(1)} ms, p95 ${percentile(times, 95).toFixed(1)} ms`)
    }
    await post(first.base, token, '/rag/ingest', { collection: 'scale', documents: [{ id: 'late-note', content: 'The quokkaberry turbine was repainted bright orange on Tuesday.' }] })
    const seen = await post(second.base, tokenB, '/rag/search', { collection: 'scale', query: 'quokkaberry turbine repainted', limit: 3 })
    console.log(`replica B finds a document ingested through A at once: ${seen.json.results?.[0]?.id === 'late-note'}`)
    console.log(
      `resident memory: server A peak ${mb(ingestPeak)} ingesting, ${mb(buildPeak)} while the index was built, ${mb(searchPeak)} searching; replica B peak ${mb(memoryB.take())} (goal: <= 300 MB whatever the corpus)`,
    )
  } finally {
    memoryA.stop()
    memoryB.stop()
    await second?.stop()
    await first?.stop()
    await sql.close({ timeout: 1 }).catch(() => {})
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch((error) => console.log(`could not drop ${name}: ${(error as Error).message}`))
    await admin.close()
  }
}

if (import.meta.main) await ragScalePostgres()
