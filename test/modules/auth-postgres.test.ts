import { SQL } from 'bun'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Secret, TOTP } from 'otpauth'
import { type AppOptions, buildApp, type Services, startServices } from '../../src/app'
import type { Postgres } from '../../src/db/postgres'
import { openInbox } from '../helpers'
import { emptyPostgresDatabase, freshPostgres, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../postgres'

// The key account flows over HTTP with the accounts in PostgreSQL, on servers built as the real
// one is (startServices: the JWT key and the first admin come from the database).

const ADMIN = { email: 'admin@example.com', password: 'admin-password-1' }
const started: Services[] = []

afterAll(() => {
  for (const services of started) {
    services.agents.close()
    services.plugins.close()
    services.postgresMonitor?.close()
    services.db.close()
    services.analyticsDb.close()
  }
})

async function pgServer(options: AppOptions) {
  const services = await startServices({ database: ':memory:', env: {}, log: () => {}, ...options })
  started.push(services)
  const app = buildApp(services)
  async function call(method: string, path: string, init: { token?: string; body?: unknown } = {}) {
    const headers: Record<string, string> = init.token ? { authorization: `Bearer ${init.token}` } : {}
    if (init.body !== undefined) headers['content-type'] = 'application/json'
    const response = await app.handle(new Request(`http://localhost${path}`, { method, headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) }))
    const text = await response.text()
    return { status: response.status, headers: response.headers, json: text ? JSON.parse(text) : undefined }
  }
  return { services, call }
}

const totpNow = (secret: string, offsetSteps = 0) =>
  new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30 }).generate({ timestamp: Date.now() + offsetSteps * 30_000 })

/** Milliseconds until `check` is true, polling every 20 ms for at most 3 s (Infinity if never). */
async function within(check: () => Promise<boolean>): Promise<number> {
  const start = performance.now()
  while (performance.now() - start < 3000) {
    if (await check()) return performance.now() - start
    await Bun.sleep(20)
  }
  return Infinity
}

describe.skipIf(!TEST_DATABASE_URL)(`accounts over HTTP on PostgreSQL${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  let postgres: Postgres
  // The PostgreSQL server is shared: connections go back as soon as they are no longer needed.
  beforeAll(async () => {
    postgres = await freshPostgres()
  })
  afterAll(() => postgres?.close())

  test('register, login, refresh rotation, logout, MFA, throttling and an admin disabling a user', async () => {
    const { services, call } = await pgServer({ postgres, adminEmail: ADMIN.email, adminPassword: ADMIN.password })
    const admin = (await call('POST', '/auth/login', { body: ADMIN })).json
    expect(admin.user).toMatchObject({ email: ADMIN.email, roles: ['admin'] })
    const created = await call('POST', '/auth/users', { token: admin.accessToken, body: { email: 'Pat@Example.com', password: 'pat-password-1' } })
    expect(created.status).toBe(200)
    expect((await call('POST', '/auth/users', { token: admin.accessToken, body: { email: 'pat@example.com', password: 'pat-password-1' } })).json.code).toBe('CONFLICT')
    // The accounts are in PostgreSQL, none in SQLite.
    expect((await postgres`SELECT email FROM users ORDER BY email`).map((row: { email: string }) => row.email)).toEqual(['admin@example.com', 'pat@example.com'])
    expect(services.db.query('SELECT count(*) AS n FROM users').get()).toEqual({ n: 0 })

    const pat = (await call('POST', '/auth/login', { body: { email: 'pat@example.com', password: 'pat-password-1' } })).json
    expect((await call('GET', '/auth/me', { token: pat.accessToken })).json).toMatchObject({ email: 'pat@example.com', roles: ['user'], sessionId: pat.sessionId })
    const rotated = await call('POST', '/auth/refresh', { body: { refreshToken: pat.refreshToken } })
    expect(rotated.status).toBe(200)
    expect(rotated.json.sessionId).toBe(pat.sessionId)
    expect((await call('POST', '/auth/refresh', { body: { refreshToken: pat.refreshToken } })).status).toBe(401)
    // Reuse revoked the session: the rotated tokens stop working too, at once.
    expect((await call('GET', '/auth/me', { token: rotated.json.accessToken })).status).toBe(401)

    const second = (await call('POST', '/auth/login', { body: { email: 'pat@example.com', password: 'pat-password-1' } })).json
    expect((await call('POST', '/auth/logout', { token: second.accessToken })).status).toBe(200)
    expect((await call('GET', '/auth/me', { token: second.accessToken })).json.code).toBe('UNAUTHORIZED')

    const session = (await call('POST', '/auth/login', { body: { email: 'pat@example.com', password: 'pat-password-1' } })).json
    const secret = (await call('POST', '/auth/mfa/setup', { token: session.accessToken })).json.secret as string
    expect((await call('POST', '/auth/mfa/enable', { token: session.accessToken, body: { code: '000000' === totpNow(secret, -1) ? '111111' : '000000' } })).status).toBe(400)
    expect((await call('POST', '/auth/mfa/enable', { token: session.accessToken, body: { code: totpNow(secret, -1) } })).status).toBe(200)
    expect((await call('GET', '/auth/me', { token: session.accessToken })).json.mfaEnabled).toBe(true)
    expect((await call('POST', '/auth/login', { body: { email: 'pat@example.com', password: 'pat-password-1' } })).json.code).toBe('MFA_REQUIRED')
    const code = totpNow(secret)
    expect((await call('POST', '/auth/login', { body: { email: 'pat@example.com', password: 'pat-password-1', mfaCode: code } })).status).toBe(200)
    expect((await call('POST', '/auth/login', { body: { email: 'pat@example.com', password: 'pat-password-1', mfaCode: code } })).json.code).toBe('INVALID_MFA_CODE')

    for (let i = 0; i < 4; i++) await call('POST', '/auth/login', { body: { email: 'pat@example.com', password: 'wrong-password' } })
    const locked = await call('POST', '/auth/login', { body: { email: 'pat@example.com', password: 'pat-password-1', mfaCode: totpNow(secret, 1) } })
    expect(locked.status).toBe(429)
    expect(locked.json.code).toBe('TOO_MANY_ATTEMPTS')
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0)
    expect((await call('POST', `/auth/users/${created.json.user.id}/unlock`, { token: admin.accessToken })).json.message).toContain('5 recorded failures')

    const disabled = await call('POST', `/auth/users/${created.json.user.id}/disable`, { token: admin.accessToken })
    expect(disabled.json).toMatchObject({ success: true, user: { disabled: true }, sessionsRevoked: 2 })
    expect((await call('GET', '/auth/me', { token: session.accessToken })).status).toBe(401)
    expect((await call('POST', '/auth/login', { body: { email: 'pat@example.com', password: 'pat-password-1', mfaCode: totpNow(secret, 1) } })).json.code).toBe('FORBIDDEN')
    expect((await call('GET', '/auth/users', { token: admin.accessToken })).json).toMatchObject({ total: 2, users: [{ email: ADMIN.email }, { email: 'pat@example.com', disabled: true }] })
    expect((await call('POST', `/auth/users/${created.json.user.id}/enable`, { token: admin.accessToken })).json.user.disabled).toBe(false)
    const reset = await call('POST', `/auth/users/${created.json.user.id}/password`, { token: admin.accessToken, body: { newPassword: 'pat-password-2' } })
    expect(reset.json).toMatchObject({ success: true, user: { email: 'pat@example.com', mfaEnabled: true } })
    expect((await call('POST', '/auth/login', { body: { email: 'pat@example.com', password: 'pat-password-1', mfaCode: totpNow(secret, 1) } })).json.code).toBe('INVALID_CREDENTIALS')
    expect((await call('POST', '/auth/login', { body: { email: 'pat@example.com', password: 'pat-password-2', mfaCode: totpNow(secret, 1) } })).status).toBe(200)
  })

  test('deleting a user deletes what they own in PostgreSQL by cascade', async () => {
    const { call } = await pgServer({ postgres, adminEmail: ADMIN.email, adminPassword: ADMIN.password })
    const admin = (await call('POST', '/auth/login', { body: ADMIN })).json
    const user = (await call('POST', '/auth/users', { token: admin.accessToken, body: { email: 'gone@example.com', password: 'gone-password-1' } })).json.user
    const session = (await call('POST', '/auth/login', { body: { email: 'gone@example.com', password: 'gone-password-1' } })).json
    expect((await call('POST', '/auth/api-keys', { token: session.accessToken, body: { name: 'laptop' } })).status).toBe(200)
    expect((await call('POST', '/chat', { token: session.accessToken, body: { message: 'hello' } })).status).toBe(200)
    const owned = async () => Number((await postgres`SELECT (SELECT count(*) FROM api_keys WHERE user_id = ${user.id}) + (SELECT count(*) FROM conversations WHERE user_id = ${user.id}) + (SELECT count(*) FROM sessions WHERE user_id = ${user.id}) AS n`)[0].n)
    expect(await owned()).toBe(3)
    expect((await call('DELETE', `/auth/users/${user.id}`, { token: admin.accessToken })).status).toBe(200)
    expect(await owned()).toBe(0)
  })

  test('the WebSocket takes an access token; after a logout its next message is refused', async () => {
    const server = await pgServer({ postgres, adminEmail: ADMIN.email, adminPassword: ADMIN.password })
    const session = (await server.call('POST', '/auth/login', { body: ADMIN })).json
    const app = buildApp(server.services).listen({ port: 0, hostname: '127.0.0.1' })
    try {
      const { socket, next } = await openInbox(app.server!.port!)
      socket.send(JSON.stringify({ type: 'auth', token: session.accessToken }))
      expect(await next()).toMatchObject({ type: 'auth_success', sessionId: session.sessionId })
      socket.send(JSON.stringify({ type: 'unknown_type', id: 'm1' }))
      // Authenticated: the message itself is what is wrong.
      expect(await next()).toMatchObject({ type: 'error', code: 'VALIDATION_ERROR', id: 'm1' })
      expect((await server.call('POST', '/auth/logout', { token: session.accessToken })).status).toBe(200)
      socket.send(JSON.stringify({ type: 'stream_chat', message: 'hello', id: 'm2' }))
      expect(await next()).toMatchObject({ type: 'error', code: 'UNAUTHORIZED', id: 'm2' })
      socket.close()
    } finally {
      app.stop(true)
    }
  })

  test('the web app’s cookie session: sign in, refresh from the cookie, sign out', async () => {
    const { services } = await pgServer({ postgres, adminEmail: ADMIN.email, adminPassword: ADMIN.password })
    const app = buildApp(services)
    const web = async (path: string, init: { body?: unknown; cookie?: string; token?: string } = {}) => {
      const headers: Record<string, string> = { 'x-requested-with': 'uagent-web', origin: 'http://localhost', host: 'localhost' }
      if (init.body !== undefined) headers['content-type'] = 'application/json'
      if (init.cookie) headers.cookie = init.cookie
      if (init.token) headers.authorization = `Bearer ${init.token}`
      const response = await app.handle(new Request(`http://localhost/auth/web${path}`, { method: 'POST', headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) }))
      const cookie = response.headers.getSetCookie().find((line) => !line.includes('Max-Age=0') && /HttpOnly/i.test(line))?.split(';')[0]
      return { status: response.status, json: (await response.json()) as any, cookie }
    }
    const signedIn = await web('/login', { body: ADMIN })
    expect(signedIn.status).toBe(200)
    expect(signedIn.json.refreshToken).toBeUndefined()
    const refreshed = await web('/refresh', { cookie: signedIn.cookie })
    expect(refreshed.status).toBe(200)
    expect(refreshed.json.sessionId).toBe(signedIn.json.sessionId)
    // The cookie's refresh token was rotated: the old one, presented again, ends the session.
    expect((await web('/refresh', { cookie: signedIn.cookie })).status).toBe(401)
    expect((await web('/refresh', { cookie: refreshed.cookie })).status).toBe(401)
    const again = await web('/login', { body: ADMIN })
    expect((await web('/logout', { token: again.json.accessToken })).status).toBe(200)
    expect((await web('/refresh', { cookie: again.cookie })).status).toBe(401)
  })

  test('users whose accounts are in PostgreSQL keep collections, by access token or API key', async () => {
    const { call } = await pgServer({ postgres, adminEmail: ADMIN.email, adminPassword: ADMIN.password })
    const admin = (await call('POST', '/auth/login', { body: ADMIN })).json
    await call('POST', '/auth/users', { token: admin.accessToken, body: { email: 'reader@example.com', password: 'reader-password-1' } })
    const reader = (await call('POST', '/auth/login', { body: { email: 'reader@example.com', password: 'reader-password-1' } })).json
    const key = (await call('POST', '/auth/api-keys', { token: reader.accessToken, body: { name: 'script' } })).json.key
    for (const [token, collection] of [[reader.accessToken, 'notes'], [key, 'scripts']] as const) {
      const ingest = await call('POST', '/rag/ingest', { token, body: { collection, documents: [{ id: 'd1', content: 'Hotels are capped at 120 euros a night.' }] } })
      expect(ingest.status).toBe(200)
    }
    const found = await call('POST', '/rag/search', { token: key, body: { collection: 'notes', query: 'hotel cap', limit: 3 } })
    expect(found.status).toBe(200)
    expect(JSON.stringify(found.json)).toContain('120 euros')
  })
})

describe.skipIf(!TEST_DATABASE_URL)(`replicas on one PostgreSQL database${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('two servers started at the same moment on an empty database make one admin and one JWT key', async () => {
    const database = await emptyPostgresDatabase()
    const lines: string[] = []
    const options = { databaseUrl: database.url, log: (line: string) => lines.push(line) }
    const [a, b] = await Promise.all([pgServer(options), pgServer(options)])
    database.track(a.services.postgres!)
    database.track(b.services.postgres!)
    const check = new SQL(database.url, { max: 1 })
    database.track(check)
    expect((await check`SELECT email, roles FROM users`).map((row: object) => ({ ...row }))).toEqual([{ email: 'admin@uagent.local', roles: '["admin"]' }])
    expect(Number((await check`SELECT count(*) AS n FROM server_secrets`)[0].n)).toBe(1)
    // Only the server that made the admin prints its password, which logs in on either server.
    const printed = lines.filter((line) => line.startsWith('First admin created'))
    expect(printed).toHaveLength(1)
    const password = /admin@uagent\.local \/ (\S+)/.exec(printed[0]!)![1]!
    const session = (await a.call('POST', '/auth/login', { body: { email: 'admin@uagent.local', password } })).json
    // Either server signs with the key in the database, so a token from one works on the other.
    expect((await b.call('GET', '/auth/me', { token: session.accessToken })).json.email).toBe('admin@uagent.local')
    expect(a.services.config.jwtSecret).toBeUndefined()
    await Promise.all([a.services.postgres!.close(), b.services.postgres!.close(), check.close()])
  })

  test('a logout, password change or disabled user on one server is refused by the other within 1 s; UAGENT_JWT_SECRET wins', async () => {
    const postgres = await freshPostgres()
    const options = { postgres, adminEmail: ADMIN.email, adminPassword: ADMIN.password }
    const a = await pgServer(options)
    const b = await pgServer(options)
    const admin = (await a.call('POST', '/auth/login', { body: ADMIN })).json
    const user = (await b.call('POST', '/auth/users', { token: admin.accessToken, body: { email: 'sam@example.com', password: 'sam-password-1' } })).json.user
    const login = async (server: typeof a, password = 'sam-password-1') => (await server.call('POST', '/auth/login', { body: { email: 'sam@example.com', password } })).json
    const refusedOn = (server: typeof a, token: string) => within(async () => (await server.call('GET', '/auth/me', { token })).status === 401)

    const first = await login(a)
    expect((await b.call('GET', '/auth/me', { token: first.accessToken })).status).toBe(200)
    await a.call('POST', '/auth/logout', { token: first.accessToken })
    expect(await refusedOn(b, first.accessToken)).toBeLessThan(1000)

    const kept = await login(a)
    const other = await login(b)
    expect((await b.call('GET', '/auth/me', { token: other.accessToken })).status).toBe(200)
    expect((await a.call('POST', '/auth/password', { token: kept.accessToken, body: { currentPassword: 'sam-password-1', newPassword: 'sam-password-2' } })).json.sessionsRevoked).toBe(1)
    expect(await refusedOn(b, other.accessToken)).toBeLessThan(1000)
    expect((await b.call('GET', '/auth/me', { token: kept.accessToken })).status).toBe(200)

    await a.call('POST', `/auth/users/${user.id}/disable`, { token: admin.accessToken })
    expect(await refusedOn(b, kept.accessToken)).toBeLessThan(1000)
    expect((await login(b, 'sam-password-2')).code).toBe('FORBIDDEN')

    // With UAGENT_JWT_SECRET set, that key signs, not the database's.
    const own = await pgServer({ ...options, env: { UAGENT_JWT_SECRET: 'a-configured-key-of-at-least-32-chars!' } })
    const token = (await own.call('POST', '/auth/login', { body: ADMIN })).json.accessToken
    expect((await own.call('GET', '/auth/me', { token })).status).toBe(200)
    expect((await a.call('GET', '/auth/me', { token })).status).toBe(401)
    await postgres.close()
  })
})
