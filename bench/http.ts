// HTTP overhead of the server against a bare Bun.serve JSON handler, and resident memory during and after start.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startInProcess, startServerProcess } from './server'

const CONCURRENCY = 32
const DURATION_MS = Number(process.env.BENCH_MS ?? 2000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)

const WRK = Bun.which('wrk')

/**
 * Load from a second process: wrk (one thread, C, light on the shared CPU) when it is installed
 * (`apt-get install wrk`), otherwise bench/load.ts, a Bun fetch loop that costs more CPU itself.
 * `prefix` is a command the load generator runs under (`taskset -c 1`, say).
 */
export async function load(
  url: string,
  token?: string,
  { concurrency = CONCURRENCY, prefix = [] as string[] } = {},
): Promise<{ rps: number; errors: number }> {
  if (WRK) {
    const args = [...prefix, WRK, '-t1', `-c${concurrency}`, `-d${DURATION_MS / 1000}s`, ...(token ? ['-H', `authorization: Bearer ${token}`] : []), url]
    const proc = Bun.spawn(args, { stdout: 'pipe', stderr: 'inherit' })
    const out = await new Response(proc.stdout).text()
    await proc.exited
    const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0)
    const errors = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0)
    return { rps, errors }
  }
  const proc = Bun.spawn([...prefix, 'bun', join(import.meta.dir, 'load.ts'), url, String(concurrency), String(DURATION_MS), ...(token ? [token] : [])], {
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const out = await new Response(proc.stdout).text()
  await proc.exited
  return JSON.parse(out.trim().split('\n').pop()!) as { requests: number; errors: number; rps: number }
}

function row(label: string, rps: number, ratio: number, goal: number) {
  console.log(`${label.padEnd(34)} ${rps.toFixed(0).padStart(8)} req/s   ${(ratio * 100).toFixed(1).padStart(5)}% of bare   goal >= ${goal}%  ${ratio * 100 >= goal ? 'ok' : 'MISSED'}`)
}

/**
 * Resident memory of `bun run start`'s server, sampled every 20 ms from its start: the peak until
 * it has answered its first /health, and the figure 10 s later, once settled. A first start (it
 * creates the admin, trains and caches the intent model in a child process) and a second one on
 * the same data dir are both measured.
 */
async function residentMemoryOfStarts(): Promise<{ first: { peak: number; settled: number }; second: { peak: number; settled: number } }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'uagent-bench-'))
  const start = async () => {
    let pid = 0
    const rss = async () => {
      try {
        return pid ? Number(/VmRSS:\s+(\d+)/.exec(await Bun.file(`/proc/${pid}/status`).text())![1]) * 1024 : 0
      } catch {
        return 0
      }
    }
    let peak = 0
    const sampler = setInterval(async () => {
      peak = Math.max(peak, await rss())
    }, 20)
    let server: Awaited<ReturnType<typeof startServerProcess>> | undefined
    try {
      server = await startServerProcess({ dataDir, onSpawn: (spawned) => (pid = spawned) })
      if (!(await fetch(`${server.base}/health`)).ok) throw new Error('the server did not answer /health')
      peak = Math.max(peak, await rss())
      const startPeak = peak
      await Bun.sleep(10_000)
      return { peak: startPeak, settled: await rss() }
    } finally {
      clearInterval(sampler)
      await server?.stop()
    }
  }
  try {
    return { first: await start(), second: await start() }
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
}

export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

export async function benchHttp() {
  // The baselines answer a JSON document of the same shape and size as /health's.
  const document = {
    status: 'healthy',
    uptime: 1,
    memory: '55.5 MB',
    connections: { database: 'connected', vectorStore: 'connected', embedder: 'builtin', llm: 'builtin' },
    features: { rag: true, voice: false, plugins: false, multiAgent: false },
    models: { embedder: 'builtin/hash-embed-384', generator: 'builtin/extractive' },
  }
  const bare = Bun.serve({ port: 0, fetch: () => Response.json(document) })
  // The contract puts X-Request-Id on every response; this baseline pays for that header too.
  const bareWithId = Bun.serve({ port: 0, fetch: () => Response.json(document, { headers: { 'x-request-id': crypto.randomUUID() } }) })

  const server = await startInProcess({ env: process.env.BENCH_ANALYTICS ? { UAGENT_ANALYTICS: process.env.BENCH_ANALYTICS } : {}, rateLimitMax: 1_000_000_000 })
  const { base, login } = server

  // Rounds alternate between the servers so drift on a shared machine hits all of them alike.
  const figures = { bare: [] as number[], bareWithId: [] as number[], health: [] as number[], authed: [] as number[] }
  let errors = 0
  for (let round = 0; round < ROUNDS; round++) {
    figures.bare.push((await load(`http://127.0.0.1:${bare.port}/health`)).rps)
    figures.bareWithId.push((await load(`http://127.0.0.1:${bareWithId.port}/health`)).rps)
    const health = await load(`${base}/health`)
    const authed = await load(`${base}/auth/me`, login.accessToken)
    figures.health.push(health.rps)
    figures.authed.push(authed.rps)
    errors += health.errors + authed.errors
  }
  bare.stop(true)
  bareWithId.stop(true)
  server.stop()

  const bareRps = median(figures.bare)
  const withIdRps = median(figures.bareWithId)
  console.log(`\n== HTTP (${CONCURRENCY} connections, ${ROUNDS} alternating rounds of ${DURATION_MS} ms, medians; load from a second process: ${WRK ? 'wrk' : 'bench/load.ts (install wrk for steadier figures)'})`)
  console.log(`${'bare Bun.serve JSON handler'.padEnd(34)} ${bareRps.toFixed(0).padStart(8)} req/s   baseline`)
  console.log(`${'bare Bun.serve + X-Request-Id'.padEnd(34)} ${withIdRps.toFixed(0).padStart(8)} req/s   ${((withIdRps / bareRps) * 100).toFixed(1).padStart(5)}% of bare (the contract's header alone)`)
  // Ratios are taken per round (each against the baseline measured next to it), then the median.
  const ratio = (values: number[]) => median(values.map((value, i) => value / figures.bare[i]!))
  row('GET /health', median(figures.health), ratio(figures.health), 85)
  row('GET /auth/me (bearer JWT + session)', median(figures.authed), ratio(figures.authed), 55)
  if (errors) console.log(`  (${errors} failed requests)`)
  const memory = await residentMemoryOfStarts()
  const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1).padStart(8)} MB`
  for (const [label, figures] of [['first start', memory.first], ['second start', memory.second]] as const) {
    console.log(`${`resident memory, ${label}: peak`.padEnd(34)} ${mb(figures.peak)}      goal <= 150 MB  ${figures.peak <= 150 * 1024 * 1024 ? 'ok' : 'MISSED'}`)
    console.log(`${`resident memory, ${label}: +10 s`.padEnd(34)} ${mb(figures.settled)}      goal <= 100 MB  ${figures.settled <= 100 * 1024 * 1024 ? 'ok' : 'MISSED'}`)
  }
}

if (import.meta.main) await benchHttp()
