// What recording costs in CPU time, a steadier figure than throughput on a shared machine:
// `bun bench/analytics-cpu.ts` starts a server with recording off and one with it on, each in a
// process of its own (alternately, BENCH_ROUNDS times), loads GET /auth/me from a further process,
// and prints the CPU time per request answered of the server's threads: the one answering requests,
// the writer thread, and the rest (JIT, GC, allocator), as medians. Not part of `bun run bench`.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApp, createServices } from '../src/app'
import { median } from './http'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const DURATION_MS = Number(process.env.BENCH_MS ?? 3000)
/** Load before the measured one (JIT compilation, connections). */
const WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? 1500)
const ADMIN = { email: 'bench@example.com', password: 'bench-password' }

/**
 * CPU time (µs) of this process's threads by name (numbered names folded together): the time the
 * scheduler ran each (/proc/self/task/N/schedstat, in ns), else /proc's stat in clock ticks of
 * 10 ms (sampled at each tick: a thread that runs in bursts shorter than a tick, as the writer
 * does, is then counted only roughly).
 */
function threadTimes(): Map<string, number> {
  const times = new Map<string, number>()
  for (const task of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${task}/stat`, 'utf8')
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/[0-9]+$/, '')
      let us: number
      try {
        us = Number(readFileSync(`/proc/self/task/${task}/schedstat`, 'utf8').split(' ')[0]) / 1000
      } catch {
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
        us = (Number(fields[11]) + Number(fields[12])) * 10_000
      }
      times.set(name, (times.get(name) ?? 0) + us)
    } catch {
      // The thread ended meanwhile.
    }
  }
  return times
}

/** One server (this process), loaded by bench/load.ts: prints its CPU per request as JSON. */
async function serve(recording: boolean) {
  const dataDir = mkdtempSync(join(tmpdir(), 'uagent-bench-analytics-cpu-'))
  const services = createServices({ dataDir, env: { UAGENT_ANALYTICS: recording ? 'on' : 'off' }, adminEmail: ADMIN.email, adminPassword: ADMIN.password, rateLimitMax: 1_000_000_000, log: () => {} })
  const app = buildApp(services).listen({ port: 0, development: false })
  const base = `http://127.0.0.1:${app.server!.port}`
  const login = (await (await fetch(`${base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) })).json()) as { accessToken: string }
  const load = async (ms: number) => {
    const proc = Bun.spawn(['bun', join(import.meta.dir, 'load.ts'), `${base}/auth/me`, '32', String(ms), login.accessToken], { stdout: 'pipe', stderr: 'inherit' })
    const out = await new Response(proc.stdout).text()
    await proc.exited
    return JSON.parse(out.trim().split('\n').pop()!) as { requests: number; seconds: number }
  }
  await load(WARMUP_MS) // warm-up: JIT, connections
  // load.ts warms its connections for a quarter of the time (at most 500 ms) before it counts:
  // the CPU of that part is counted from the next warm-up's rate, as requests it answered.
  const before = threadTimes()
  const { requests, seconds } = await load(DURATION_MS)
  const after = threadTimes()
  const answered = requests * ((seconds * 1000 + Math.min(500, DURATION_MS / 4)) / (seconds * 1000))
  const per = (name: string) => ((after.get(name) ?? 0) - (before.get(name) ?? 0)) / answered
  let total = 0
  for (const [name, us] of after) total += us - (before.get(name) ?? 0)
  const main = per('bun')
  const writer = per('Worker')
  console.log(JSON.stringify({ rps: requests / seconds, main, writer, other: total / answered - main - writer }))
  app.stop(true)
  await services.recorder.close()
  services.db.close()
  rmSync(dataDir, { recursive: true, force: true })
  process.exit(0)
}

async function compare() {
  type Figures = { main: number[]; writer: number[]; other: number[] }
  const figures: Record<'off' | 'on', Figures> = { off: { main: [], writer: [], other: [] }, on: { main: [], writer: [], other: [] } }
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of ['off', 'on'] as const) {
      const proc = Bun.spawn(['bun', import.meta.path, mode], { stdout: 'pipe', stderr: 'inherit' })
      const out = await new Response(proc.stdout).text()
      await proc.exited
      const result = JSON.parse(out.trim().split('\n').pop()!) as { main: number; writer: number; other: number }
      for (const key of ['main', 'writer', 'other'] as const) figures[mode][key].push(result[key])
    }
  }
  const line = (label: string, f: Figures) =>
    `${label.padEnd(40)} ${median(f.main).toFixed(1).padStart(6)} µs request thread  ${median(f.writer).toFixed(1).padStart(5)} µs writer thread  ${median(f.other).toFixed(1).padStart(5)} µs other threads`
  console.log(`\n== Analytics: server CPU time per GET /auth/me (${ROUNDS} alternating rounds, medians)`)
  console.log(line('recording off', figures.off))
  console.log(line('recording on', figures.on))
  const cost = (f: Figures) => median(f.main) + median(f.writer) + median(f.other)
  console.log(`${'  recording costs'.padEnd(40)} ${(cost(figures.on) - cost(figures.off)).toFixed(1).padStart(6)} µs per request`)
}

if (import.meta.main) {
  const mode = process.argv[2]
  if (mode === 'on' || mode === 'off') await serve(mode === 'on')
  else await compare()
}
