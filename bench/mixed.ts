// Mixed traffic from 64 users for 60 s (BENCH_MIXED_USERS, BENCH_MIXED_SECONDS) against the server
// started as `bun run start` does, on the built-in engines: latency per route (p50, p99), errors and
// throughput (bench/mixed-users.ts: chat, stream, search, conversations, me, health, system info,
// calculator, and speech synthesis for ~8 % of the requests).
// BENCH_SERVER_ROOT runs the server of another checkout instead; BENCH_BASELINE_ROOT runs that
// checkout's server first, then this one, under the same load: a before/after in one run.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startServerProcess } from './server'

const USERS = Number(process.env.BENCH_MIXED_USERS ?? 64)
const SECONDS = Number(process.env.BENCH_MIXED_SECONDS ?? 60)
const here = join(import.meta.dir, '..')
const root = process.env.BENCH_SERVER_ROOT ?? here
const baselineRoot = process.env.BENCH_BASELINE_ROOT

type Figures = { count: number; errors: number; p50: number; p99: number }
type MixedResult = { routes: Record<string, Figures>; errors: string[]; requests: number; seconds: number }

async function post(url: string, body: unknown, token?: string) {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) })
  if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`)
  return response.json() as Promise<any>
}

/** Starts `serverRoot`'s server, makes the users (each with a small handbook collection), runs the load; the server is stopped after. */
async function runMixed(serverRoot: string): Promise<MixedResult> {
  const server = await startServerProcess({ root: serverRoot, env: { UAGENT_RATE_LIMIT_MAX: '100000000' } })
  try {
    const admin = await post(`${server.base}/auth/login`, { email: 'bench@example.com', password: 'bench-password' })
    const tokens: string[] = []
    for (let n = 0; n < USERS; n++) {
      const email = `user${n}@example.com`
      await post(`${server.base}/auth/users`, { email, password: 'user-password-1', roles: ['user'] }, admin.accessToken)
      const { accessToken } = await post(`${server.base}/auth/login`, { email, password: 'user-password-1' })
      await post(
        `${server.base}/rag/ingest`,
        {
          collection: 'handbook',
          documents: Array.from({ length: 5 }, (_, d) => ({ id: `page-${d}`, content: `Page ${d}. The harbour office opens at ${6 + d} in the morning. The keys are kept by the duty officer of shift ${d}; ask at the front desk. Boats moor at berth ${d * 3}.` })),
        },
        accessToken,
      )
      tokens.push(accessToken)
    }
    const tokensFile = join(mkdtempSync(join(tmpdir(), 'uagent-bench-')), 'tokens.json')
    await Bun.write(tokensFile, JSON.stringify(tokens))
    const proc = Bun.spawn(['bun', join(import.meta.dir, 'mixed-users.ts'), server.base, tokensFile, String(SECONDS)], { stdout: 'pipe', stderr: 'inherit' })
    const out = await new Response(proc.stdout).text()
    await proc.exited
    return JSON.parse(out.trim().split('\n').pop()!) as MixedResult
  } finally {
    await server.stop()
  }
}

function print(label: string, result: MixedResult) {
  console.log(`\n== Mixed traffic (${USERS} users, ${SECONDS} s, built-in engines, server from ${label})`)
  const failed = Object.values(result.routes).reduce((sum, route) => sum + route.errors, 0)
  for (const [route, figures] of Object.entries(result.routes)) {
    const limit = route === 'POST /voice/tts' ? 400 : 100
    const goal = `goal p99 <= ${limit} ms  ${figures.p99 <= limit ? 'ok' : 'MISSED'}`
    console.log(`${route.padEnd(20)} ${String(figures.count).padStart(7)} requests  p50 ${figures.p50.toFixed(1).padStart(7)} ms  p99 ${figures.p99.toFixed(1).padStart(7)} ms  errors ${figures.errors}  ${goal}`)
  }
  const throughput = result.requests / (result.seconds || SECONDS)
  console.log(`${'all routes'.padEnd(20)} ${String(result.requests).padStart(7)} requests  ${throughput.toFixed(0)} req/s  errors ${failed} (goal 0)${result.errors.length ? `; first: ${result.errors.join(', ')}` : ''}`)
  return throughput
}

export async function benchMixed() {
  const label = (r: string) => (r === here ? 'this checkout' : r)
  if (baselineRoot) {
    const before = print(`${label(baselineRoot)} (baseline)`, await runMixed(baselineRoot))
    const after = print(label(root), await runMixed(root))
    console.log(`throughput: ${(after / before).toFixed(2)}x the baseline's (goal >= 1.8x)  ${after / before >= 1.8 ? 'ok' : 'MISSED'}`)
    return
  }
  print(label(root), await runMixed(root))
}

if (import.meta.main) await benchMixed()
