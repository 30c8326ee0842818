// The team deployment under load (issue 49): the same 64-user mix (BENCH_TEAM_USERS) on 8 accounts
// for 60 s (BENCH_TEAM_SECONDS) — chat, stream, RAG search, conversations, system info,
// calculator, TTS, health — against one server on SQLite and one on PostgreSQL + Redis, one after
// the other in the same run, each started as `bun run start` runs it. Per route p50/p99, errors,
// lost writes (an acknowledged chat missing from its conversation), throughput; then what the
// PostgreSQL server's /metrics says: queries per request by route and the pool's waits.
// Needs UAGENT_DATABASE_URL (or UAGENT_TEST_DATABASE_URL, whose role may CREATE DATABASE) and
// Debian's redis-server; the PostgreSQL half is skipped, saying so, without them.
// BENCH_TEAM_TTS_EVERY=0 leaves speech out (it is synthesized on the request thread, and while it
// runs every request waits, most of all those that wait on PostgreSQL several times);
// BENCH_TEAM_POOL sets the PostgreSQL server's UAGENT_DATABASE_POOL; BENCH_SERVER_ROOT runs the
// server of another checkout, for a before/after. Beside each p99, the p99 of the requests begun
// after the first BENCH_TEAM_SETTLE_SECONDS (default 5): every user's first requests arrive at once
// on a cold server (on PostgreSQL: new connections, statements prepared on each, cold backends), and
// in a short run that first second alone makes the p99 (docs/postgresql.md, "Under load"). The goals
// are checked on the whole run's p99.
// Goals: on PostgreSQL + Redis 0 errors, 0 lost writes, every route but TTS p99 <= 150 ms, TTS p99
// <= 400 ms, throughput >= 0.9x the SQLite server's.
import { SQL } from 'bun'
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { BENCH_ADMIN, benchLogin, startBenchRedis, startServerProcess } from './server'

const USERS = Number(process.env.BENCH_TEAM_USERS ?? 64)
const ACCOUNTS = Number(process.env.BENCH_TEAM_ACCOUNTS ?? 8)
const SECONDS = Number(process.env.BENCH_TEAM_SECONDS ?? 60)
/** Each user asks for speech once every this many rounds (BENCH_TEAM_TTS_EVERY; 0: never). */
const TTS_EVERY = Number(process.env.BENCH_TEAM_TTS_EVERY ?? 32)
const ADMIN_URL = process.env.UAGENT_DATABASE_URL?.trim() || process.env.UAGENT_TEST_DATABASE_URL?.trim()
const REDIS = Bun.which('redis-server') ?? Bun.which('/usr/bin/redis-server')
/** Extra environment of the PostgreSQL server (e.g. BENCH_TEAM_POOL=10 for UAGENT_DATABASE_POOL). */
const POOL = process.env.BENCH_TEAM_POOL
/** The checkout whose server runs (BENCH_SERVER_ROOT: another one, for a before/after). */
const ROOT = process.env.BENCH_SERVER_ROOT
/** Seconds after which requests also make a p99 of their own (read by team-users.ts too). */
const SETTLE = Number(process.env.BENCH_TEAM_SETTLE_SECONDS ?? 5)

type Result = {
  routes: Record<string, { count: number; errors: number; p50: number; p99: number; settledP99?: number }>
  errors: string[]
  requests: number
  seconds: number
  chats: number
  lost: number
}

async function post(url: string, body: unknown, token?: string) {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) })
  if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`)
  return response.json() as Promise<any>
}

/** Accounts, each with a small handbook collection; their access tokens. */
async function seed(base: string): Promise<string[]> {
  const admin = await benchLogin(base, BENCH_ADMIN)
  const tokens: string[] = []
  for (let n = 0; n < ACCOUNTS; n++) {
    const email = `member${n}@example.com`
    await post(`${base}/auth/users`, { email, password: 'member-password-1', roles: ['user'] }, admin.accessToken)
    const { accessToken } = await benchLogin(base, { email, password: 'member-password-1' })
    await post(
      `${base}/rag/ingest`,
      {
        collection: 'handbook',
        documents: Array.from({ length: 5 }, (_, d) => ({ id: `page-${d}`, content: `Page ${d}. The harbour office opens at ${6 + d} in the morning. The keys are kept by the duty officer of shift ${d}; ask at the front desk. Boats moor at berth ${d * 3}.` })),
      },
      accessToken,
    )
    tokens.push(accessToken)
  }
  return tokens
}

async function run(name: string, env: Record<string, string>): Promise<{ result: Result; metrics: string }> {
  const server = await startServerProcess({ ...(ROOT ? { root: ROOT } : {}), env: { UAGENT_DATABASE_URL: '', UAGENT_REDIS_URL: '', UAGENT_RATE_LIMIT_MAX: '100000000', UAGENT_METRICS_TOKEN: 'bench-team-metrics-token', ...env } })
  const work = mkdtempSync(join(tmpdir(), 'uagent-bench-team-'))
  try {
    const tokensFile = join(work, 'tokens.json')
    await Bun.write(tokensFile, JSON.stringify(await seed(server.base)))
    const proc = Bun.spawn(['bun', join(import.meta.dir, 'team-users.ts'), server.base, tokensFile, String(USERS), String(SECONDS), String(TTS_EVERY)], { stdout: 'pipe', stderr: 'inherit' })
    const out = await new Response(proc.stdout).text()
    if ((await proc.exited) !== 0) throw new Error(`the ${name} load generator exited with ${proc.exitCode}`)
    const metrics = await (await fetch(`${server.base}/metrics`, { headers: { authorization: 'Bearer bench-team-metrics-token' } })).text()
    return { result: JSON.parse(out.trim().split('\n').pop()!) as Result, metrics }
  } finally {
    await server.stop()
    rmSync(work, { recursive: true, force: true })
  }
}

const goalOf = (route: string) => (route === 'POST /voice/tts' ? 400 : 150)

function print(name: string, { result }: { result: Result }, goals: boolean) {
  const errors = Object.values(result.routes).reduce((sum, route) => sum + route.errors, 0)
  console.log(`-- ${name}: ${(result.requests / result.seconds).toFixed(0)} req/s, ${result.requests} requests, ${errors} errors, ${result.lost} of ${result.chats} acknowledged chats lost${result.errors.length ? `; first errors: ${result.errors.join(', ')}` : ''}`)
  for (const [route, figures] of Object.entries(result.routes)) {
    const goal = goals ? `goal p99 <= ${goalOf(route)} ms ${figures.p99 <= goalOf(route) ? 'ok' : 'MISSED'}` : ''
    const settled = figures.settledP99 === undefined ? '' : ` (after ${SETTLE}s ${figures.settledP99.toFixed(1).padStart(7)})`
    console.log(`   ${route.padEnd(34)} ${String(figures.count).padStart(7)}  p50 ${figures.p50.toFixed(1).padStart(7)} ms  p99 ${figures.p99.toFixed(1).padStart(7)} ms${settled}  errors ${figures.errors}  ${goal}`)
  }
}

/** The samples of one metric family in an exposition text: [labels, value]. */
function samples(metrics: string, name: string): [string, number][] {
  return metrics
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .map((line) => [line.slice(name.length, line.lastIndexOf(' ')), Number(line.slice(line.lastIndexOf(' ') + 1))])
}

function printDatabase(metrics: string) {
  const sums = new Map(samples(metrics, 'uagent_db_queries_per_request_sum').map(([labels, value]) => [/route="([^"]*)"/.exec(labels)?.[1] ?? labels, value] as const))
  const perRoute = samples(metrics, 'uagent_db_queries_per_request_count')
    .map(([labels, count]) => {
      const route = /route="([^"]*)"/.exec(labels)?.[1] ?? labels
      const method = /method="([^"]*)"/.exec(labels)?.[1] ?? ''
      return `${method} ${route} ${((sums.get(route) ?? 0) / count).toFixed(2)}`
    })
    .filter((line) => !line.includes('/auth/') || line.includes('/auth/me'))
  console.log(`   PostgreSQL queries per request (mean): ${perRoute.join('; ')}`)
  const count = samples(metrics, 'uagent_db_pool_wait_seconds_count')[0]?.[1] ?? 0
  const sum = samples(metrics, 'uagent_db_pool_wait_seconds_sum')[0]?.[1] ?? 0
  const buckets = samples(metrics, 'uagent_db_pool_wait_seconds_bucket')
  const atZero = buckets.find(([labels]) => labels.includes('le="0"'))?.[1] ?? 0
  const within = (bound: string) => buckets.find(([labels]) => labels.includes(`le="${bound}"`))?.[1] ?? 0
  console.log(
    `   pool waits: ${count} queries/transactions, ${((100 * (count - atZero)) / Math.max(1, count)).toFixed(1)}% waited for a connection, mean wait ${((1000 * sum) / Math.max(1, count)).toFixed(2)} ms, ${((100 * (count - within('0.01'))) / Math.max(1, count)).toFixed(1)}% over 10 ms`,
  )
}

const load = () => `machine load ${loadavg()[0]!.toFixed(1)}`
console.log(`\n== The team deployment under load: ${USERS} users on ${ACCOUNTS} accounts, ${SECONDS} s each, TTS ${TTS_EVERY ? `every ${TTS_EVERY} rounds` : 'left out'}, SQLite then PostgreSQL + Redis (issue 49)${ROOT ? `, server from ${ROOT}` : ''}; ${load()}`)
const sqlite = await run('SQLite', {})
print('SQLite', sqlite, false)
const missing = !ADMIN_URL ? 'UAGENT_DATABASE_URL (or UAGENT_TEST_DATABASE_URL)' : !REDIS ? 'redis-server (apt-get install redis-server)' : null
if (missing) {
  console.log(`PostgreSQL + Redis skipped: needs ${missing}`)
  process.exit(0)
}
const work = mkdtempSync(join(tmpdir(), 'uagent-bench-team-redis-'))
const redis = startBenchRedis(REDIS!, work)
const admin = new SQL(ADMIN_URL!, { max: 1 })
const database = `uagent_bench_team_${crypto.randomUUID().replaceAll('-', '').slice(0, 10)}`
try {
  await admin.unsafe(`CREATE DATABASE ${database}`)
  const url = Object.assign(new URL(ADMIN_URL!), { pathname: `/${database}` }).toString()
  const postgres = await run('PostgreSQL + Redis', {
    UAGENT_DATABASE_URL: url,
    UAGENT_REDIS_URL: redis.url,
    ...(POOL ? { UAGENT_DATABASE_POOL: POOL } : {}),
  })
  print(`PostgreSQL + Redis${POOL ? ` (UAGENT_DATABASE_POOL=${POOL})` : ''}`, postgres, true)
  printDatabase(postgres.metrics)
  const ratio = postgres.result.requests / postgres.result.seconds / (sqlite.result.requests / sqlite.result.seconds)
  const errors = Object.values(postgres.result.routes).reduce((sum, route) => sum + route.errors, 0)
  const slow = Object.entries(postgres.result.routes).filter(([route, figures]) => figures.p99 > goalOf(route))
  console.log(
    `${load()}; PostgreSQL + Redis / SQLite throughput ${ratio.toFixed(2)}x (goal >= 0.9x ${ratio >= 0.9 ? 'ok' : 'MISSED'}); errors ${errors}, lost writes ${postgres.result.lost} (goal 0); p99 goals ${slow.length ? `MISSED on ${slow.map(([route]) => route).join(', ')}` : 'ok'}`,
  )
} finally {
  await redis.stop()
  await admin.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => {})
  await admin.close()
  rmSync(work, { recursive: true, force: true })
}
