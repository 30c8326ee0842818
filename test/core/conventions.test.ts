import { describe, expect, test } from 'bun:test'
import { readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { ADMIN, makeServer, tempDir } from '../helpers'

describe('content types', () => {
  test('a JSON route sent a form (curl -d) or text is 415 saying a JSON body is expected', async () => {
    const { call } = makeServer()
    for (const type of ['application/x-www-form-urlencoded', 'text/plain']) {
      const res = await call('POST', '/auth/login', { body: `email=${ADMIN.email}&password=x`, headers: { 'content-type': type } })
      expect(res.status).toBe(415)
      expect(res.json).toMatchObject({ error: true, code: 'UNSUPPORTED_MEDIA_TYPE' })
      expect(res.json.message).toContain('A JSON body is expected')
      expect(res.json.message).not.toContain('body.email')
    }
  })

  test('no body at all says a JSON object is expected, not that a field is missing', async () => {
    const { call } = makeServer()
    const res = await call('POST', '/auth/login')
    expect(res.status).toBe(400)
    expect(res.json.message).toBe('body: a JSON object is expected (send Content-Type: application/json)')
  })

  test('application/json with a charset, and +json types, are accepted', async () => {
    const { call } = makeServer()
    const res = await call('POST', '/auth/login', { body: ADMIN, headers: { 'content-type': 'application/json; charset=utf-8' } })
    expect(res.status).toBe(200)
  })

  test('the collection-name message says ASCII letters', async () => {
    const { call, login } = makeServer()
    const { accessToken: token } = await login()
    const res = await call('POST', '/rag/ingest', { token, body: { collection: 'café', documents: [{ id: 'a', content: 'x' }] } })
    expect(res.status).toBe(400)
    expect(res.json.message).toContain('ASCII letters')
  })
})

describe('security headers', () => {
  test('every response carries nosniff, a Referrer-Policy and a restrictive CSP; the docs UI gets its own', async () => {
    const { call, login } = makeServer()
    const { accessToken: token } = await login()
    for (const [method, path, status] of [
      ['GET', '/health', 200],
      ['GET', '/system/info', 200],
      ['GET', '/no/such/route', 404],
      ['POST', '/chat', 400],
      ['GET', '/openapi/json', 200],
    ] as const) {
      const res = await call(method, path, { token, ...(method === 'POST' ? { body: {} } : {}) })
      expect(`${path} ${res.status}`).toBe(`${path} ${status}`)
      expect(res.headers.get('x-content-type-options')).toBe('nosniff')
      expect(res.headers.get('referrer-policy')).toBe('no-referrer')
      expect(res.headers.get('content-security-policy')).toContain(path === '/openapi/json' ? "default-src 'self'" : "default-src 'none'")
    }
    const ui = await call('GET', '/openapi')
    expect(ui.status).toBe(200)
    expect(ui.headers.get('content-security-policy')).toContain("script-src 'self'")
    expect(ui.headers.get('x-content-type-options')).toBe('nosniff')
  })
})

describe('CORS (UAGENT_CORS_ORIGINS)', () => {
  const preflight = (origin: string) => ({ origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, authorization' })

  test('off by default: no Access-Control headers, a preflight grants nothing', async () => {
    const { call } = makeServer()
    const res = await call('OPTIONS', '/auth/login', { headers: preflight('https://app.example.com') })
    expect(res.status).toBe(204)
    expect(res.headers.get('access-control-allow-origin')).toBeNull()
    const get = await call('GET', '/health', { headers: { origin: 'https://app.example.com' } })
    expect(get.headers.get('access-control-allow-origin')).toBeNull()
  })

  test('a listed origin gets its preflight answered and its responses readable, with credentials; others do not', async () => {
    const { call } = makeServer({ env: { UAGENT_CORS_ORIGINS: 'https://app.example.com, http://localhost:5173' } })
    const res = await call('OPTIONS', '/auth/login', { headers: preflight('https://app.example.com') })
    expect(res.status).toBe(204)
    expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example.com')
    expect(res.headers.get('access-control-allow-credentials')).toBe('true')
    expect(res.headers.get('access-control-allow-methods')).toContain('POST')
    expect(res.headers.get('access-control-allow-headers')!.toLowerCase()).toContain('authorization')

    const login = await call('POST', '/auth/login', { body: ADMIN, headers: { origin: 'http://localhost:5173' } })
    expect(login.status).toBe(200)
    expect(login.headers.get('access-control-allow-origin')).toBe('http://localhost:5173')
    expect(login.headers.get('access-control-expose-headers')).toContain('X-Request-Id')
    expect(login.headers.get('vary')).toContain('Origin')
    const failed = await call('POST', '/auth/login', { body: { ...ADMIN, password: 'wrong-password' }, headers: { origin: 'http://localhost:5173' } })
    expect(failed.status).toBe(401)
    expect(failed.headers.get('access-control-allow-origin')).toBe('http://localhost:5173')
    const health = await call('GET', '/health', { headers: { origin: 'https://app.example.com' } })
    expect(health.headers.get('access-control-allow-origin')).toBe('https://app.example.com')

    const other = await call('OPTIONS', '/auth/login', { headers: preflight('https://evil.example.com') })
    expect(other.headers.get('access-control-allow-origin')).toBeNull()
    const otherGet = await call('POST', '/auth/login', { body: ADMIN, headers: { origin: 'https://evil.example.com' } })
    expect(otherGet.headers.get('access-control-allow-origin')).toBeNull()
  })

  test('* allows any origin but never with credentials', async () => {
    const { call } = makeServer({ env: { UAGENT_CORS_ORIGINS: '*' } })
    const res = await call('OPTIONS', '/chat', { headers: preflight('https://anywhere.example') })
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    expect(res.headers.get('access-control-allow-credentials')).toBeNull()
  })

  test('a malformed origin stops the configuration with the variable named', () => {
    expect(() => makeServer({ env: { UAGENT_CORS_ORIGINS: 'https://app.example.com/path' } })).toThrow('UAGENT_CORS_ORIGINS')
  })
})

describe('a second server on a taken port', () => {
  test('exits non-zero within 5 s with one line naming the port', async () => {
    const holder = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('first') })
    const dataDir = tempDir('port')
    try {
      const clean: Record<string, string> = {}
      for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('UAGENT_') && value !== undefined) clean[key] = value
      const proc = Bun.spawn(['bun', 'run', 'start'], {
        cwd: join(import.meta.dir, '../..'),
        env: { ...clean, PORT: String(holder.port), HOST: '127.0.0.1', UAGENT_DATA_DIR: dataDir, UAGENT_ADMIN_EMAIL: ADMIN.email, UAGENT_ADMIN_PASSWORD: ADMIN.password },
        stdout: 'pipe',
        stderr: 'pipe',
      })
      // A server that did not stop by itself within 5 s is killed: its stderr then lacks the message.
      const timer = setTimeout(() => proc.kill(), 5000)
      const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()])
      clearTimeout(timer)
      expect(code).not.toBe(0)
      expect(stderr).toContain(`Port ${holder.port}`)
      expect(stderr).toContain('already in use')
      expect(stderr).not.toContain('    at ')
      // Nothing was set up for a server that could not start.
      expect(readdirSync(dataDir)).toEqual([])
      // The first server still answers, alone.
      expect(await (await fetch(`http://127.0.0.1:${holder.port}/`)).text()).toBe('first')
    } finally {
      holder.stop(true)
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe('numbers beyond exact range, in a module whose schema has no bounds', () => {
  test('are a 400 naming the field (query and body), caught once for every route', async () => {
    const { Elysia, t } = await import('elysia')
    const { httpCore } = await import('../../src/core/http')
    const { RateLimiter } = await import('../../src/core/rate-limit')
    const seen: unknown[] = []
    const app = new Elysia({ normalize: 'typebox' })
      .use(httpCore({ maxRequestBytes: 100_000, maxRequestSize: '100kb', limiter: new RateLimiter(1000, 60) }))
      .get('/items', ({ query }) => (seen.push(query.offset), { ok: true }), { query: t.Object({ offset: t.Optional(t.Integer()) }) })
      .post('/items', ({ body }) => (seen.push(body.options.count), { ok: true }), {
        body: t.Object({ options: t.Object({ count: t.Integer() }), metadata: t.Optional(t.Record(t.String(), t.Unknown())) }),
      })
    const get = await app.handle(new Request('http://localhost/items?offset=99999999999999999999'))
    expect(get.status).toBe(400)
    expect(((await get.json()) as { message: string }).message).toStartWith('query.offset:')
    const post = await app.handle(
      new Request('http://localhost/items', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"options":{"count":99999999999999999999}}' }),
    )
    expect(post.status).toBe(400)
    expect(((await post.json()) as { message: string }).message).toStartWith('body.options.count:')
    // Free-form values keep whatever JSON number they carry.
    const free = await app.handle(
      new Request('http://localhost/items', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"options":{"count":3},"metadata":{"big":1e300}}' }),
    )
    expect(free.status).toBe(200)
    expect(seen).toEqual([3])
  })
})
