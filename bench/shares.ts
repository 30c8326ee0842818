// Teams: what the access check costs. Authenticated POST /rag/search over a collection shared with
// the caller (through a group, by its bare name, by id and by <owner email>/<name>) against its
// owner searching it as their own: the same collection, query and server, alternating request by
// request. And GET /auth/me for a user in 20 groups with collections shared with them against a
// user in none (what /auth/me cost before teams: it reads no group). SQLite, and PostgreSQL when
// UAGENT_TEST_DATABASE_URL is set. Figures only: the machine is shared, so read ratios, not times.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApp, createServices } from '../src/app'
import { ensureFirstAdmin } from '../src/modules/auth/bootstrap'
import { BENCH_DATABASE_SKIPPED, scratchPostgres } from './postgres-database'

const RUNS = Number(process.env.BENCH_SHARES_RUNS ?? 400)
const WARMUP = 100
const GROUPS = 20
const TOPICS = ['printer', 'VPN', 'payroll', 'holidays', 'laptop', 'badge', 'parking', 'wifi', 'expenses', 'backup']
const QUERY = 'how do I reset the office printer'

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!

async function benchBackend(label: string, postgres?: Awaited<ReturnType<typeof scratchPostgres>>) {
  const dataDir = mkdtempSync(join(tmpdir(), 'uagent-bench-shares-'))
  // scratchPostgres's own user would stop the first admin being made.
  if (postgres) await postgres.sql`DELETE FROM users WHERE id = 'bench'`
  const services = createServices({
    dataDir,
    env: {},
    adminEmail: 'bench@example.com',
    adminPassword: 'bench-password',
    rateLimitMax: 1_000_000_000,
    log: () => {},
    ...(postgres ? { postgres: postgres.sql } : {}),
  })
  if (postgres) await ensureFirstAdmin(services.auth, services.config, services.log)
  const app = buildApp(services).listen({ port: 0, development: false })
  const base = `http://127.0.0.1:${app.server!.port}`
  // In process (app.handle): the whole request path (auth, rate limit, validation, the route) without
  // a client's sockets in the figures, whose noise on a shared machine is larger than the check.
  const call = async (method: string, path: string, token: string, body?: unknown) => {
    const response = await app.handle(
      new Request(`${base}${path}`, { method, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: body === undefined ? undefined : JSON.stringify(body) }),
    )
    const json = (await response.json()) as any
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`)
    return json
  }
  const login = async (email: string, password: string) =>
    ((await (await fetch(`${base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) })).json()) as { accessToken: string }).accessToken
  try {
    const admin = await login('bench@example.com', 'bench-password')
    for (const email of ['owner@example.com', 'member@example.com', 'plain@example.com']) await call('POST', '/auth/users', admin, { email, password: 'bench-password-1', roles: ['user'] })
    const owner = await login('owner@example.com', 'bench-password-1')
    const member = await login('member@example.com', 'bench-password-1')
    const plain = await login('plain@example.com', 'bench-password-1')
    const documents = Array.from({ length: 300 }, (_, i) => {
      const topic = TOPICS[i % TOPICS.length]!
      return { id: `doc-${i}`, content: `Notes on the ${topic}, part ${i}. To reset or fix the ${topic}, ask the help desk, then follow step ${i % 7} of the ${topic} guide. ${'More detail about the office. '.repeat(20)}` }
    })
    await call('POST', '/rag/ingest', owner, { collection: 'handbook', documents })
    // The member is in GROUPS groups; the handbook is shared with the last of them, and a few
    // other collections with the others (so the check has entries to look through).
    const groups: string[] = []
    for (let g = 0; g < GROUPS; g++) {
      const group = await call('POST', '/groups', admin, { name: `team-${g}` })
      await call('POST', `/groups/${group.id}/members`, admin, { email: 'member@example.com' })
      groups.push(group.id)
    }
    for (let c = 0; c < 5; c++) {
      await call('POST', '/rag/ingest', owner, { collection: `other-${c}`, documents: documents.slice(0, 3) })
      await call('PUT', `/rag/collections/other-${c}/access`, owner, { shares: groups.slice(0, 10).map((groupId) => ({ type: 'group', groupId, role: 'viewer' })) })
    }
    await call('PUT', '/rag/collections/handbook/access', owner, { shares: [{ type: 'group', groupId: groups.at(-1), role: 'viewer' }, { type: 'user', email: 'plain@example.com', role: 'viewer' }] })
    const id = (await call('GET', '/rag/collections', owner)).collections.find((c: { name: string }) => c.name === 'handbook').id as string

    const timed = async (run: () => Promise<unknown>) => {
      const started = performance.now()
      await run()
      return performance.now() - started
    }
    const search = (token: string, collection: string) => () => call('POST', '/rag/search', token, { collection, query: QUERY, limit: 5 })
    const me = (token: string) => () => call('GET', '/auth/me', token)
    const cases: [string, () => Promise<unknown>][] = [
      ['search, own collection (owner)', search(owner, 'handbook')],
      ['search, shared via group, by name', search(member, 'handbook')],
      ['search, shared, by id', search(member, id)],
      ['search, shared, by owner/name', search(member, 'owner@example.com/handbook')],
      ['/auth/me, user in no group', me(plain)],
      [`/auth/me, user in ${GROUPS} groups`, me(member)],
    ]
    const times = new Map(cases.map(([name]) => [name, [] as number[]]))
    for (let i = 0; i < WARMUP; i++) for (const [, run] of cases) await run()
    // Alternating request by request, in a new random order each round: the machine's noise (and
    // what a search leaves running after it answers) falls on every case alike.
    for (let i = 0; i < RUNS; i++) {
      const order = cases.map((entry) => ({ entry, key: Math.random() })).sort((a, b) => a.key - b.key)
      for (const { entry: [name, run] } of order) times.get(name)!.push(await timed(run))
    }
    const median = (name: string) => percentile(times.get(name)!, 50)
    console.log(`\n${label}: ${RUNS} requests each, alternating (median, p95, vs its baseline)`)
    for (const [name] of cases) {
      const baseline = name.startsWith('search') ? 'search, own collection (owner)' : '/auth/me, user in no group'
      const ratio = median(name) / median(baseline)
      const goal = name === baseline ? '' : `  ${((ratio - 1) * 100).toFixed(1).padStart(5)}%  goal <= +5%  ${ratio <= 1.05 ? 'ok' : 'MISSED'}`
      console.log(`  ${name.padEnd(40)} ${median(name).toFixed(3).padStart(7)} ms  p95 ${percentile(times.get(name)!, 95).toFixed(3).padStart(7)} ms${goal}`)
    }
    // The check alone: the resolver, called as every route calls it, for each form of reference.
    const ids = Object.fromEntries(
      await Promise.all(['owner@example.com', 'member@example.com'].map(async (email) => [email, ((await services.auth.findUserByEmail(email)) as { id: string }).id])),
    ) as Record<string, string>
    const checks: [string, string, string][] = [
      ['own, by name', ids['owner@example.com']!, 'handbook'],
      ['shared via group, by name', ids['member@example.com']!, 'handbook'],
      ['shared, by id', ids['member@example.com']!, id],
      ['shared, by owner/name', ids['member@example.com']!, 'owner@example.com/handbook'],
    ]
    const CHECKS = RUNS * 10
    console.log(`  the access check alone (CollectionResolver.resolve), ${CHECKS} calls each:`)
    for (const [name, userId, ref] of checks) {
      for (let i = 0; i < CHECKS / 10; i++) await services.rag.resolver.resolve(userId, ref)
      const started = performance.now()
      for (let i = 0; i < CHECKS; i++) await services.rag.resolver.resolve(userId, ref)
      console.log(`    ${name.padEnd(38)} ${(((performance.now() - started) / CHECKS) * 1000).toFixed(1).padStart(7)} µs`)
    }
  } finally {
    app.stop(true)
    await services.audit.close()
    services.db.close()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

console.log('\n== shares: the cost of the access check ==')
await benchBackend('SQLite')
const postgres = await scratchPostgres()
if (!postgres) console.log(`\nPostgreSQL: ${BENCH_DATABASE_SKIPPED}`)
else {
  try {
    await benchBackend('PostgreSQL', postgres)
  } finally {
    await postgres.drop()
  }
}
process.exit(0)
