import { afterEach, describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { AppOptions } from '../../../src/app'
import type { Postgres } from '../../../src/db/postgres'
import { openPostgres } from '../../../src/db/postgres'
import { DAY, HOUR, MINUTE } from '../../../src/modules/analytics/recorder'
import { ADMIN, makeServer, makeServerWith, ScriptedGenerator } from '../../helpers'
import { emptyPostgresDatabase, freshPostgres, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../../postgres'
import { parseCsv, record } from './helpers'

// Password hashing on a busy machine makes logins slow.
setDefaultTimeout(60_000)

const REPLY = 'Records from every server, one dashboard.'

// The PostgreSQL server is shared (its connections too): each test's servers let go of theirs.
const servers: { services: { recorder: { close(): Promise<void> }; postgres: Postgres | null } }[] = []
function track<T extends (typeof servers)[number]>(server: T): T {
  servers.push(server)
  return server
}
afterEach(async () => {
  for (const server of servers.splice(0)) {
    await server.services.recorder.close()
    await server.services.postgres?.close({ timeout: 1 }).catch(() => {})
  }
})

/** Each backend: what a server is built with (a fresh PostgreSQL database per server set). */
const BACKENDS: [string, (() => Promise<AppOptions>) | null][] = [
  ['SQLite', async () => ({})],
  ['PostgreSQL', TEST_DATABASE_URL ? async () => ({ postgres: await freshPostgres() }) : null],
]

for (const [name, options] of BACKENDS) {
  const suite = options ? describe : describe.skip
  suite(`analytics on ${name}${options ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
    test('the dashboard counts the traffic: totals, failures, top endpoints, tokens, per-user usage with emails', async () => {
      const server = track(makeServerWith(new ScriptedGenerator(REPLY), await options!()))
      const admin = await server.login()
      let tokens = 0
      for (let i = 0; i < 3; i++) {
        const chat = await server.call('POST', '/chat', { token: admin.accessToken, body: { message: `question ${i}` } })
        expect(chat.status).toBe(200)
        tokens += chat.json.metadata.tokens
      }
      for (let i = 0; i < 6; i++) expect((await server.call('GET', '/conversations', { token: admin.accessToken })).status).toBe(200)
      expect((await server.call('GET', `/conversations/${crypto.randomUUID()}`, { token: admin.accessToken })).status).toBe(404)
      expect((await server.call('GET', '/no/such/path')).status).toBe(404)
      // 1 login + 3 chats + 6 lists + 2 failures.
      const res = await server.call('GET', '/analytics/dashboard', { token: admin.accessToken })
      expect(res.status).toBe(200)
      const { overview, requests, ai, usage } = res.json
      expect(overview.totalRequests).toBe(12)
      expect(requests).toMatchObject({ total: 12, successful: 10, failed: 2 })
      expect(overview.successRate).toBe('83.3%')
      expect(overview.activeUsers).toBe(1)
      expect(requests.byHour.reduce((a: number, b: number) => a + b, 0)).toBe(12)
      expect(requests.byHour.at(-1)).toBe(12)
      expect(requests.topEndpoints[0]).toMatchObject({ endpoint: 'GET /conversations', requests: 6, errorRate: 0 })
      const endpoints = Object.fromEntries(requests.topEndpoints.map((e: any) => [e.endpoint, e]))
      expect(endpoints['GET /conversations/:id']).toMatchObject({ requests: 1, errorRate: 1 })
      expect(endpoints['GET (unmatched)']).toMatchObject({ requests: 1, errorRate: 1 })
      expect(ai.totalTokens).toBe(tokens)
      expect(ai.topModels).toEqual([{ model: 'test/scripted', requests: 3, tokens, cost: 0 }])
      expect(usage).toEqual([{ userId: admin.user.id, email: ADMIN.email, requests: 10, tokens, promptTokens: expect.any(Number), completionTokens: expect.any(Number) }])
    })

    test('metric series: 1h from the records (minute buckets), 24h and 30d from the rollup', async () => {
      const server = track(makeServer(await options!()))
      const admin = await server.login()
      const now = Date.now()
      const minute = Math.floor(now / MINUTE) * MINUTE - 10 * MINUTE
      const hour = Math.floor(now / HOUR) * HOUR - 5 * HOUR
      await server.services.recorder.write([
        record({ ts: minute + 1000, durationMs: 10, userId: 'u1' }),
        record({ ts: minute + 2000, durationMs: 20, userId: 'u2', status: 500 }),
        record({ ts: minute + 59_000, durationMs: 60, userId: 'u1' }),
        record({ ts: hour + 10, durationMs: 4, userId: 'u3', status: 404 }),
        record({ ts: hour + 20, durationMs: 6, userId: 'u3' }),
        record({ ts: now - 3 * DAY, durationMs: 1 }),
      ])
      const short = (await server.call('GET', '/analytics/metrics?timeRange=1h', { token: admin.accessToken })).json.metrics
      const at = short.requests.timestamps.map((t: string) => Date.parse(t)).indexOf(minute)
      expect([short.requests.values[at], short.errors.values[at], short.users.values[at], short.performance.values[at]]).toEqual([3, 1, 2, 30])
      expect(short.requests.values.reduce((a: number, b: number) => a + b, 0)).toBe(3 + 1) // and the login
      const day = (await server.call('GET', '/analytics/metrics?timeRange=24h&metric=errors', { token: admin.accessToken })).json.metrics
      expect(Object.keys(day)).toEqual(['errors'])
      const hourAt = day.errors.timestamps.map((t: string) => Date.parse(t)).indexOf(hour)
      expect(day.errors.values[hourAt]).toBe(1)
      expect(day.errors.values.reduce((a: number, b: number) => a + b, 0)).toBe(2)
      const month = (await server.call('GET', '/analytics/metrics?timeRange=30d&metric=requests', { token: admin.accessToken })).json.metrics.requests
      expect(month.values).toHaveLength(30)
      expect(month.values.reduce((a: number, b: number) => a + b, 0)).toBe(6 + 3) // and the login, the 1h and 24h queries
    })

    test('export: every record of the range as JSON and as CSV, in pages, oddly named strings intact', async () => {
      const server = track(makeServer(await options!()))
      const admin = await server.login()
      const start = Date.now() - 30 * MINUTE
      const odd = 'lab,"quoted"\nmodel'
      await server.services.recorder.write([
        ...Array.from({ length: 2345 }, (_, i) => record({ ts: start + i * 100, route: `/r${i % 7}` })),
        record({ ts: start + 1, method: 'POST', route: '/chat', userId: 'someone', model: odd, promptTokens: 3, completionTokens: 4 }),
      ])
      const json = await server.call('GET', '/analytics/export?timeRange=1h', { token: admin.accessToken })
      expect(json.status).toBe(200)
      expect(json.headers.get('content-disposition')).toBe('attachment; filename="analytics-1h.json"')
      // The records, and the login.
      expect(json.json).toHaveLength(2347)
      expect(json.json.find((row: any) => row.route === '/chat')).toEqual({
        timestamp: new Date(start + 1).toISOString(),
        method: 'POST',
        route: '/chat',
        status: 200,
        durationMs: 10,
        userId: 'someone',
        tokens: 7,
        model: odd,
      })
      const csv = parseCsv((await server.call('GET', '/analytics/export?timeRange=1h&format=csv', { token: admin.accessToken })).text)
      expect(csv[0]).toEqual(['timestamp', 'method', 'route', 'status', 'durationMs', 'userId', 'tokens', 'model'])
      // The header, the records, the login and the JSON export.
      expect(csv).toHaveLength(2349)
      expect(csv.find((row) => row[2] === '/chat')![7]).toBe(odd)
    })

    test('records older than the retention period are pruned, rollup included', async () => {
      const server = track(makeServer({ ...(await options!()), analyticsRetentionDays: 7 }))
      const admin = await server.login()
      const now = Date.now()
      await server.services.recorder.write([record({ ts: now - 8 * DAY }), record({ ts: now - 8 * DAY - HOUR }), record({ ts: now - 6 * DAY }), record({ ts: now - MINUTE })])
      expect(await server.services.recorder.prune(now)).toBe(2)
      const month = (await server.call('GET', '/analytics/metrics?timeRange=30d&metric=requests', { token: admin.accessToken })).json.metrics.requests
      // The two recent records and the login.
      expect(month.values.reduce((a: number, b: number) => a + b, 0)).toBe(3)
    })
  })
}

const twoServers = TEST_DATABASE_URL ? describe : describe.skip
twoServers(`analytics of several servers on one PostgreSQL database${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test("requests answered by server B appear in server A's dashboard and export", async () => {
    const database = await emptyPostgresDatabase()
    const pools: Postgres[] = []
    const open = async () => {
      const pool = await openPostgres(database.url)
      database.track(pool)
      pools.push(pool)
      return pool
    }
    const a = track(makeServer({ postgres: await open() }))
    const b = track(makeServer({ postgres: await open() }))
    const onA = await a.login()
    // (The accounts are in PostgreSQL too: the same admin on both.)
    const onB = await b.login()
    for (let i = 0; i < 7; i++) expect((await b.call('GET', '/conversations', { token: onB.accessToken })).status).toBe(200)
    expect((await b.call('GET', `/conversations/${crypto.randomUUID()}`, { token: onB.accessToken })).status).toBe(404)
    // B's records reach the database with its next flush (within a second; here, now).
    await b.services.recorder.settle()
    const dashboard = (await a.call('GET', '/analytics/dashboard', { token: onA.accessToken })).json
    // A's login, B's login, B's 8 requests.
    expect(dashboard.overview.totalRequests).toBe(10)
    expect(dashboard.requests.failed).toBe(1)
    // (A's admin has only logged in: a login carries no user.)
    expect(dashboard.overview.activeUsers).toBe(1)
    expect(dashboard.requests.topEndpoints[0]).toMatchObject({ endpoint: 'GET /conversations', requests: 7 })
    const users = Object.fromEntries(dashboard.usage.map((row: any) => [row.userId, row.requests]))
    expect(users[onB.user.id]).toBe(8)
    const exported = (await a.call('GET', '/analytics/export?timeRange=1h', { token: onA.accessToken })).json
    expect(exported.filter((row: any) => row.userId === onB.user.id && row.route.startsWith('/conversations'))).toHaveLength(8)
    // And the other way round: A's dashboard request is in B's.
    await a.services.recorder.settle()
    const fromB = (await b.call('GET', '/analytics/dashboard', { token: onB.accessToken })).json
    expect(fromB.requests.topEndpoints.map((e: any) => e.endpoint)).toContain('GET /analytics/dashboard')
    expect(fromB.overview.totalRequests).toBe(10 + 2)
  })

  test('a batch PostgreSQL did not take is kept and stored later; requests do not wait for it', async () => {
    const database = await emptyPostgresDatabase()
    const sql = await openPostgres(database.url)
    database.track(sql)
    const lines: string[] = []
    const server = track(makeServer({ postgres: sql, log: (line) => lines.push(line) }))
    const admin = await server.login()
    await server.services.recorder.settle()
    // The records' table out of the way: PostgreSQL refuses the next batches.
    await sql.unsafe('ALTER TABLE analytics_records RENAME TO analytics_records_away')
    for (let i = 0; i < 4; i++) expect((await server.call('GET', '/auth/me', { token: admin.accessToken })).status).toBe(200)
    await server.services.recorder.settle()
    expect(lines.some((line) => line.includes('not yet stored in PostgreSQL') && line.includes('analytics_records'))).toBe(true)
    expect(server.services.recorder.pendingCount).toBe(4)
    await sql.unsafe('ALTER TABLE analytics_records_away RENAME TO analytics_records')
    const dashboard = (await server.call('GET', '/analytics/dashboard', { token: admin.accessToken })).json
    // Nothing lost: the login and the four requests (written once PostgreSQL took them), none dropped.
    expect(dashboard.overview.totalRequests).toBe(5)
    expect(server.services.recorder.dropped).toBe(0)
    await server.services.recorder.settle()
    expect(server.services.recorder.pendingCount).toBe(0)
  })
})
