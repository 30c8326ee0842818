// Mixed traffic from 64 users for 60 s (BENCH_MIXED_USERS, BENCH_MIXED_SECONDS) against the server
// started as `bun run start` does, on the built-in engines: latency per route (p50, p99) and
// errors. Chat and stream are read beside the other routes of the same run, their baseline.
// BENCH_SERVER_ROOT runs the server of another checkout (e.g. an older commit) for a before/after.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startServerProcess } from './server'

const USERS = Number(process.env.BENCH_MIXED_USERS ?? 64)
const SECONDS = Number(process.env.BENCH_MIXED_SECONDS ?? 60)
const root = process.env.BENCH_SERVER_ROOT ?? join(import.meta.dir, '..')

/** Starts `bun src/index.ts` of `root` on a free port with a new data dir; resolves its base URL. */

async function post(url: string, body: unknown, token?: string) {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) })
  if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`)
  return response.json() as Promise<any>
}

export async function benchMixed() {
  const server = await startServerProcess({ root, env: { UAGENT_RATE_LIMIT_MAX: '100000000' } })
  try {
    const admin = await post(`${server.base}/auth/login`, { email: 'bench@example.com', password: 'bench-password' })
    // Users, each with a small handbook collection to search.
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
    const result = JSON.parse(out.trim().split('\n').pop()!) as { routes: Record<string, { count: number; errors: number; p50: number; p99: number }>; errors: string[]; requests: number }
    console.log(`\n== Mixed traffic (${USERS} users, ${SECONDS} s, built-in engines, server from ${root === join(import.meta.dir, '..') ? 'this checkout' : root})`)
    const failed = Object.values(result.routes).reduce((sum, route) => sum + route.errors, 0)
    for (const [route, figures] of Object.entries(result.routes)) {
      const goal = route === 'POST /chat' || route === 'GET /stream' ? `goal p99 <= 100 ms  ${figures.p99 <= 100 ? 'ok' : 'MISSED'}` : ''
      console.log(`${route.padEnd(20)} ${String(figures.count).padStart(7)} requests  p50 ${figures.p50.toFixed(1).padStart(7)} ms  p99 ${figures.p99.toFixed(1).padStart(7)} ms  errors ${figures.errors}  ${goal}`)
    }
    console.log(`${'all routes'.padEnd(20)} ${String(result.requests).padStart(7)} requests  errors ${failed} (goal 0)${result.errors.length ? `; first: ${result.errors.join(', ')}` : ''}`)
  } finally {
    await server.stop()
  }
}

if (import.meta.main) await benchMixed()
