// Analytics: what recording every request costs the authenticated route (recording on beside
// recording off, in the same run), and how long the dashboard and metric series take over
// 1 million recorded requests.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApp, createServices } from '../src/app'
import { HOUR, type RequestRecord } from '../src/modules/analytics/recorder'
import { load, median } from './http'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 21)
const DURATION_MS = Number(process.env.BENCH_MS ?? 2000)
const RECORDS = Number(process.env.BENCH_ANALYTICS_RECORDS ?? 1_000_000)
const ADMIN = { email: 'bench@example.com', password: 'bench-password' }

/**
 * A server in a process of its own, as it runs in use (the two servers compared share no heap,
 * JIT or garbage collector with each other or with this process): `bun bench/analytics.ts serve on|off`.
 */
async function serve(recording: boolean) {
  const dataDir = mkdtempSync(join(tmpdir(), 'uagent-bench-analytics-'))
  const services = createServices({
    dataDir,
    env: { UAGENT_ANALYTICS: recording ? 'on' : 'off' },
    adminEmail: ADMIN.email,
    adminPassword: ADMIN.password,
    rateLimitMax: 1_000_000_000,
    log: () => {},
  })
  const app = buildApp(services).listen({ port: 0, development: false })
  const base = `http://127.0.0.1:${app.server!.port}`
  const login = (await (await fetch(`${base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) })).json()) as {
    accessToken: string
  }
  console.log(JSON.stringify({ base, token: login.accessToken }))
  // Told to stop by its standard input closing: prints how many requests it recorded.
  for await (const _ of Bun.stdin.stream()) {
  }
  app.stop(true)
  await services.recorder.close()
  const recorded = services.analyticsDb.query<{ n: number }, []>('SELECT count(*) AS n FROM analytics_requests').get()!.n
  services.db.close()
  rmSync(dataDir, { recursive: true, force: true })
  console.log(JSON.stringify({ recorded }))
  process.exit(0)
}

/** Starts a bench server process (`prefix`: a command it runs under, as `taskset -c 0`). */
async function server(recording: boolean, prefix: string[] = []) {
  const proc = Bun.spawn([...prefix, 'bun', import.meta.path, 'serve', recording ? 'on' : 'off'], { stdin: 'pipe', stdout: 'pipe', stderr: 'inherit' })
  const reader = proc.stdout.getReader()
  let output = ''
  while (!output.includes('\n')) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`the bench server exited: ${output}`)
    output += new TextDecoder().decode(value)
  }
  const { base, token } = JSON.parse(output.slice(0, output.indexOf('\n'))) as { base: string; token: string }
  return {
    base,
    token,
    /** The server's process id (that of its main thread, which answers requests). */
    pid: proc.pid,
    /** Stops the server; the number of requests it recorded. */
    async close(): Promise<number> {
      proc.stdin.end()
      let rest = output.slice(output.indexOf('\n') + 1)
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        rest += new TextDecoder().decode(value)
      }
      await proc.exited
      return (JSON.parse(rest.trim().split('\n').pop()!) as { recorded: number }).recorded
    },
  }
}

/**
 * `BENCH_ANALYTICS_AA=1` runs the comparison with recording off on both servers (an A/A run): the
 * "cost" it prints is the harness's own error on this machine, the margin to read the real one with.
 */
const AA = Boolean(process.env.BENCH_ANALYTICS_AA)

async function throughput() {
  const on = await server(!AA)
  const off = await server(false)
  const figures = { on: [] as number[], off: [] as number[] }
  // One round each first, not counted: both servers' code is compiled by the JIT before anything is measured.
  await load(`${off.base}/auth/me`, off.token)
  await load(`${on.base}/auth/me`, on.token)
  // Rounds alternate so that drift on a shared machine hits both alike, and which server goes
  // first alternates too (off-on, on-off, ...): a server loaded right after the other one is not
  // always the same one.
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 ? (['on', 'off'] as const) : (['off', 'on'] as const)
    for (const which of order) {
      const server = which === 'on' ? on : off
      figures[which].push((await load(`${server.base}/auth/me`, server.token)).rps)
    }
  }
  const recorded = await on.close()
  await off.close()
  const ratios = figures.on.map((rps, i) => rps / figures.off[i]!)
  const cost = (1 - median(ratios)) * 100
  const spread = ratios.map((ratio) => (1 - ratio) * 100).sort((a, b) => a - b)
  console.log(`\n== Analytics (${ROUNDS} alternating rounds of ${DURATION_MS / 1000} s, a server process each; medians)${AA ? ': A/A, recording off on both' : ''}`)
  console.log(`${'GET /auth/me, recording off'.padEnd(40)} ${median(figures.off).toFixed(0).padStart(8)} req/s`)
  console.log(`${`GET /auth/me, recording ${AA ? 'off (A/A)' : 'on'}`.padEnd(40)} ${median(figures.on).toFixed(0).padStart(8)} req/s   cost ${cost.toFixed(1)}%   goal <= 5%  ${cost <= 5 ? 'ok' : 'MISSED'}`)
  console.log(`${'  cost per round, lowest to highest'.padEnd(40)} ${spread.map((value) => `${value.toFixed(1)}%`).join(' ')}`)
  console.log(`${'  requests recorded meanwhile'.padEnd(40)} ${String(recorded).padStart(8)}`)
  console.log(`${'  (an A/A run of these rounds'.padEnd(40)} moves by up to ±7% on a 2-core VM: the layouts below, loaded at once, are the steadier figures)`)
}

const SHARED_PAIRS = Number(process.env.BENCH_SHARED_PAIRS ?? 4)
const SHARED_ROUNDS = Number(process.env.BENCH_SHARED_ROUNDS ?? 4)
/**
 * Rounds each pair is loaded before it is measured. A server's JIT keeps compiling the writer
 * thread's code for its first 20-30 s under load (its functions run once a batch, a few times a
 * second, and reach the optimizing tiers late): rounds measured in that time count compile work
 * that a server pays once, not what recording costs a running one.
 */
const SHARED_WARMUP = Number(process.env.BENCH_SHARED_WARMUP ?? 8)

/**
 * Where the two servers of a simultaneous comparison run (both are loaded at once from CPU 1, so
 * that whatever slows the machine down slows both alike, and the ratio of their throughputs is the
 * ratio of what a request costs each):
 *
 * - `answering`: the two servers' answering threads (each process's main thread) share CPU 0, and
 *   every other thread of theirs (the writer thread, JIT and GC helpers) runs on CPU 1 with the
 *   loads: recording as it runs on any machine with a core besides the one answering requests.
 *   The servers stay in the bench's own scheduling group, so that the kernel shares CPU 0 between
 *   the two threads evenly. (In a group each, setsid, the kernel would split each group's share
 *   over the CPUs its threads load: the server whose writer works on CPU 1 would get less than half
 *   of CPU 0, and that showed as an 8-9 % "cost" that is the scheduler's, not recording's.)
 * - `one core`: every thread of both servers on CPU 0, each server in a session of its own
 *   (setsid), so that the kernel's autogroups give each process half of the core, all its threads
 *   sharing it: the writer thread's work counted in full on the core that answers, as on a machine
 *   (or a container) with one CPU.
 *
 * Several pairs of fresh processes (process-to-process differences are the larger error), a few
 * rounds each; which server starts first, and which load starts first, alternate.
 */
type Layout = 'answering' | 'one core'

/** Pins a server's main thread to CPU 0 and all its other threads to CPU 1 (threads made since the last call too). */
function pinAnswering(pid: number): void {
  // All threads first (one that ends meanwhile makes taskset fail: the others are pinned all the same)...
  Bun.spawnSync(['taskset', '-a', '-p', '-c', '1', String(pid)], { stdout: 'ignore', stderr: 'ignore' })
  // ...then the main thread, which must be.
  const done = Bun.spawnSync(['taskset', '-p', '-c', '0', String(pid)], { stdout: 'ignore', stderr: 'pipe' })
  if (!done.success) throw new Error(`taskset -p -c 0 ${pid}: ${done.stderr.toString().trim()}`)
}

async function simultaneous(layout: Layout) {
  const title = layout === 'answering' ? 'answering threads sharing CPU 0, the writer and helper threads on CPU 1' : 'everything on one core'
  const tools = ['taskset', 'setsid'].every((tool) => Bun.which(tool))
  if (!tools || navigator.hardwareConcurrency < 2 || !SHARED_PAIRS) {
    console.log(`\n== Analytics, ${title}: skipped (${!tools ? 'needs taskset and setsid (util-linux)' : 'needs 2 CPUs'})`)
    return
  }
  const prefix = layout === 'answering' ? ['taskset', '-c', '1'] : ['setsid', 'taskset', '-c', '0']
  const ratios: number[] = []
  const pairs: number[] = []
  const figures = { on: [] as number[], off: [] as number[] }
  for (let pair = 0; pair < SHARED_PAIRS; pair++) {
    const first = await server(pair % 2 ? false : !AA, prefix)
    const second = await server(pair % 2 ? !AA : false, prefix)
    const [on, off] = pair % 2 ? [second, first] : [first, second]
    /** Requests a second of the server with recording off and of the one with it on, loaded at once. */
    const both = async (round: number): Promise<[number, number]> => {
      // Threads a server started since (a JIT or GC helper) are put where they belong before each round.
      if (layout === 'answering') for (const server of [on, off]) pinAnswering(server.pid)
      // From CPU 1, 16 connections each (two loads at once).
      const onCpu1 = { concurrency: 16, prefix: ['taskset', '-c', '1'] }
      const offLoad = async () => (await load(`${off.base}/auth/me`, off.token, onCpu1)).rps
      const onLoad = async () => (await load(`${on.base}/auth/me`, on.token, onCpu1)).rps
      if (round % 2) {
        const [onRps, offRps] = await Promise.all([onLoad(), offLoad()])
        return [offRps, onRps]
      }
      return Promise.all([offLoad(), onLoad()])
    }
    for (let round = 0; round < SHARED_WARMUP; round++) await both(round) // warm-up, not counted
    const mine: number[] = []
    for (let round = 0; round < SHARED_ROUNDS; round++) {
      const [offRps, onRps] = await both(round)
      mine.push(onRps / offRps)
      figures.off.push(offRps)
      figures.on.push(onRps)
    }
    ratios.push(...mine)
    pairs.push(median(mine))
    await on.close()
    await off.close()
  }
  const cost = (1 - median(ratios)) * 100
  const verdict = `goal <= 5%  ${cost <= 5 ? 'ok' : `MISSED${layout === 'one core' ? ' on one core' : ''}`}`
  console.log(`\n== Analytics, ${title} (${SHARED_PAIRS} pairs of server processes loaded at once, ${SHARED_WARMUP} rounds to warm up, then ${SHARED_ROUNDS} rounds of ${DURATION_MS / 1000} s each)${AA ? ': A/A' : ''}`)
  console.log(`${`GET /auth/me, recording ${AA ? 'off (A/A)' : 'on'} beside off`.padEnd(40)} cost ${cost.toFixed(1)}%   ${verdict}   (throughput ratio, median of ${ratios.length} rounds)`)
  console.log(`${'  requests a second, medians'.padEnd(40)} off ${median(figures.off).toFixed(0)}, ${AA ? 'off (A/A)' : 'on'} ${median(figures.on).toFixed(0)} (each server with half of ${layout === 'answering' ? 'CPU 0 for its answering thread' : 'CPU 0'})`)
  console.log(`${'  cost per pair of processes'.padEnd(40)} ${pairs.map((ratio) => `${((1 - ratio) * 100).toFixed(1)}%`).join(' ')}`)
}

/** Deterministic pseudo-random numbers, so that every run loads the same records. */
function random(seed: number) {
  return () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
    return seed / 2 ** 31
  }
}

async function dashboardOverMillion() {
  const dataDir = mkdtempSync(join(tmpdir(), 'uagent-bench-analytics-'))
  const services = createServices({ dataDir, env: {}, adminEmail: ADMIN.email, adminPassword: ADMIN.password, log: () => {} })
  const app = buildApp(services)
  try {
    const routes = ['/chat', '/stream', '/rag/search', '/rag/answer', '/conversations', '/conversations/:id', '/auth/me', '/health', '/agents/task/:taskId', '/plugins', '/voice/tts', '/auth/login']
    const users = Array.from({ length: 50 }, () => crypto.randomUUID())
    const next = random(7)
    const now = Date.now()
    // A day of traffic, all inside the dashboard's 24 hours: the most it ever aggregates.
    const start = Math.floor(now / HOUR) * HOUR - 23 * HOUR
    const span = now - start
    let t = performance.now()
    const batch: RequestRecord[] = []
    for (let i = 0; i < RECORDS; i++) {
      const route = routes[i % routes.length]!
      const model = route === '/chat' || route === '/stream' || route === '/rag/answer' ? 'builtin/extractive' : null
      batch.push({
        ts: start + Math.floor((i / RECORDS) * span),
        method: route === '/chat' || route.startsWith('/rag') ? 'POST' : 'GET',
        route,
        status: next() < 0.03 ? 500 : 200,
        durationMs: Math.round(next() * 5000) / 100,
        userId: route === '/health' ? null : users[Math.floor(next() * users.length)]!,
        promptTokens: model ? 20 + Math.floor(next() * 200) : 0,
        completionTokens: model ? 10 + Math.floor(next() * 100) : 0,
        model,
      })
      if (batch.length === 100_000) services.recorder.write(batch.splice(0))
    }
    if (batch.length) services.recorder.write(batch.splice(0))
    const loadMs = performance.now() - t
    const token = ((await (await app.handle(new Request('http://localhost/auth/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) }))).json()) as { accessToken: string }).accessToken
    const headers = { authorization: `Bearer ${token}` }
    const time = async (path: string) => {
      const samples: number[] = []
      for (let i = 0; i < 7; i++) {
        t = performance.now()
        const response = await app.handle(new Request(`http://localhost${path}`, { headers }))
        await response.arrayBuffer()
        if (!response.ok) throw new Error(`${path}: ${response.status}`)
        samples.push(performance.now() - t)
      }
      return median(samples)
    }
    const dashboard = await time('/analytics/dashboard')
    const check = (await (await app.handle(new Request('http://localhost/analytics/dashboard', { headers }))).json()) as { requests: { total: number } }
    console.log(`\n== Analytics over ${RECORDS.toLocaleString('en-US')} recorded requests (loaded in ${(loadMs / 1000).toFixed(1)} s, ${Math.round(RECORDS / (loadMs / 1000)).toLocaleString('en-US')} records/s)`)
    console.log(`${'GET /analytics/dashboard'.padEnd(40)} ${dashboard.toFixed(1).padStart(8)} ms     goal <= 200 ms  ${dashboard <= 200 ? 'ok' : 'MISSED'}  (total ${check.requests.total.toLocaleString('en-US')})`)
    for (const range of ['1h', '24h', '7d', '30d']) console.log(`${`GET /analytics/metrics?timeRange=${range}`.padEnd(40)} ${(await time(`/analytics/metrics?timeRange=${range}`)).toFixed(1).padStart(8)} ms`)
    t = performance.now()
    const exported = await app.handle(new Request('http://localhost/analytics/export?format=csv&timeRange=1h', { headers }))
    const bytes = (await exported.arrayBuffer()).byteLength
    console.log(`${'GET /analytics/export?format=csv&timeRange=1h'.padEnd(40)} ${(performance.now() - t).toFixed(1).padStart(8)} ms     (${(bytes / 1024 / 1024).toFixed(1)} MB)`)
  } finally {
    await services.recorder.close()
    services.db.close()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

if (import.meta.main) {
  if (process.argv[2] === 'serve') await serve(process.argv[3] === 'on')
  else {
    // BENCH_ANALYTICS_PARTS picks parts (comma-separated): alternating, answering, one-core, dashboard.
    const parts = (process.env.BENCH_ANALYTICS_PARTS ?? 'alternating,answering,one-core,dashboard').split(',')
    if (parts.includes('alternating')) await throughput()
    if (parts.includes('answering')) await simultaneous('answering')
    if (parts.includes('one-core')) await simultaneous('one core')
    if (parts.includes('dashboard')) await dashboardOverMillion()
  }
}
