// The stores on PostgreSQL against the same stores on SQLite: authenticated JSON routes answered
// in-process (app.handle, no sockets: what differs is the store alone) or, with BENCH_PG_HTTP=1,
// over HTTP as a client sees them. Needs UAGENT_DATABASE_URL (or
// UAGENT_TEST_DATABASE_URL); skipped, saying so, without one. Goal (issue 34): every route on
// PostgreSQL ≥ 0.5 of SQLite's throughput.
import { SQL } from 'bun'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { buildApp, createServices, type Services, startServices } from '../src/app'
import { openPostgres } from '../src/db/postgres'

const GIVEN_URL = process.env.UAGENT_DATABASE_URL?.trim()
const TEST_URL = process.env.UAGENT_TEST_DATABASE_URL?.trim()
const URL_ = GIVEN_URL || TEST_URL
const SECONDS = Number(process.env.BENCH_PG_SECONDS ?? 4)
const CONCURRENCY = 16
const ADMIN = { email: 'bench@example.com', password: 'bench-password' }
const OVER_HTTP = process.env.BENCH_PG_HTTP === '1'

async function serverOn(postgres: Awaited<ReturnType<typeof openPostgres>> | undefined) {
  const dataDir = mkdtempSync(join(tmpdir(), 'uagent-bench-pg-'))
  const options = { dataDir, env: {}, adminEmail: ADMIN.email, adminPassword: ADMIN.password, analyticsEnabled: false, rateLimitMax: 1_000_000_000, log: () => {} }
  // On PostgreSQL as the server starts: the JWT key and the first admin come from the database.
  const services: Services = postgres ? await startServices({ ...options, postgres }) : createServices(options)
  const app = buildApp(services)
  // Over a socket (BENCH_PG_HTTP=1) the fixed cost of HTTP is in both figures, as for a real client.
  const base = OVER_HTTP ? `http://127.0.0.1:${app.listen({ port: 0, hostname: '127.0.0.1' }).server!.port}` : null
  const call = async (method: string, path: string, token?: string, body?: unknown) => {
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {}
    if (body !== undefined) headers['content-type'] = 'application/json'
    const init = { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }
    const response = base ? await fetch(`${base}${path}`, init) : await app.handle(new Request(`http://localhost${path}`, init))
    return { status: response.status, json: (await response.json()) as any }
  }
  const { json: session } = await call('POST', '/auth/login', undefined, ADMIN)
  const token = session.accessToken as string
  const key = (await call('POST', '/auth/api-keys', token, { name: 'bench' })).json.key as string
  for (let i = 0; i < 30; i++) {
    await services.conversations.append(crypto.randomUUID(), [{ role: 'user', content: `question ${i} about the travel policy` }, { role: 'assistant', content: `answer ${i}: hotels are capped at 120 euros a night` }], { userId: session.user.id, title: `conversation ${i}` })
  }
  const close = () => {
    if (base) app.stop(true)
    services.agents.close()
    services.plugins.close()
    services.postgresMonitor?.close()
    services.db.close()
    services.analyticsDb.close()
    rmSync(dataDir, { recursive: true, force: true })
  }
  return { call, token, key, close }
}

/** Requests per second over SECONDS with CONCURRENCY at once, and p95 latency (ms). */
async function measure(run: () => Promise<{ status: number }>) {
  for (let i = 0; i < 200; i++) await run()
  const latencies: number[] = []
  const until = performance.now() + SECONDS * 1000
  let errors = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < until) {
        const start = performance.now()
        if ((await run()).status !== 200) errors++
        latencies.push(performance.now() - start)
      }
    }),
  )
  latencies.sort((a, b) => a - b)
  return { rps: latencies.length / SECONDS, p95: latencies[Math.floor(latencies.length * 0.95)]!, errors }
}

console.log(`\n== PostgreSQL stores against SQLite (authenticated JSON routes, ${OVER_HTTP ? 'over HTTP on 127.0.0.1' : 'in-process app.handle; BENCH_PG_HTTP=1 for HTTP'})`)
if (!URL_) {
  console.log('skipped: set UAGENT_DATABASE_URL (or UAGENT_TEST_DATABASE_URL) to a PostgreSQL database to run it')
} else {
  // On the test server, a database of its own (dropped at the end): the shared one may be another version's.
  const scratch = GIVEN_URL ? null : `uagent_bench_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`
  const admin = scratch ? new SQL(URL_, { max: 1 }) : null
  if (admin) await admin.unsafe(`CREATE DATABASE ${scratch}`)
  const url = scratch ? Object.assign(new URL(URL_), { pathname: `/${scratch}` }).toString() : URL_
  const postgres = await openPostgres(url)
  const servers = { sqlite: await serverOn(undefined), postgres: await serverOn(postgres) }
  const routes: [string, (s: typeof servers.sqlite) => Promise<{ status: number }>][] = [
    ['GET /auth/me (access token)', (s) => s.call('GET', '/auth/me', s.token)],
    ['GET /conversations?limit=20 (access token)', (s) => s.call('GET', '/conversations?limit=20', s.token)],
    ['GET /auth/me (API key)', (s) => s.call('GET', '/auth/me', s.key)],
    ['GET /auth/api-keys (access token)', (s) => s.call('GET', '/auth/api-keys', s.token)],
    ['GET /agents/tasks (access token)', (s) => s.call('GET', '/agents/tasks', s.token)],
    ['GET /plugins (access token)', (s) => s.call('GET', '/plugins', s.token)],
    ['POST /plugins/calculator/execute (access token)', (s) => s.call('POST', '/plugins/calculator/execute', s.token, { action: 'evaluate', parameters: { expression: '2*(3+4)' } })],
    ['GET /mcp/servers (access token)', (s) => s.call('GET', '/mcp/servers', s.token)],
  ]
  console.log(`${CONCURRENCY} at once, ${SECONDS} s each; goal: PostgreSQL >= 0.5 x SQLite`)
  for (const [name, run] of routes) {
    const sqlite = await measure(() => run(servers.sqlite))
    const pg = await measure(() => run(servers.postgres))
    const ratio = pg.rps / sqlite.rps
    console.log(
      `${name.padEnd(44)} SQLite ${sqlite.rps.toFixed(0).padStart(6)} req/s p95 ${sqlite.p95.toFixed(1)} ms | PostgreSQL ${pg.rps.toFixed(0).padStart(6)} req/s p95 ${pg.p95.toFixed(1)} ms | ${ratio.toFixed(2)}x ${ratio >= 0.5 ? 'ok' : 'BELOW GOAL'}${sqlite.errors + pg.errors ? ` (${sqlite.errors + pg.errors} errors)` : ''}`,
    )
  }
  servers.sqlite.close()
  servers.postgres.close()
  await postgres.close()
  await filesAcrossServers(url)
  if (admin) {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${scratch} WITH (FORCE)`)
    await admin.close()
  }
}

/** Plugins and audio made on one server and used on another with an empty data dir: what the first use there costs. */
async function filesAcrossServers(url: string) {
  const { startServices } = await import('../src/app')
  const root = mkdtempSync(join(tmpdir(), 'uagent-bench-files-'))
  const start = async (name: string) => {
    const services = await startServices({ env: { UAGENT_DATABASE_URL: url }, dataDir: join(root, name), adminEmail: ADMIN.email, adminPassword: ADMIN.password, jwtSecret: 'bench-files-secret'.repeat(2), analyticsEnabled: false, rateLimitMax: 1_000_000_000, log: () => {} })
    const app = buildApp(services)
    const call = async (method: string, path: string, token?: string, body?: unknown) => {
      const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {}
      if (body !== undefined) headers['content-type'] = 'application/json'
      const started = performance.now()
      const response = await app.handle(new Request(`http://localhost${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }))
      const bytes = await response.arrayBuffer()
      return { status: response.status, ms: performance.now() - started, json: () => JSON.parse(new TextDecoder().decode(bytes)), size: bytes.byteLength }
    }
    const token = (await call('POST', '/auth/login', undefined, ADMIN)).json().accessToken as string
    return { services, call, token }
  }
  const a = await start('a')
  const b = await start('b')
  console.log('\n== Files across two servers on one PostgreSQL database (B has an empty data dir)')
  const name = `bench-${Date.now().toString(36)}`
  const repo = join(root, 'repo')
  mkdirSync(join(repo, 'lib'), { recursive: true })
  const manifest = { name, version: '1.0.0', description: 'bench', category: 'testing', permissions: [], main: 'index.js', actions: { echo: { description: 'echo', parameters: { type: 'object' } } } }
  writeFileSync(join(repo, 'plugin.json'), JSON.stringify(manifest))
  writeFileSync(join(repo, 'index.js'), 'exports.echo = async (params) => params')
  writeFileSync(join(repo, 'lib', 'data.js'), `exports.data = '${randomBytes(150_000).toString('base64')}'`)
  for (const args of [['init', '-q'], ['add', '.'], ['commit', '-qm', 'bench'], ['tag', 'v1']]) {
    Bun.spawnSync(['git', '-c', 'user.email=bench@example.com', '-c', 'user.name=Bench', ...args], { cwd: repo })
  }
  const installed = await a.call('POST', '/plugins/install', a.token, { source: 'git', package: join(root, 'repo'), version: 'v1' })
  const [pkg] = await a.services.postgres!`SELECT length(bytes) AS size FROM plugin_packages WHERE name = ${name}`
  console.log(`plugin install on A (git, a 200 kB file): ${installed.ms.toFixed(0)} ms, package ${(Number(pkg.size) / 1024).toFixed(1)} kB in PostgreSQL`)
  const runs: number[] = []
  for (let i = 0; i < 5; i++) runs.push((await b.call('POST', `/plugins/${name}/execute`, b.token, { action: 'echo', parameters: { i } })).ms)
  console.log(`its execute on B: first ${runs[0]!.toFixed(1)} ms (fetch, unpack, start Node.js), then ${runs.slice(1).map((ms) => ms.toFixed(1)).join(', ')} ms`)
  // One account, made on A, signs in on B too (accounts are in PostgreSQL).
  await a.call('POST', '/auth/users', a.token, { email: 'speaker@example.com', password: 'speaker-password', roles: ['user'] })
  const speaker = { email: 'speaker@example.com', password: 'speaker-password' }
  const speakerA = (await a.call('POST', '/auth/login', undefined, speaker)).json().accessToken as string
  const speakerB = (await b.call('POST', '/auth/login', undefined, speaker)).json().accessToken as string
  const tts = (await a.call('POST', '/voice/tts', speakerA, { text: 'Audio made on the first server. '.repeat(8), voice: 'default', language: 'en-US', speed: 1, format: 'wav' })).json()
  const fetches: { ms: number; size: number }[] = []
  for (let i = 0; i < 3; i++) fetches.push(await b.call('GET', tts.audioUrl, speakerB))
  console.log(`audio (${(fetches[0]!.size / 1024).toFixed(0)} kB WAV) made on A, fetched on B: first ${fetches[0]!.ms.toFixed(1)} ms (copied from PostgreSQL), then ${fetches.slice(1).map((f) => f.ms.toFixed(1)).join(', ')} ms`)
  for (const server of [a, b]) {
    server.services.plugins.close()
    await server.services.mcp.close()
    server.services.agents.close()
    server.services.postgresMonitor?.close()
    await server.services.postgres!.close()
  }
  rmSync(root, { recursive: true, force: true })
}
