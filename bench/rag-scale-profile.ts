// Where a search's time goes at library scale (issue 54): the server's services in this process
// over a data folder `bun run bench rag-scale` kept (BENCH_KEEP_DATA=1, then
// BENCH_RAG_SCALE_DATA=<folder> here), each step of a search timed by wrapping the store's methods
// (their own time; the steps nest as indented), the three kinds of query of rag-scale, each search
// over HTTP too. `bun bench/rag-scale-profile.ts`; not a section of `bun run bench` (it needs a
// kept corpus). Figures are printed, never asserted.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { SqliteRagStore } from '../src/modules/rag/store/sqlite'
import { needles, type QueryKind, scaleQueries } from './rag-scale-corpus'
import { startInProcess } from './server'

const dataDir = process.env.BENCH_RAG_SCALE_DATA?.trim()
if (!dataDir || !existsSync(join(dataDir, 'uagent.db'))) {
  console.error('BENCH_RAG_SCALE_DATA=<a data folder bench rag-scale kept (BENCH_KEEP_DATA=1)> is needed')
  process.exit(1)
}
const CHUNKS = Number(process.env.BENCH_RAG_SCALE_CHUNKS ?? 1_000_000)
const SEARCHES = Number(process.env.BENCH_RAG_SCALE_SEARCHES ?? 100)
const COLLECTION = 'library'

const server = await startInProcess({ dataDir, env: { UAGENT_RATE_LIMIT_MAX: '1000000000', UAGENT_MIN_FREE_MB: '0' } })
const { rag } = server.services
const store = rag.store as unknown as SqliteRagStore
const userId = server.login.user.id
const headers = { authorization: `Bearer ${server.login.accessToken}`, 'content-type': 'application/json' }

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))] ?? NaN

// Each step's time in the current search, by label.
let current = new Map<string, number>()
const order: string[] = []
const add = (label: string, ms: number) => {
  if (!order.includes(label)) order.push(label)
  current.set(label, (current.get(label) ?? 0) + ms)
}
/** Wraps obj[name]: the time of each call under `label` (a promise: until it resolves, and its synchronous part apart). */
function timed(obj: any, name: string, label: string): void {
  const original = obj[name].bind(obj)
  obj[name] = (...args: unknown[]) => {
    const started = performance.now()
    const result = original(...args)
    if (result instanceof Promise) {
      add(`${label} (on this thread)`, performance.now() - started)
      return result.then((value) => {
        add(`${label} (until answered)`, performance.now() - started)
        return value
      })
    }
    add(label, performance.now() - started)
    return result
  }
}

// Ready: the index mapped (verified at start), the keyword postings read ahead.
for (let waited = 0; store.indexes.state().indexes.ready < 1 || store.indexes.state().indexes.building > 0; waited++) {
  if (waited > 36_000) throw new Error('the index was not ready in an hour')
  await Bun.sleep(100)
}
const embedder = await rag.embedder()
timed(embedder, 'embed', 'embed the query')
timed(store, 'queryTerms', 'query terms (document frequencies)')
timed(store, 'keywordCandidates', 'keyword candidates')
timed(store.keywords.topk, 'search', '  keyword top-k (postings)')
timed(store.keywords, 'allMatches', '  keyword matches (FTS5 query)')
timed(store.keywords, 'rescored', '  keyword hits rescored with every word')
timed(store, 'nearest', 'vector candidates (nearest)')
timed(store.indexes, 'nearest', '  through the index')
timed(store, 'storedVectors', '    stored vectors of its candidates (rescoring)')
timed(store, 'termHoldings', 'term holdings (chunk texts tokenized)')
timed(store, 'vectors', "keyword-only candidates' vectors")
timed(store, 'chunks', 'chunk rows read')
const collectionId = store.findCollection(userId, COLLECTION)!.id
const state = (store.indexes as any).states.get(collectionId)
if (state?.index) timed(state.index, 'search', '      usearch search')

const kinds: QueryKind[] = ['document', 'common', 'rare']
// Warm-up: statements prepared, index pages mapped, common terms' postings read ahead.
for (const kind of kinds) for (const query of scaleQueries(kind, 20, CHUNKS, 7)) await rag.search(userId, COLLECTION, query, 10)
await store.keywords.topk.settled()
// The collection's int8 columns (read in the background since the first search) in memory.
for (let waited = 0; !store.cache.columnsState().ready && store.cache.columnsState().loading; waited++) {
  if (waited > 6_000) throw new Error('the int8 columns were not in memory in ten minutes')
  await Bun.sleep(100)
}
console.log(`int8 columns in memory: ${JSON.stringify(store.cache.columnsState())}`)
for (const kind of kinds) for (const query of scaleQueries(kind, 20, CHUNKS, 7)) await rag.search(userId, COLLECTION, query, 10)

console.log(`\n== Where a search's time goes, ${CHUNKS.toLocaleString('en')} chunks (${dataDir}), ${SEARCHES} searches of each kind, 10 results; ms per search`)
for (const kind of kinds) {
  const steps = new Map<string, number[]>()
  const totals: number[] = []
  const http: number[] = []
  const queries = scaleQueries(kind, SEARCHES, CHUNKS, 99)
  for (const query of queries) {
    current = new Map()
    const started = performance.now()
    await rag.search(userId, COLLECTION, query, 10)
    totals.push(performance.now() - started)
    for (const label of order) {
      if (!steps.has(label)) steps.set(label, [])
      steps.get(label)!.push(current.get(label) ?? 0)
    }
  }
  for (const query of queries) {
    const started = performance.now()
    const response = await fetch(`${server.base}/rag/search`, { method: 'POST', headers, body: JSON.stringify({ collection: COLLECTION, query, limit: 10 }) })
    await response.json()
    http.push(performance.now() - started)
  }
  const line = (label: string, values: number[]) => {
    const mean = values.reduce((a, b) => a + b, 0) / values.length
    console.log(`  ${label.padEnd(52)} mean ${mean.toFixed(2).padStart(7)}  p50 ${percentile(values, 50).toFixed(2).padStart(7)}  p95 ${percentile(values, 95).toFixed(2).padStart(7)}`)
  }
  console.log(`${kind}:`)
  line('over HTTP (POST /rag/search)', http)
  line('rag.search() in this process', totals)
  for (const label of order) if (steps.has(label)) line(label, steps.get(label)!)
}

// Where the resident memory is: anonymous (heaps, the columns) or file pages (mapped index files).
{
  const { readFileSync } = await import('node:fs')
  const rollup = readFileSync('/proc/self/smaps_rollup', 'utf8')
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(rollup)?.[1] ?? 0)
  const { heapSize, extraMemorySize } = (await import('bun:jsc')).heapStats()
  console.log(
    `\nresident ${(kb('Rss') / 1024).toFixed(0)} MB: anonymous ${(kb('Anonymous') / 1024).toFixed(0)} MB, file pages ${((kb('Rss') - kb('Anonymous')) / 1024).toFixed(0)} MB; ` +
      `JS heap ${(heapSize / 2 ** 20).toFixed(0)} MB (+${(extraMemorySize / 2 ** 20).toFixed(0)} MB outside it); vector cache ${(store.cache.usedBytes / 2 ** 20).toFixed(0)} MB, keyword postings ${(store.keywords.topk.keptBytes / 2 ** 20).toFixed(0)} MB`,
  )
}

// BENCH_PROFILE_EXPANSIONS=256,512,1024: the index walked that deep (UAGENT_ANN_EXPANSION), each in
// turn: search times (in process), the notes' questions' first rank, and how many of the ten
// results are those of the deepest walk listed.
const expansions = (process.env.BENCH_PROFILE_EXPANSIONS ?? '').split(',').filter(Boolean).map(Number).sort((a, b) => b - a)
if (expansions.length) {
  console.log(`\nthe index walked to each expansion (in process, ms per search; results against expansion ${expansions[0]}'s)`)
  const options = (store.indexes as any).options as { searchExpansion: number }
  const reference = new Map<string, string[]>()
  const notes = needles()
  for (const expansion of expansions) {
    options.searchExpansion = expansion
    const parts: string[] = []
    let same = 0
    let compared = 0
    for (const kind of kinds) {
      const times: number[] = []
      for (const query of scaleQueries(kind, SEARCHES, CHUNKS, 99)) {
        const started = performance.now()
        const ids = (await rag.search(userId, COLLECTION, query, 10)).results.map((hit) => hit.id)
        times.push(performance.now() - started)
        const key = `${kind}:${query}`
        if (!reference.has(key)) reference.set(key, ids)
        const wanted = new Set(reference.get(key))
        same += ids.filter((id) => wanted.has(id)).length
        compared += wanted.size
      }
      parts.push(`${kind} p50 ${percentile(times, 50).toFixed(1)} p95 ${percentile(times, 95).toFixed(1)}`)
    }
    let first = 0
    for (const needle of notes) if ((await rag.search(userId, COLLECTION, needle.question, 10)).results[0]?.id === needle.note.id) first++
    console.log(`  expansion ${String(expansion).padStart(5)}: ${parts.join(', ')}; results the same ${(same / compared).toFixed(3)}; notes first ${first}/${notes.length}`)
  }
}
server.stop()
process.exit(0)
