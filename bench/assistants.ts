// Assistants: what answering through one costs. Authenticated POST /chat grounded in a collection
// named directly against the same chat through an assistant whose collection it is (no instructions
// of its own, so both prompts are the same): its owner, and a member of a group it is shared with
// (with its collection) by its qualified name. The same server, question and collection,
// alternating request by request in a random order each round; each request a new conversation.
// SQLite, and PostgreSQL when UAGENT_TEST_DATABASE_URL is set. Figures only: read ratios, not times.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApp, createServices } from '../src/app'
import { ensureFirstAdmin } from '../src/modules/auth/bootstrap'
import { BENCH_DATABASE_SKIPPED, scratchPostgres } from './postgres-database'

const RUNS = Number(process.env.BENCH_ASSISTANTS_RUNS ?? 200)
const WARMUP = 40
const TOPICS = ['printer', 'VPN', 'payroll', 'holidays', 'laptop', 'badge', 'parking', 'wifi', 'expenses', 'backup']
const QUESTION = 'How do I reset the office printer?'

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!
const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length

async function benchBackend(label: string, postgres?: Awaited<ReturnType<typeof scratchPostgres>>) {
  const dataDir = mkdtempSync(join(tmpdir(), 'uagent-bench-assistants-'))
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
  // In process (app.handle): the whole request path without a client's sockets in the figures.
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
    for (const email of ['owner@example.com', 'member@example.com']) await call('POST', '/auth/users', admin, { email, password: 'bench-password-1', roles: ['user'] })
    const owner = await login('owner@example.com', 'bench-password-1')
    const member = await login('member@example.com', 'bench-password-1')
    const documents = Array.from({ length: 300 }, (_, i) => {
      const topic = TOPICS[i % TOPICS.length]!
      return { id: `doc-${i}`, content: `Notes on the ${topic}, part ${i}. To reset or fix the ${topic}, ask the help desk, then follow step ${i % 7} of the ${topic} guide. ${'More detail about the office. '.repeat(20)}` }
    })
    await call('POST', '/rag/ingest', owner, { collection: 'handbook', documents })
    const group = await call('POST', '/groups', admin, { name: 'staff' })
    await call('POST', `/groups/${group.id}/members`, admin, { email: 'member@example.com' })
    await call('POST', '/assistants', owner, { name: 'helpdesk', description: 'The help desk', collections: ['handbook'] })
    await call('PUT', '/assistants/helpdesk/access', owner, { shares: [{ type: 'group', groupId: group.id, role: 'viewer' }], shareCollections: true })

    const chat = (token: string, body: Record<string, unknown>) => async () => {
      const reply = await call('POST', '/chat', token, { message: QUESTION, ...body })
      if (!reply.metadata.sources?.length) throw new Error(`no sources in ${JSON.stringify(reply).slice(0, 300)}`)
      return reply
    }
    const cases: [string, string, () => Promise<unknown>][] = [
      ['owner, collection named', '', chat(owner, { collection: 'handbook' })],
      ['owner, through the assistant', 'owner, collection named', chat(owner, { assistant: 'helpdesk' })],
      ['member, shared collection named', '', chat(member, { collection: 'owner@example.com/handbook' })],
      ['member, through the shared assistant', 'member, shared collection named', chat(member, { assistant: 'owner@example.com/helpdesk' })],
    ]
    const times = new Map(cases.map(([name]) => [name, [] as number[]]))
    for (let i = 0; i < WARMUP; i++) for (const [, , run] of cases) await run()
    for (let i = 0; i < RUNS; i++) {
      const order = cases.map((entry) => ({ entry, key: Math.random() })).sort((a, b) => a.key - b.key)
      for (const {
        entry: [name, , run],
      } of order) {
        const started = performance.now()
        await run()
        times.get(name)!.push(performance.now() - started)
      }
    }
    console.log(`\n${label}: POST /chat, ${RUNS} requests each, alternating (median, mean, p95, vs the same chat naming the collection)`)
    for (const [name, baseline] of cases) {
      const t = times.get(name)!
      const goal = baseline ? `  ${((percentile(t, 50) / percentile(times.get(baseline)!, 50) - 1) * 100).toFixed(1).padStart(5)}% (mean ${((mean(t) / mean(times.get(baseline)!) - 1) * 100).toFixed(1)}%)  goal <= +5%  ${percentile(t, 50) <= percentile(times.get(baseline)!, 50) * 1.05 ? 'ok' : 'MISSED'}` : ''
      console.log(`  ${name.padEnd(38)} ${percentile(t, 50).toFixed(2).padStart(7)} ms  mean ${mean(t).toFixed(2).padStart(7)} ms  p95 ${percentile(t, 95).toFixed(2).padStart(7)} ms${goal}`)
    }
    // The assistant's own step alone: the resolver and its collections' checks, as chat calls it.
    const ownerId = ((await services.auth.findUserByEmail('owner@example.com')) as { id: string }).id
    const memberId = ((await services.auth.findUserByEmail('member@example.com')) as { id: string }).id
    const CHECKS = RUNS * 10
    console.log(`  the assistant's look-up alone (AssistantService.persona as chat calls it: its collections checked by the search), ${CHECKS} calls each:`)
    for (const [name, userId, ref] of [['owner, by name', ownerId, 'helpdesk'], ['member, by owner/name', memberId, 'owner@example.com/helpdesk']] as const) {
      for (let i = 0; i < CHECKS / 10; i++) await services.assistants.persona(userId, ref, { deferCollections: true })
      const started = performance.now()
      for (let i = 0; i < CHECKS; i++) await services.assistants.persona(userId, ref, { deferCollections: true })
      console.log(`    ${name.padEnd(38)} ${(((performance.now() - started) / CHECKS) * 1000).toFixed(1).padStart(7)} µs`)
    }
  } finally {
    app.stop(true)
    await services.audit.close()
    services.db.close()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

console.log('\n== assistants: chat through an assistant against the same chat naming its collection ==')
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
