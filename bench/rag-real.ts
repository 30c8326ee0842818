// RAG on real text: Debian's PostgreSQL and Git documentation (downloaded once with `apt-get download`
// into .bench/), stripped to text, copied until the collection holds >= 100,000 chunks, ingested and
// searched over HTTP against a real listening server, with natural-language questions built from the
// pages' titles and section headings ("how do I …", "what is …"). Prints ingest MB/s and docs/s, search
// p50/p95, the share of questions whose source page is in the top 10, and the server's resident memory.
//
// Self-contained on purpose (it only spawns the server and talks HTTP, without bench/server.ts), so the same file can be run
// against an older checkout to compare: `bun bench/rag-real.ts` from that checkout's root.
import { mkdtempSync, rmSync } from 'node:fs'
import { ensurePackages, loadPages, questions } from './debian-docs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'

const root = join(import.meta.dir, '..')
const CACHE = process.env.BENCH_CACHE ?? join(root, '.bench')
const PACKAGES = ['postgresql-doc-15', 'git-doc']
const MIN_CHUNKS = Number(process.env.BENCH_RAG_CHUNKS ?? 100_000)
const QUESTIONS = Number(process.env.BENCH_RAG_QUESTIONS ?? 300)
const BATCH_BYTES = 4 * 1024 * 1024
const ADMIN = { email: 'bench@example.com', password: 'bench-password' }

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!

async function startServer(dataDir: string) {
  const proc = Bun.spawn(['bun', join(root, 'src/index.ts')], {
    cwd: root,
    env: { ...process.env, PORT: '0', UAGENT_DATA_DIR: dataDir, UAGENT_ADMIN_EMAIL: ADMIN.email, UAGENT_ADMIN_PASSWORD: ADMIN.password, UAGENT_RATE_LIMIT_MAX: '1000000000', UAGENT_MAX_REQUEST_SIZE: '16mb' },
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const reader = proc.stdout.getReader()
  let output = ''
  while (!/listening on (http:\/\/\S+)/.test(output)) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`the server exited before listening: ${output}`)
    output += new TextDecoder().decode(value)
  }
  // Keep draining its output so the pipe never fills.
  void (async () => {
    for (;;) if ((await reader.read()).done) break
  })()
  return { proc, url: /listening on (http:\/\/\S+)/.exec(output)![1]!.replace('0.0.0.0', '127.0.0.1') }
}

const rss = async (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(await Bun.file(`/proc/${pid}/status`).text())![1]) / 1024
/** The most the process has held resident since it started (the kernel's high-water mark). */
const peakRss = async (pid: number) => Number(/VmHWM:\s+(\d+)/.exec(await Bun.file(`/proc/${pid}/status`).text())![1]) / 1024
/** CPU seconds a process has used, all its threads (user + system), from /proc: what an ingest costs whatever else the machine runs. */
const cpuSeconds = async (pid: number) => {
  const stat = await Bun.file(`/proc/${pid}/stat`).text()
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}

export async function benchRagReal() {
  console.log('\n== RAG on real text (PostgreSQL 15 + Git documentation from Debian, built-in embedder, over HTTP)')
  if (!ensurePackages(CACHE, PACKAGES)) return
  const pages = loadPages(CACHE, PACKAGES)
  const pageBytes = pages.reduce((sum, page) => sum + Buffer.byteLength(page.text), 0)
  const asked = questions(pages, QUESTIONS)
  const dataDir = mkdtempSync(join(tmpdir(), 'uagent-bench-rag-'))
  const { proc, url } = await startServer(dataDir)
  try {
    const login = (await (await fetch(`${url}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) })).json()) as { accessToken: string }
    const headers = { authorization: `Bearer ${login.accessToken}`, 'content-type': 'application/json' }
    const post = async (path: string, body: unknown) => {
      const response = await fetch(`${url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) })
      if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`)
      return response.json()
    }
    const chunkCount = async () => {
      const { collections } = (await (await fetch(`${url}/rag/collections`, { headers })).json()) as { collections: { name: string; chunks: number }[] }
      return collections.find((c) => c.name === 'docs')?.chunks ?? 0
    }

    let bytes = 0
    let documents = 0
    let ingestMs = 0
    let ingestCpu = 0
    let copies = 0
    while ((await chunkCount()) < MIN_CHUNKS) {
      let batch: { id: string; content: string; metadata: { page: string } }[] = []
      let batchBytes = 0
      const send = async () => {
        const started = performance.now()
        const cpuBefore = await cpuSeconds(proc.pid)
        const result = (await post('/rag/ingest', { collection: 'docs', documents: batch })) as { ingested: number; failed: number }
        ingestMs += performance.now() - started
        ingestCpu += (await cpuSeconds(proc.pid)) - cpuBefore
        if (result.failed) throw new Error(`${result.failed} documents failed to ingest`)
        documents += result.ingested
        bytes += batchBytes
        batch = []
        batchBytes = 0
      }
      for (const page of pages) {
        const size = Buffer.byteLength(page.text)
        if (batch.length && (batchBytes + size > BATCH_BYTES || batch.length >= 500)) await send()
        batch.push({ id: `${copies}/${page.id}`, content: page.text, metadata: { page: page.id } })
        batchBytes += size
      }
      if (batch.length) await send()
      copies++
    }
    const chunks = await chunkCount()
    const afterIngest = await rss(proc.pid)
    const seconds = ingestMs / 1000

    const latencies: number[] = []
    let found = 0
    // One warm-up query, as a server answers many: the first search may load the collection's vectors.
    await post('/rag/search', { collection: 'docs', query: asked[0]!.query, limit: 10 })
    for (const question of asked) {
      const started = performance.now()
      const { results } = (await post('/rag/search', { collection: 'docs', query: question.query, limit: 10 })) as { results: { metadata: { page?: string } }[] }
      latencies.push(performance.now() - started)
      if (results.some((r) => r.metadata.page === question.source)) found++
    }
    const afterSearch = await rss(proc.pid)
    const peak = await peakRss(proc.pid)
    const mb = bytes / 1024 / 1024
    console.log(`load average ${loadavg().map((l) => l.toFixed(1)).join(' ')} on ${navigator.hardwareConcurrency} cores (timings scale with it)`)
    console.log(`corpus: ${pages.length} pages, ${(pageBytes / 1024 / 1024).toFixed(1)} MB of text, ${copies} copies → ${documents} documents, ${chunks} chunks`)
    console.log(`${'ingest over HTTP'.padEnd(34)} ${(mb / seconds).toFixed(2).padStart(7)} MB/s  ${(documents / seconds).toFixed(0).padStart(6)} docs/s  (${mb.toFixed(0)} MB in ${seconds.toFixed(1)} s)   goal >= 5 MB/s  ${mb / seconds >= 5 ? 'ok' : 'MISSED'}`)
    console.log(`${'server CPU for the ingest'.padEnd(34)} ${(mb / ingestCpu).toFixed(2).padStart(7)} MB per CPU-second  (${ingestCpu.toFixed(1)} s of CPU, all threads: the figure load on the machine moves least)`)
    console.log(`${`search over HTTP, ${asked.length} questions`.padEnd(34)} p50 ${percentile(latencies, 50).toFixed(1).padStart(6)} ms  p95 ${percentile(latencies, 95).toFixed(1).padStart(6)} ms   goal p95 <= 25 ms (issue 37.6)  ${percentile(latencies, 95) <= 25 ? 'ok' : 'MISSED'}`)
    console.log(`${'source page in top 10'.padEnd(34)} ${((found / asked.length) * 100).toFixed(1).padStart(7)} %`)
    console.log(`${'server RSS after ingest'.padEnd(34)} ${afterIngest.toFixed(0).padStart(7)} MB   (after searches ${afterSearch.toFixed(0)} MB, peak ${peak.toFixed(0)} MB)   goal <= 500 MB  ${Math.max(afterIngest, afterSearch) <= 500 ? 'ok' : 'MISSED'}`)
  } finally {
    proc.kill()
    await proc.exited
    rmSync(dataDir, { recursive: true, force: true })
  }
}

if (import.meta.main) await benchRagReal()
