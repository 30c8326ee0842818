// Several replicas (issue 35): one replica against two on one PostgreSQL and one Redis, under the
// same mixed read load from wrk, and how soon a change on one replica is seen on the other
// (a logout, an ingest) while that load runs. Needs UAGENT_DATABASE_URL (or
// UAGENT_TEST_DATABASE_URL, whose role may CREATE DATABASE), Debian's redis-server and wrk;
// skipped, saying so, without them. Goals: two replicas >= 1.3x one; changes seen within p99 100 ms.
import { SQL } from 'bun'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BENCH_ADMIN, benchLogin, startBenchRedis, startServerProcess } from './server'

const ADMIN_URL = process.env.UAGENT_DATABASE_URL?.trim() || process.env.UAGENT_TEST_DATABASE_URL?.trim()
const WRK = Bun.which('wrk')
const REDIS = Bun.which('redis-server') ?? Bun.which('/usr/bin/redis-server')
const SECONDS = Number(process.env.BENCH_SCALE_SECONDS ?? 10)
const CONNECTIONS = 32
const PROBES = Number(process.env.BENCH_SCALE_PROBES ?? 30)

console.log('\n== Several replicas: one against two on one PostgreSQL and one Redis (mixed authenticated reads from wrk)')
const missing = !ADMIN_URL ? 'UAGENT_DATABASE_URL (or UAGENT_TEST_DATABASE_URL)' : !WRK ? 'wrk (apt-get install wrk)' : !REDIS ? 'redis-server (apt-get install redis-server)' : null
if (missing) {
  console.log(`skipped: needs ${missing}`)
  process.exit(0)
}

const work = mkdtempSync(join(tmpdir(), 'uagent-bench-scale-'))
const redis = startBenchRedis(REDIS!, work)
await Bun.sleep(300)
const admin = new SQL(ADMIN_URL!, { max: 1 })
const database = `uagent_bench_scale_${crypto.randomUUID().replaceAll('-', '').slice(0, 10)}`
await admin.unsafe(`CREATE DATABASE ${database}`)
const databaseUrl = (() => {
  const url = new URL(ADMIN_URL!)
  url.pathname = `/${database}`
  return url.toString()
})()

const env = {
  UAGENT_DATABASE_URL: databaseUrl,
  UAGENT_REDIS_URL: redis.url,
  UAGENT_JWT_SECRET: 'bench-scale-secret-'.padEnd(48, 'x'),
  UAGENT_RATE_LIMIT_MAX: '1000000000',
}
type Replica = Awaited<ReturnType<typeof startServerProcess>>
const replicas: Replica[] = []
const startReplica = async (name: string) => {
  const replica = await startServerProcess({ env: { ...env, UAGENT_INSTANCE_ID: name } })
  replicas.push(replica)
  return replica
}

/** CPU seconds (user + system) a process has used so far. */
const cpuSeconds = async (pid: number) => {
  try {
    const fields = (await Bun.file(`/proc/${pid}/stat`).text()).split(') ')[1]!.split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return 0
  }
}
const pgPids = async () => {
  const out = await new Response(Bun.spawn(['pgrep', '-f', 'postgres'], { stdout: 'pipe' }).stdout).text()
  return out.split('\n').filter(Boolean).map(Number)
}

const script = join(work, 'mixed.lua')
writeFileSync(
  script,
  `local token = os.getenv("BENCH_TOKEN")
local headers = { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }
local i = 0
request = function()
  i = i + 1
  local k = i % 4
  if k == 0 then return wrk.format("GET", "/auth/me", headers) end
  if k == 1 then return wrk.format("GET", "/conversations?limit=20", headers) end
  if k == 2 then return wrk.format("POST", "/rag/search", headers, '{"collection":"handbook","query":"how many vacation days","limit":5}') end
  return wrk.format("GET", "/system/info", headers)
end
`,
)

/** wrk against each base (connections split evenly), for SECONDS; requests per second, p99 (ms), non-2xx. */
async function load(bases: string[], token: string) {
  const runs = bases.map((base) =>
    Bun.spawn([WRK!, '-t1', `-c${Math.max(1, Math.floor(CONNECTIONS / bases.length))}`, `-d${SECONDS}s`, '--latency', '-s', script, base], {
      env: { ...process.env, BENCH_TOKEN: token },
      stdout: 'pipe',
      stderr: 'inherit',
    }),
  )
  const outputs = await Promise.all(runs.map((run) => new Response(run.stdout).text()))
  let rps = 0
  let errors = 0
  let p99 = 0
  for (const out of outputs) {
    rps += Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0)
    errors += Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0)
    const latency = /99%\s+([\d.]+)(us|ms|s)/.exec(out)
    if (latency) p99 = Math.max(p99, Number(latency[1]) * (latency[2] === 'us' ? 0.001 : latency[2] === 's' ? 1000 : 1))
  }
  return { rps, errors, p99 }
}

async function seed(base: string, token: string) {
  const documents = Array.from({ length: 200 }, (_, i) => ({
    id: `policy-${i}`,
    content: `Section ${i}. Employees get ${20 + (i % 10)} vacation days a year; travel is booked through the portal and hotels are capped at ${100 + i} euros a night.`,
  }))
  const ingest = await fetch(`${base}/rag/ingest`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ collection: 'handbook', documents }) })
  if (!ingest.ok) throw new Error(`seed ingest: ${ingest.status} ${await ingest.text()}`)
  for (let i = 0; i < 20; i++) {
    await fetch(`${base}/chat`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ message: `question ${i} about the travel policy` }) })
  }
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((x, y) => x - y)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN
}

/** How long (ms) until `check` holds, polled every 5 ms (null after 5 s). */
async function until(check: () => Promise<boolean>) {
  const started = performance.now()
  while (performance.now() - started < 5000) {
    if (await check()) return performance.now() - started
    await Bun.sleep(5)
  }
  return null
}

try {
  const a = await startReplica('replica-a')
  const login = await benchLogin(a.base)
  await seed(a.base, login.accessToken)

  const pids = [a.pid]
  const cpuBefore = await Promise.all([...pids, ...(await pgPids())].map(cpuSeconds))
  const one = await load([a.base], login.accessToken)
  const cpuOne = (await Promise.all([...pids, ...(await pgPids())].map(cpuSeconds))).reduce((s, v) => s + v, 0) - cpuBefore.reduce((s, v) => s + v, 0)

  const b = await startReplica('replica-b')
  await benchLogin(b.base)
  const cpuBefore2 = (await Promise.all([a.pid, b.pid, ...(await pgPids())].map(cpuSeconds))).reduce((s, v) => s + v, 0)
  // The change probes run during the two-replica load.
  const deadline = performance.now() + SECONDS * 1000 - 500
  const probes = (async () => {
    const revocations: number[] = []
    const ingests: number[] = []
    await Bun.sleep(1000)
    for (let i = 0; i < PROBES; i++) {
      const session = await benchLogin(a.base, BENCH_ADMIN)
      const me = () => fetch(`${b.base}/auth/me`, { headers: { authorization: `Bearer ${session.accessToken}` } }).then((r) => r.status)
      if ((await me()) !== 200) continue
      await fetch(`${a.base}/auth/logout`, { method: 'POST', headers: { authorization: `Bearer ${session.accessToken}` } })
      const revoked = await until(async () => (await me()) === 401)
      if (revoked !== null) revocations.push(revoked)
      const word = `zq${crypto.randomUUID().replaceAll('-', '').slice(0, 10)}`
      await fetch(`${a.base}/rag/ingest`, {
        method: 'POST',
        headers: { authorization: `Bearer ${login.accessToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ collection: 'probes', documents: [{ id: word, content: `The probe word is ${word}.` }] }),
      })
      const found = await until(async () => {
        const response = await fetch(`${b.base}/rag/search`, { method: 'POST', headers: { authorization: `Bearer ${login.accessToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ collection: 'probes', query: word, limit: 1 }) })
        const body = (await response.json()) as { results?: { id: string }[] }
        return body.results?.some((result) => result.id.startsWith(word)) ?? false
      })
      if (found !== null) ingests.push(found)
      // Only while the load runs.
      if (performance.now() > deadline) break
    }
    return { revocations, ingests }
  })()
  const two = await load([a.base, b.base], login.accessToken)
  const cpuTwo = (await Promise.all([a.pid, b.pid, ...(await pgPids())].map(cpuSeconds))).reduce((s, v) => s + v, 0) - cpuBefore2
  const seen = await probes

  console.log(`${CONNECTIONS} connections, ${SECONDS} s; loop of GET /auth/me, GET /conversations, POST /rag/search (200 docs), GET /system/info`)
  console.log(`one replica   ${one.rps.toFixed(0).padStart(6)} req/s  p99 ${one.p99.toFixed(1)} ms  errors ${one.errors}  CPU of servers + PostgreSQL ${cpuOne.toFixed(1)} s of ${(2 * SECONDS).toFixed(0)} available`)
  console.log(`two replicas  ${two.rps.toFixed(0).padStart(6)} req/s  p99 ${two.p99.toFixed(1)} ms  errors ${two.errors}  CPU of servers + PostgreSQL ${cpuTwo.toFixed(1)} s of ${(2 * SECONDS).toFixed(0)} available`)
  const ratio = two.rps / one.rps
  console.log(`two / one     ${ratio.toFixed(2)}x (goal >= 1.3x)${ratio >= 1.3 ? ' ok' : ` — ${navigator.hardwareConcurrency} cores: with wrk, Redis and PostgreSQL on the same cores, a second replica adds no CPU to share`}`)
  const line = (name: string, values: number[]) =>
    console.log(`${name.padEnd(34)} p50 ${percentile(values, 0.5).toFixed(1)} ms  p99 ${percentile(values, 0.99).toFixed(1)} ms  (${values.length} probes; goal p99 <= 100 ms)`)
  line('logout on A refused on B after', seen.revocations)
  line('ingest on A found on B after', seen.ingests)
} finally {
  for (const replica of replicas) await replica.stop()
  await redis.stop()
  await admin.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => {})
  await admin.close()
  rmSync(work, { recursive: true, force: true })
}
