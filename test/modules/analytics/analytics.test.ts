import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { Generator } from '../../../src/ml'
import { DAY, HOUR, MINUTE } from '../../../src/modules/analytics/recorder'
import { ADMIN, makeServer, makeServerWith, ScriptedGenerator } from '../../helpers'
import { parseCsv, parsePrometheus, record, sample } from './helpers'

// Password hashing on a busy machine makes logins slow: room for them beyond the 5 s default.
setDefaultTimeout(30_000)

const REPLY = 'Counting tokens is what analytics does best.'

/** A server whose calls are counted, so expected totals come from what the test really sent. */
function countingServer(generator: Generator = new ScriptedGenerator(REPLY), options = {}) {
  const server = makeServerWith(generator, options)
  let sent = 0
  const call: typeof server.call = async (...args) => {
    sent++
    return server.call(...args)
  }
  const login = async (email = ADMIN.email, password = ADMIN.password) => {
    const res = await call('POST', '/auth/login', { body: { email, password } })
    expect(res.status).toBe(200)
    return res.json as { accessToken: string; user: { id: string } }
  }
  return { ...server, call, login, sent: () => sent }
}

describe('dashboard', () => {
  test('known traffic of two users with 3 failures gives the right totals, top endpoints and per-user usage', async () => {
    const server = countingServer()
    const admin = await server.login()
    const created = await server.call('POST', '/auth/users', { token: admin.accessToken, body: { email: 'ana@example.com', password: 'ana-password-1', roles: ['user'] } })
    expect(created.status).toBe(200)
    const user = await server.login('ana@example.com', 'ana-password-1')

    let userTokens = 0
    for (let i = 0; i < 4; i++) {
      const chat = await server.call('POST', '/chat', { token: user.accessToken, body: { message: `question number ${i}` } })
      expect(chat.status).toBe(200)
      userTokens += chat.json.metadata.tokens
    }
    for (let i = 0; i < 10; i++) expect((await server.call('GET', '/conversations', { token: user.accessToken })).status).toBe(200)
    for (let i = 0; i < 8; i++) expect((await server.call('GET', '/auth/me', { token: admin.accessToken })).status).toBe(200)
    // The three failures: two unknown conversations (404) and a chat without a message (400).
    expect((await server.call('GET', `/conversations/${crypto.randomUUID()}`, { token: user.accessToken })).status).toBe(404)
    expect((await server.call('GET', `/conversations/${crypto.randomUUID()}`, { token: user.accessToken })).status).toBe(404)
    expect((await server.call('POST', '/chat', { token: admin.accessToken, body: {} })).status).toBe(400)

    const total = server.sent()
    expect(total).toBe(28)
    const res = await server.call('GET', '/analytics/dashboard', { token: admin.accessToken })
    expect(res.status).toBe(200)
    const { overview, requests, ai, usage } = res.json
    expect(overview.totalRequests).toBe(total)
    expect(requests).toMatchObject({ total, successful: total - 3, failed: 3 })
    expect(overview.successRate).toBe(`${(((total - 3) / total) * 100).toFixed(1)}%`)
    expect(overview.activeUsers).toBe(2)
    expect(overview.healthScore).toBeGreaterThan(0)
    expect(overview.healthScore).toBeLessThanOrEqual(100)
    expect(Number.isInteger(overview.averageResponseTime)).toBe(true)
    expect(requests.byHour).toHaveLength(24)
    expect(requests.byHour.reduce((a: number, b: number) => a + b, 0)).toBe(total)

    const endpoints = Object.fromEntries(requests.topEndpoints.map((e: any) => [e.endpoint, e]))
    expect(requests.topEndpoints.length).toBeLessThanOrEqual(10)
    expect(requests.topEndpoints[0]).toMatchObject({ endpoint: 'GET /conversations', requests: 10, errorRate: 0 })
    expect(endpoints['GET /conversations/:id']).toMatchObject({ requests: 2, errorRate: 1 })
    expect(endpoints['POST /chat']).toMatchObject({ requests: 5, errorRate: 0.2 })
    expect(endpoints['POST /auth/login']).toMatchObject({ requests: 2, errorRate: 0 })
    for (const endpoint of requests.topEndpoints) expect(Number.isInteger(endpoint.averageTime)).toBe(true)

    expect(ai.totalTokens).toBe(userTokens)
    expect(ai.totalCost).toBe(0)
    expect(ai.topModels).toEqual([{ model: 'test/scripted', requests: 4, tokens: userTokens, cost: 0 }])

    const byUser = Object.fromEntries(usage.map((u: any) => [u.userId, u]))
    // Logins carry no user (the caller is not authenticated yet); everything else does.
    expect(byUser[user.user.id]).toMatchObject({ email: 'ana@example.com', requests: 4 + 10 + 2, tokens: userTokens })
    expect(byUser[admin.user.id]).toMatchObject({ email: ADMIN.email, requests: 1 + 8 + 1, tokens: 0 })
    expect(usage[0].userId).toBe(user.user.id)
  })

  test('routes with ids are grouped by their pattern; unknown paths by a fixed label, never the raw path', async () => {
    const server = countingServer()
    const admin = await server.login()
    const ids = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()]
    for (const id of ids) await server.call('GET', `/conversations/${id}`, { token: admin.accessToken })
    await server.call('DELETE', `/conversations/${ids[0]}`, { token: admin.accessToken })
    await server.call('GET', `/no-such-route/${ids[1]}`)
    await server.call('GET', `/rag/collections/${ids[2]}/whatever`, { token: admin.accessToken })

    const dashboard = (await server.call('GET', '/analytics/dashboard', { token: admin.accessToken })).json
    const endpoints = Object.fromEntries(dashboard.requests.topEndpoints.map((e: any) => [e.endpoint, e.requests]))
    expect(endpoints['GET /conversations/:id']).toBe(3)
    expect(endpoints['DELETE /conversations/:id']).toBe(1)
    expect(endpoints['GET (unmatched)']).toBe(2)

    const exported = await server.call('GET', '/analytics/export?format=json', { token: admin.accessToken })
    for (const id of ids) expect(exported.text).not.toContain(id)
    const routes = new Set(exported.json.map((row: any) => row.route))
    expect([...routes].sort()).toEqual(['(unmatched)', '/analytics/dashboard', '/auth/login', '/conversations/:id'])
  })
})

describe('route patterns over a listening server', () => {
  // Under Bun.serve each route Bun's router matches has a handler of its own, which learns its
  // pattern from its first request; every other request goes through the general handler.
  test('each request is recorded under the pattern of the route that answered it, first requests and later ones alike', async () => {
    const server = makeServer()
    const app = server.app.listen({ port: 0 })
    try {
      const base = `http://127.0.0.1:${app.server!.port}`
      const login = await fetch(`${base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) })
      const { accessToken } = (await login.json()) as { accessToken: string }
      const auth = { authorization: `Bearer ${accessToken}` }
      const ids = Array.from({ length: 4 }, () => crypto.randomUUID())
      const sent: [string, string, Record<string, string>?][] = [
        ['GET', `/conversations/${ids[0]}`, auth],
        ['GET', '/auth/me', auth],
        ['GET', `/conversations/${ids[1]}`, auth],
        ['DELETE', `/conversations/${ids[2]}`, auth],
        ['GET', '/auth/me/', auth],
        ['GET', `/rag/collections/c-${ids[0]}/documents/a/${ids[3]}.txt`, auth],
        ['GET', `/no-such-route/${ids[1]}`],
        ['HEAD', '/health'],
        ['GET', '/health'],
        ['GET', `/conversations/${ids[3]}`, auth],
        ['GET', '/auth/me', auth],
      ]
      for (const [method, path, headers] of sent) await (await fetch(`${base}${path}`, { method, headers })).arrayBuffer()
      const exported = await fetch(`${base}/analytics/export?format=json`, { headers: auth })
      const text = await exported.text()
      for (const id of ids) expect(text).not.toContain(id)
      const rows = (JSON.parse(text) as { method: string; route: string }[]).map((row) => `${row.method} ${row.route}`)
      const count = (key: string) => rows.filter((row) => row === key).length
      expect(count('POST /auth/login')).toBe(1)
      expect(count('GET /conversations/:id')).toBe(3)
      expect(count('DELETE /conversations/:id')).toBe(1)
      expect(count('GET /auth/me')).toBe(3)
      expect(count('GET /rag/collections/:name/documents/*')).toBe(1)
      expect(count('GET (unmatched)')).toBe(1)
      expect(count('HEAD /health')).toBe(1)
      expect(count('GET /health')).toBe(1)
      expect(rows.length).toBe(sent.length + 1)
    } finally {
      app.stop(true)
    }
  })
})

describe('metrics', () => {
  test('1h: 60 minute buckets aligned in UTC, oldest first, the current one last, empty ones 0', async () => {
    const server = makeServer()
    const admin = await server.login()
    const now = Date.now()
    // Ten minutes ago: three requests (one failed) of two users; 70 minutes ago: outside the range.
    const minute = Math.floor(now / MINUTE) * MINUTE - 10 * MINUTE
    server.services.recorder.write([
      record({ ts: minute + 1000, durationMs: 10, userId: 'u1' }),
      record({ ts: minute + 2000, durationMs: 20, userId: 'u2', status: 500 }),
      record({ ts: minute + 59_000, durationMs: 60, userId: 'u1' }),
      record({ ts: minute - 60 * MINUTE, durationMs: 5, userId: 'u3' }),
    ])
    const res = await server.call('GET', '/analytics/metrics?timeRange=1h', { token: admin.accessToken })
    expect(res.status).toBe(200)
    expect(res.json.timeRange).toBe('1h')
    expect(Object.keys(res.json.metrics).sort()).toEqual(['errors', 'performance', 'requests', 'users'])
    const { requests, performance, errors, users } = res.json.metrics
    const starts = requests.timestamps.map((t: string) => Date.parse(t))
    expect(starts).toHaveLength(60)
    for (const [i, start] of starts.entries()) {
      expect(start % MINUTE).toBe(0)
      if (i) expect(start - starts[i - 1]).toBe(MINUTE)
    }
    expect(starts.at(-1)).toBe(Math.floor(Date.now() / MINUTE) * MINUTE)
    const at = starts.indexOf(minute)
    expect(at).toBeGreaterThanOrEqual(0)
    expect(requests.values[at]).toBe(3)
    expect(errors.values[at]).toBe(1)
    expect(users.values[at]).toBe(2)
    expect(performance.values[at]).toBe(30)
    // Every other bucket is 0 but the last two (the login just made and this request's minute).
    for (let i = 0; i < 58; i++) if (i !== at) expect([requests.values[i], errors.values[i], users.values[i], performance.values[i]]).toEqual([0, 0, 0, 0])
    for (const series of [performance, errors, users]) expect(series.timestamps).toEqual(requests.timestamps)
  })

  test('24h: 24 hourly buckets aligned in UTC with empty ones as 0; one metric alone when asked', async () => {
    const server = makeServer()
    const admin = await server.login()
    const hour = Math.floor(Date.now() / HOUR) * HOUR - 5 * HOUR
    server.services.recorder.write([
      record({ ts: hour + 10 * MINUTE, durationMs: 100, userId: 'u1' }),
      record({ ts: hour + 50 * MINUTE, durationMs: 300, userId: 'u1', status: 404 }),
      record({ ts: hour - 30 * HOUR, userId: 'u2' }),
    ])
    const res = await server.call('GET', '/analytics/metrics', { token: admin.accessToken })
    expect(res.json.timeRange).toBe('24h')
    const starts = res.json.metrics.requests.timestamps.map((t: string) => Date.parse(t))
    expect(starts).toHaveLength(24)
    for (const [i, start] of starts.entries()) {
      expect(start % HOUR).toBe(0)
      if (i) expect(start - starts[i - 1]).toBe(HOUR)
    }
    expect(starts.at(-1)).toBe(Math.floor(Date.now() / HOUR) * HOUR)
    const at = starts.indexOf(hour)
    expect(at).toBe(18)
    const { requests, performance, errors, users } = res.json.metrics
    expect([requests.values[at], performance.values[at], errors.values[at], users.values[at]]).toEqual([2, 200, 1, 1])
    expect(requests.values.slice(0, 18).every((v: number) => v === 0)).toBe(true)
    expect(requests.values.slice(19, 23).every((v: number) => v === 0)).toBe(true)

    const one = await server.call('GET', '/analytics/metrics?timeRange=24h&metric=errors', { token: admin.accessToken })
    expect(Object.keys(one.json.metrics)).toEqual(['errors'])
    expect(one.json.metrics.errors.values[at]).toBe(1)
  })

  test('7d is 168 hourly buckets and 30d 30 daily ones, aligned in UTC', async () => {
    const server = makeServer()
    const admin = await server.login()
    const day = Math.floor(Date.now() / DAY) * DAY - 3 * DAY
    server.services.recorder.write([record({ ts: day + 2 * HOUR, userId: 'u1' }), record({ ts: day + 20 * HOUR, userId: 'u2' })])
    const week = (await server.call('GET', '/analytics/metrics?timeRange=7d&metric=requests', { token: admin.accessToken })).json.metrics.requests
    expect(week.timestamps).toHaveLength(168)
    expect(week.values[week.timestamps.indexOf(new Date(day + 2 * HOUR).toISOString())]).toBe(1)
    const month = (await server.call('GET', '/analytics/metrics?timeRange=30d', { token: admin.accessToken })).json.metrics
    expect(month.requests.timestamps).toHaveLength(30)
    expect(month.requests.timestamps.at(-1)).toBe(new Date(Math.floor(Date.now() / DAY) * DAY).toISOString())
    const at = month.requests.timestamps.indexOf(new Date(day).toISOString())
    expect(at).toBe(26)
    expect(month.requests.values[at]).toBe(2)
    expect(month.users.values[at]).toBe(2)
  })

  test('other timeRange, metric and format values are 400 VALIDATION_ERROR', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    for (const path of [
      '/analytics/metrics?timeRange=2h',
      '/analytics/metrics?timeRange=',
      '/analytics/metrics?metric=latency',
      '/analytics/export?timeRange=2h',
      '/analytics/export?format=xml',
    ]) {
      const res = await server.call('GET', path, { token })
      expect(res.status).toBe(400)
      expect(res.json.code).toBe('VALIDATION_ERROR')
    }
    const res = await server.call('GET', '/analytics/metrics?timeRange=2h', { token })
    expect(res.json.message).toContain('timeRange')
  })
})

/** The scripted generator under a model id with a comma, quotes and a line break in it. */
class OddlyNamedGenerator implements Generator {
  readonly id = 'lab,"quoted"\nmodel'
  private readonly inner = new ScriptedGenerator(REPLY)
  readonly contextLength = this.inner.contextLength
  countTokens = (text: string) => this.inner.countTokens(text)
  generate: Generator['generate'] = (...args) => this.inner.generate(...args)
  stream: Generator['stream'] = (...args) => this.inner.stream(...args)
}

describe('export', () => {
  test('every record of the range, as JSON or RFC 4180 CSV that parses back (a comma, quote and newline in a field)', async () => {
    const server = countingServer(new OddlyNamedGenerator())
    const admin = await server.login()
    const chat = await server.call('POST', '/chat', { token: admin.accessToken, body: { message: 'hello' } })
    for (let i = 0; i < 5; i++) await server.call('GET', '/conversations', { token: admin.accessToken })
    await server.call('GET', '/nowhere')
    const sent = server.sent()

    const csv = await server.call('GET', '/analytics/export?format=csv&timeRange=24h', { token: admin.accessToken })
    expect(csv.status).toBe(200)
    expect(csv.headers.get('content-type')).toBe('application/octet-stream')
    expect(csv.headers.get('content-disposition')).toBe('attachment; filename="analytics-24h.csv"')
    expect(csv.text).toContain('\r\n')
    const rows = parseCsv(csv.text)
    expect(rows[0]).toEqual(['timestamp', 'method', 'route', 'status', 'durationMs', 'userId', 'tokens', 'model'])
    expect(rows.length - 1).toBe(sent)
    const chatRow = rows.find((row) => row[2] === '/chat')!
    expect(chatRow[7]).toBe('lab,"quoted"\nmodel')
    expect(Number(chatRow[6])).toBe(chat.json.metadata.tokens)
    expect(chatRow[5]).toBe(admin.user.id)
    for (const row of rows.slice(1)) {
      expect(row).toHaveLength(8)
      expect(new Date(row[0]!).toISOString()).toBe(row[0]!)
    }

    const json = await server.call('GET', '/analytics/export', { token: admin.accessToken })
    expect(json.headers.get('content-disposition')).toBe('attachment; filename="analytics-24h.json"')
    // The CSV export itself is a record now.
    expect(json.json).toHaveLength(sent + 1)
    expect(Object.keys(json.json[0])).toEqual(['timestamp', 'method', 'route', 'status', 'durationMs', 'userId', 'tokens', 'model'])
    const times = json.json.map((row: any) => Date.parse(row.timestamp))
    expect(times).toEqual([...times].sort((a, b) => a - b))
    expect(json.json.find((row: any) => row.route === '/chat')).toMatchObject({ method: 'POST', status: 200, model: 'lab,"quoted"\nmodel', userId: admin.user.id })
    expect(json.json.find((row: any) => row.route === '(unmatched)')).toMatchObject({ status: 404, userId: null, tokens: 0, model: null })
  })

  test('a range of several thousand records streams out whole, in pages', async () => {
    const server = makeServer()
    const admin = await server.login()
    const start = Date.now() - 30 * MINUTE
    server.services.recorder.write(Array.from({ length: 4321 }, (_, i) => record({ ts: start + i * 100, route: `/r${i % 7}` })))
    const res = await server.call('GET', '/analytics/export?format=csv&timeRange=1h', { token: admin.accessToken })
    const rows = parseCsv(res.text)
    // The 4321 records, the login and the header row.
    expect(rows).toHaveLength(4323)
    const json = await server.call('GET', '/analytics/export?timeRange=1h', { token: admin.accessToken })
    expect(json.json).toHaveLength(4323)
    expect(new Set(json.json.map((row: any) => `${row.timestamp} ${row.route}`)).size).toBe(4323)
  })
})

describe('Prometheus /metrics', () => {
  const SCRAPE = 'scrape-token-for-tests'

  test('parses as Prometheus text and its counters match the traffic', async () => {
    const server = countingServer(new ScriptedGenerator(REPLY), { metricsToken: SCRAPE })
    const admin = await server.login()
    let tokens = { prompt: 0, completion: 0 }
    for (let i = 0; i < 3; i++) {
      const chat = await server.call('POST', '/chat', { token: admin.accessToken, body: { message: `hello ${i}` } })
      tokens = { prompt: tokens.prompt + chat.json.metadata.promptTokens, completion: tokens.completion + chat.json.metadata.completionTokens }
    }
    for (let i = 0; i < 4; i++) await server.call('GET', `/conversations/${crypto.randomUUID()}`, { token: admin.accessToken })
    await server.call('POST', '/rag/ingest', {
      token: admin.accessToken,
      body: { collection: 'docs', documents: [{ id: 'a', content: 'Prometheus scrapes metrics over HTTP.' }, { id: 'b', content: 'Grafana draws them.' }] },
    })

    const res = await server.call('GET', '/metrics', { headers: { authorization: `Bearer ${SCRAPE}` } })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toStartWith('text/plain')
    const samples = parsePrometheus(res.text)
    const requests = (labels: Record<string, string>) => sample(samples, 'uagent_http_requests_total', labels)
    expect(requests({ method: 'POST', route: '/auth/login', status: '200' })).toBe(1)
    expect(requests({ method: 'POST', route: '/chat', status: '200' })).toBe(3)
    expect(requests({ method: 'GET', route: '/conversations/:id', status: '404' })).toBe(4)
    expect(requests({ method: 'POST', route: '/rag/ingest', status: '200' })).toBe(1)
    const counted = samples.filter((s) => s.name === 'uagent_http_requests_total').reduce((sum, s) => sum + s.value, 0)
    expect(counted).toBe(server.sent() - 1)
    expect(sample(samples, 'uagent_http_request_duration_seconds_count', { method: 'POST', route: '/chat', status: '200' })).toBe(3)
    expect(sample(samples, 'uagent_http_request_duration_seconds_bucket', { method: 'POST', route: '/chat', status: '200', le: '+Inf' })).toBe(3)
    expect(sample(samples, 'uagent_model_tokens_total', { model: 'test/scripted', type: 'prompt' })).toBe(tokens.prompt)
    expect(sample(samples, 'uagent_model_tokens_total', { model: 'test/scripted', type: 'completion' })).toBe(tokens.completion)
    const chunks = server.services.db.query<{ n: number }, []>('SELECT count(*) AS n FROM rag_chunks').get()!.n
    expect(chunks).toBeGreaterThan(0)
    expect(sample(samples, 'uagent_rag_chunks')).toBe(chunks)
    expect(sample(samples, 'uagent_agent_tasks', { status: 'completed' })).toBe(0)
    expect(sample(samples, 'uagent_process_memory_bytes', { type: 'rss' })).toBeGreaterThan(1024 * 1024)
    expect(sample(samples, 'process_resident_memory_bytes')).toBeGreaterThan(0)
    expect(sample(samples, 'uagent_analytics_records_dropped_total')).toBe(0)

    // An admin's token works as well; the scrape just made is counted now.
    const again = parsePrometheus((await server.call('GET', '/metrics', { token: admin.accessToken })).text)
    expect(sample(again, 'uagent_http_requests_total', { method: 'GET', route: '/metrics', status: '200' })).toBe(1)
  })

  test('agent tasks are counted by status once their table exists', async () => {
    const server = makeServer()
    const admin = await server.login()
    const { db } = server.services
    if (!db.query("SELECT 1 FROM sqlite_master WHERE name = 'agent_tasks'").get()) db.run('CREATE TABLE agent_tasks (id TEXT PRIMARY KEY, status TEXT NOT NULL)')
    const columns = db.query<{ name: string; notnull: number; dflt_value: unknown; pk: number }, []>('PRAGMA table_info(agent_tasks)').all()
    const rows = [['completed'], ['completed'], ['failed']]
    db.transaction(() => {
      for (const [status] of rows) {
        const values: Record<string, unknown> = {}
        // Fill whatever columns the agents table has: its own status, made-up values elsewhere.
        for (const column of columns) {
          if (column.name === 'status') values.status = status
          else if (column.name === 'user_id') values.user_id = admin.user.id
          else if (column.notnull && column.dflt_value === null) values[column.name] = column.name.includes('id') ? crypto.randomUUID() : column.name.endsWith('_at') ? new Date().toISOString() : '0'
        }
        db.run(`INSERT INTO agent_tasks (${Object.keys(values).join(', ')}) VALUES (${Object.keys(values).map(() => '?').join(', ')})`, Object.values(values) as string[])
      }
    })()
    const samples = parsePrometheus((await server.call('GET', '/metrics', { token: admin.accessToken })).text)
    expect(sample(samples, 'uagent_agent_tasks', { status: 'completed' })).toBe(2)
    expect(sample(samples, 'uagent_agent_tasks', { status: 'failed' })).toBe(1)
    expect(sample(samples, 'uagent_agent_tasks', { status: 'running' })).toBe(0)
  })

  test('anonymous callers and wrong tokens get 401; a plain user 403', async () => {
    const server = makeServer({ metricsToken: SCRAPE })
    const user = await server.userSession('plain@example.com')
    const anonymous = await server.call('GET', '/metrics')
    expect(anonymous.status).toBe(401)
    expect(anonymous.json.code).toBe('UNAUTHORIZED')
    expect((await server.call('GET', '/metrics', { headers: { authorization: 'Bearer not-the-scrape-token' } })).status).toBe(401)
    expect((await server.call('GET', '/metrics', { headers: { authorization: `Bearer ${SCRAPE}x` } })).status).toBe(401)
    const forbidden = await server.call('GET', '/metrics', { token: user.accessToken })
    expect(forbidden.status).toBe(403)
    expect(forbidden.json.code).toBe('FORBIDDEN')
    // Without UAGENT_METRICS_TOKEN there is no scrape token at all.
    expect((await makeServer().call('GET', '/metrics', { headers: { authorization: `Bearer ${SCRAPE}` } })).status).toBe(401)
  })
})

describe('access', () => {
  test('403 for a non-admin on every analytics route, 401 without a token', async () => {
    const server = makeServer()
    const user = await server.userSession('viewer@example.com')
    for (const path of ['/analytics/dashboard', '/analytics/metrics', '/analytics/export', '/analytics/export?format=csv', '/metrics']) {
      const forbidden = await server.call('GET', path, { token: user.accessToken })
      expect(forbidden.status).toBe(403)
      expect(forbidden.json.code).toBe('FORBIDDEN')
      const anonymous = await server.call('GET', path)
      expect(anonymous.status).toBe(401)
      expect(anonymous.json.code).toBe('UNAUTHORIZED')
    }
    // The refused requests are recorded with their caller and status.
    const admin = await server.login()
    const dashboard = (await server.call('GET', '/analytics/dashboard', { token: admin.accessToken })).json
    const viewer = dashboard.usage.find((u: any) => u.email === 'viewer@example.com')
    expect(viewer.requests).toBe(5)
    const endpoint = dashboard.requests.topEndpoints.find((e: any) => e.endpoint === 'GET /analytics/dashboard')
    expect(endpoint).toMatchObject({ requests: 2, errorRate: 1 })
  })
})

describe('recording', () => {
  const servers: { stop(): void }[] = []
  afterAll(() => servers.forEach((s) => s.stop()))

  test("a record's timestamp is when its request arrived, by the wall clock", async () => {
    const server = makeServerWith(new ScriptedGenerator(REPLY, 60))
    const admin = await server.login()
    const before = Date.now()
    const stream = await server.call('GET', '/stream?message=tell%20me', { token: admin.accessToken })
    const after = Date.now()
    expect(stream.status).toBe(200)
    const rows = (await server.call('GET', '/analytics/export', { token: admin.accessToken })).json
    const row = rows.find((r: any) => r.route === '/stream')
    // (Stored to the millisecond; the stream lasts about 400 ms, so its end would be far from its start.)
    expect(Date.parse(row.timestamp)).toBeGreaterThanOrEqual(before - 1)
    expect(Date.parse(row.timestamp)).toBeLessThanOrEqual(before + 150)
    expect(Date.parse(row.timestamp) + row.durationMs).toBeLessThanOrEqual(after + 1)
  })

  test('server-sent event streams are recorded when they end, with their tokens', async () => {
    const server = makeServerWith(new ScriptedGenerator(REPLY, 30))
    const admin = await server.login()
    const started = Date.now()
    const stream = await server.call('GET', '/stream?message=tell%20me', { token: admin.accessToken })
    const end = stream.text.split('\n').filter((line) => line.startsWith('data: ')).map((line) => JSON.parse(line.slice(6))).at(-1)
    expect(end.type).toBe('end')
    const rows = (await server.call('GET', '/analytics/export', { token: admin.accessToken })).json
    const row = rows.find((r: any) => r.route === '/stream')
    expect(row).toMatchObject({ method: 'GET', status: 200, tokens: end.tokens, model: 'test/scripted', userId: admin.user.id })
    // Seven words, 30 ms apart: the record covers the whole stream, not just its headers.
    expect(row.durationMs).toBeGreaterThanOrEqual(180)
    expect(row.durationMs).toBeLessThanOrEqual(Date.now() - started)
  })

  test('WebSocket messages are recorded as WS <type>, with tokens for stream_chat', async () => {
    const server = makeServerWith(new ScriptedGenerator(REPLY))
    const admin = await server.login()
    const app = server.app.listen({ port: 0 })
    servers.push(app)
    const socket = new WebSocket(`ws://127.0.0.1:${app.server!.port}/ws`)
    const inbox: any[] = []
    socket.onmessage = (event) => inbox.push(JSON.parse(String(event.data)))
    await new Promise((resolve) => (socket.onopen = resolve))
    const until = async (predicate: () => boolean) => {
      for (let i = 0; i < 300 && !predicate(); i++) await Bun.sleep(10)
    }
    socket.send(JSON.stringify({ type: 'auth', token: admin.accessToken }))
    await until(() => inbox.length === 1)
    socket.send(JSON.stringify({ type: 'stream_chat', message: 'hello over the socket' }))
    await until(() => inbox.some((m) => m.type === 'chat_response'))
    socket.send(JSON.stringify({ type: 'made_up_type_123' }))
    socket.send('not json')
    await until(() => inbox.filter((m) => m.type === 'error').length === 2)
    socket.close()
    const response = inbox.find((m) => m.type === 'chat_response').data

    const dashboard = (await server.call('GET', '/analytics/dashboard', { token: admin.accessToken })).json
    const endpoints = Object.fromEntries(dashboard.requests.topEndpoints.map((e: any) => [e.endpoint, e]))
    expect(endpoints['WS stream_chat']).toMatchObject({ requests: 1, errorRate: 0 })
    expect(endpoints['WS auth']).toMatchObject({ requests: 1, errorRate: 0 })
    expect(endpoints['WS (unknown)']).toMatchObject({ requests: 1, errorRate: 1 })
    expect(endpoints['WS (invalid)']).toMatchObject({ requests: 1, errorRate: 1 })
    expect(JSON.stringify(dashboard)).not.toContain('made_up_type_123')
    expect(dashboard.ai.topModels).toEqual([{ model: 'test/scripted', requests: 1, tokens: response.metadata.tokens, cost: 0 }])
  })

  test('RAG answers carry their model tokens', async () => {
    const server = makeServer()
    const admin = await server.login()
    await server.call('POST', '/rag/ingest', {
      token: admin.accessToken,
      body: { collection: 'kb', documents: [{ id: 'vpn', content: 'Connect to the VPN with WireGuard before opening internal sites.' }] },
    })
    const answer = await server.call('POST', '/rag/answer', { token: admin.accessToken, body: { collection: 'kb', question: 'How do I connect to the VPN?' } })
    expect(answer.status).toBe(200)
    const rows = (await server.call('GET', '/analytics/export', { token: admin.accessToken })).json
    const row = rows.find((r: any) => r.route === '/rag/answer')
    expect(row.model).toBe(server.services.models.status().generatorId)
    expect(row.tokens).toBeGreaterThan(0)
  })

  test('a full database drops records and counts them; requests still succeed', async () => {
    const server = makeServer()
    const admin = await server.login()
    const { analyticsDb: db, recorder } = server.services
    await recorder.settle()
    const before = db.query<{ n: number }, []>('SELECT count(*) AS n FROM analytics_requests').get()!.n
    const pages = db.query<{ page_count: number }, []>('PRAGMA page_count').get()!.page_count
    db.run(`PRAGMA max_page_count = ${pages}`)
    // Far more records than the space left in the database's pages can hold.
    const filler = Array.from({ length: 2000 }, (_, i) => record({ ts: Date.now(), route: `/filler/${'x'.repeat(200)}/${i}` }))
    for (const r of filler) recorder.record(r)
    for (let i = 0; i < 5; i++) expect((await server.call('GET', '/auth/me', { token: admin.accessToken })).status).toBe(200)
    const metrics = await server.call('GET', '/metrics', { token: admin.accessToken })
    expect(metrics.status).toBe(200)
    const dropped = sample(parsePrometheus(metrics.text), 'uagent_analytics_records_dropped_total')!
    expect(dropped).toBeGreaterThanOrEqual(2000)
    expect(recorder.dropped).toBe(dropped)
    const count = () => db.query<{ n: number }, []>('SELECT count(*) AS n FROM analytics_requests').get()!.n
    expect(db.query("SELECT count(*) AS n FROM analytics_requests WHERE route LIKE '/filler/%'").get()).toEqual({ n: 0 })
    const stored = count()
    expect(stored).toBeGreaterThanOrEqual(before)
    // Once there is room again, records are stored again: the scrape's, then the dashboard's.
    db.run('PRAGMA max_page_count = 1073741823')
    expect((await server.call('GET', '/analytics/dashboard', { token: admin.accessToken })).status).toBe(200)
    await recorder.settle()
    expect(count()).toBe(stored + 2)
  })

  test('records older than the retention period are pruned, rollup included', async () => {
    const server = makeServer({ analyticsRetentionDays: 7 })
    const { recorder, analyticsDb: db } = server.services
    const now = Date.now()
    recorder.write([record({ ts: now - 8 * DAY }), record({ ts: now - 8 * DAY - HOUR }), record({ ts: now - 6 * DAY }), record({ ts: now - MINUTE })])
    expect(await recorder.prune(now)).toBe(2)
    const left = db.query<{ ts: number }, []>('SELECT ts FROM analytics_requests ORDER BY ts').all().map((row) => row.ts)
    expect(left.every((ts) => ts >= now - 7 * DAY - HOUR)).toBe(true)
    expect(left.filter((ts) => ts < now - 5 * DAY)).toHaveLength(1)
    const hours = db.query<{ hour: number }, []>('SELECT hour FROM analytics_hourly').all()
    expect(hours.every((row) => row.hour * HOUR >= now - 7 * DAY - HOUR)).toBe(true)
  })

  test('with UAGENT_ANALYTICS=off nothing is recorded', async () => {
    const server = makeServer({ env: { UAGENT_ANALYTICS: 'off' } })
    const admin = await server.login()
    await server.call('GET', '/auth/me', { token: admin.accessToken })
    const dashboard = (await server.call('GET', '/analytics/dashboard', { token: admin.accessToken })).json
    expect(dashboard.overview.totalRequests).toBe(0)
    expect(dashboard.overview.successRate).toBe('100.0%')
    expect(dashboard.overview.healthScore).toBe(100)
  })
})
