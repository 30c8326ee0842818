import { describe, expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import { httpCore } from '../../src/core/http'
import { type RateDecision, RateLimiter } from '../../src/core/rate-limit'
import { makeServer } from '../helpers'

describe('errors and request ids', () => {
  test('unknown route is a 404 ErrorResponse whose requestId equals X-Request-Id', async () => {
    const { call } = makeServer()
    const res = await call('GET', '/no/such/route')
    expect(res.status).toBe(404)
    expect(res.json).toMatchObject({ error: true, code: 'NOT_FOUND' })
    expect(new Date(res.json.timestamp).toString()).not.toBe('Invalid Date')
    expect(res.headers.get('x-request-id')).toBe(res.json.requestId)
  })

  test('every response carries a distinct X-Request-Id', async () => {
    const { call } = makeServer()
    const a = await call('GET', '/health')
    const b = await call('GET', '/health')
    expect(a.headers.get('x-request-id')).toBeTruthy()
    expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'))
  })

  test('an unexpected exception is 500 INTERNAL_ERROR with no internals, logged with the request id', async () => {
    const lines: string[] = []
    const app = new Elysia()
      .use(httpCore({ maxRequestBytes: 1000, maxRequestSize: '1kb', limiter: new RateLimiter(100, 60), log: (l) => lines.push(l) }))
      .get('/boom', () => {
        throw new Error('SQLITE_ERROR near /var/secret/path')
      })
    const res = await app.handle(new Request('http://localhost/boom'))
    const body = (await res.json()) as { code: string; requestId: string }
    expect(res.status).toBe(500)
    expect(body.code).toBe('INTERNAL_ERROR')
    expect(JSON.stringify(body)).not.toContain('secret')
    expect(lines.join('\n')).toContain(body.requestId)
  })
})

describe('validation messages', () => {
  test('name the field and say what it accepts', async () => {
    const { call, login } = makeServer()
    const { accessToken: token } = await login()
    const cases: [string, string, unknown, string][] = [
      ['POST', '/auth/login', {}, 'body.email: is required'],
      ['POST', '/auth/login', { email: 'not-an-email', password: 'x' }, 'body.email: must be a valid email address'],
      ['POST', '/auth/users', { email: 'u@example.com', password: 'user-password-1', roles: ['root'] }, 'body.roles.0: must be "admin" or "user"'],
      ['POST', '/chat', { message: '' }, 'body.message: must be a string from 1 to 32000 characters, not blank'],
      ['POST', '/chat', { message: '   ' }, 'body.message: must be a string from 1 to 32000 characters, not blank'],
      ['POST', '/rag/search', { collection: 'docs', query: 'q', limit: 0 }, 'body.limit: must be an integer from 1 to 100'],
      ['POST', '/rag/search', { collection: 'docs', query: 'q', threshold: 2 }, 'body.threshold: must be a number from 0 to 1 or null'],
    ]
    for (const [method, path, body, message] of cases) {
      const res = await call(method, path, { token, body })
      expect(res.status).toBe(400)
      expect(res.json).toMatchObject({ code: 'VALIDATION_ERROR', message })
    }
  })
})

describe('order of checks', () => {
  test('the caller is checked before the input: 401 without a token, 403 for a user on an admin route, whatever the body', async () => {
    const { call, userSession } = makeServer()
    expect((await call('GET', '/stream')).json.code).toBe('UNAUTHORIZED')
    expect((await call('POST', '/rag/ingest', { body: {} })).json.code).toBe('UNAUTHORIZED')
    expect((await call('GET', '/conversations?limit=0')).json.code).toBe('UNAUTHORIZED')
    const user = await userSession('order@example.com')
    const forbidden = await call('POST', '/auth/users', { token: user.accessToken, body: {} })
    expect(forbidden.status).toBe(403)
    expect(forbidden.json.code).toBe('FORBIDDEN')
    // A known caller's rejected input still carries the rate-limit headers.
    const invalid = await call('GET', '/conversations?limit=0', { token: user.accessToken })
    expect(invalid.status).toBe(400)
    expect(invalid.headers.get('x-ratelimit-limit')).toBeTruthy()
  })
})

describe('limits', () => {
  test('a body over the size limit is 413 PAYLOAD_TOO_LARGE', async () => {
    const { call } = makeServer({ maxRequestSize: '1kb', maxRequestBytes: 1024 })
    const res = await call('POST', '/auth/login', { body: { email: 'a@b.co', password: 'x'.repeat(5000) } })
    expect(res.status).toBe(413)
    expect(res.json.code).toBe('PAYLOAD_TOO_LARGE')
  })

  test('a body without Content-Length is measured: over the limit is 413 before anything is read by the route', async () => {
    const { app } = makeServer({ maxRequestSize: '1kb', maxRequestBytes: 1024 })
    const chunk = new TextEncoder().encode(JSON.stringify({ email: 'a@b.co', password: 'x'.repeat(5000) }))
    const body = new ReadableStream({
      start(controller) {
        controller.enqueue(chunk)
        controller.close()
      },
    })
    const request = new Request('http://localhost/auth/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    expect(request.headers.get('content-length')).toBeNull()
    const res = await app.handle(request)
    expect(res.status).toBe(413)
    expect(((await res.json()) as { code: string }).code).toBe('PAYLOAD_TOO_LARGE')
  })

  test('anonymous callers are limited per address, malformed requests included; /health is exempt', async () => {
    const { call } = makeServer({ rateLimitMax: 2, rateLimitWindow: 60 })
    const first = await call('POST', '/auth/refresh', { body: { refreshToken: 'not-a-token' } })
    expect(first.status).toBe(401)
    expect(first.headers.get('x-ratelimit-limit')).toBe('2')
    expect(first.headers.get('x-ratelimit-remaining')).toBe('1')
    expect((await call('POST', '/auth/refresh', { body: { nope: 1 } })).status).toBe(400)
    const limited = await call('POST', '/auth/refresh', { body: { refreshToken: 'not-a-token' } })
    expect(limited.status).toBe(429)
    expect(limited.json.code).toBe('RATE_LIMITED')
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
    for (let i = 0; i < 5; i++) expect((await call('GET', '/health')).status).toBe(200)
  })

  test('per-user rate limit: X-RateLimit-* headers, then 429 RATE_LIMITED with Retry-After', async () => {
    const { call, login } = makeServer({ rateLimitMax: 3, rateLimitWindow: 60 })
    const session = await login()
    const first = await call('GET', '/auth/me', { token: session.accessToken })
    expect(first.headers.get('x-ratelimit-limit')).toBe('3')
    expect(first.headers.get('x-ratelimit-remaining')).toBe('2')
    expect(Number(first.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000)
    await call('GET', '/auth/me', { token: session.accessToken })
    await call('GET', '/auth/me', { token: session.accessToken })
    const limited = await call('GET', '/auth/me', { token: session.accessToken })
    expect(limited.status).toBe(429)
    expect(limited.json.code).toBe('RATE_LIMITED')
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0')
  })

  test('the rate limit counts each user separately', () => {
    const limiter = new RateLimiter(1, 60)
    limiter.hit('user:a')
    expect(() => limiter.hit('user:a')).toThrow()
    expect((limiter.hit('user:b') as RateDecision).remaining).toBe(0)
  })
})

describe('authenticated routes stay synchronous', () => {
  test('an authenticated GET is answered without waiting on a microtask (authentication is not awaited)', async () => {
    const { app, call, login } = makeServer()
    // Elysia guesses from a hook's source whether it is async; a guess of async makes it await the
    // hook, and every authenticated handler then returns a pending promise.
    const seen: string[] = []
    app.wrap((handle: (request: Request) => unknown) => (request: Request) => {
      const result = handle(request)
      if (new URL(request.url).pathname === '/auth/me') seen.push(result instanceof Promise ? Bun.peek.status(result) : 'ready')
      return result
    })
    const { accessToken } = await login()
    expect((await call('GET', '/auth/me', { token: accessToken })).status).toBe(200)
    expect((await call('GET', '/auth/me', { token: 'not-a-token' })).status).toBe(401)
    expect(seen).toHaveLength(2)
    expect(seen).not.toContain('pending')
  })
})

describe('what a route builds per request', () => {
  // Elysia reads every hook's source to decide what each route's context holds; a global hook that
  // names the query or the server makes every route parse its query string (reading request.url)
  // and define a `server` accessor, per request. These hold the global hooks to their word.
  const compiled = (app: { routes: { method: string; path: string }[] }, method: string, path: string): string => {
    const route = app.routes.find((r) => r.method === method && r.path === path) as { compile?: () => unknown; composed?: unknown } | undefined
    if (!route) throw new Error(`no route ${method} ${path}`)
    return String(route.compile?.() ?? route.composed)
  }

  test('a route that reads neither the query nor the server parses no query string and defines no server', () => {
    const { app } = makeServer()
    for (const [method, path] of [['GET', '/health'], ['GET', '/auth/me'], ['POST', '/auth/login']] as const) {
      const source = compiled(app, method, path)
      expect(source).not.toContain('parseQueryFromURL')
      expect(source).not.toContain("'server'")
    }
    // A route with a query schema parses it, and the check of its numbers sees it (conventions.test.ts).
    expect(compiled(app, 'GET', '/conversations')).toContain('parseQueryFromURL')
  })

  test('over HTTP, an anonymous caller is counted by its address', async () => {
    const keys: string[] = []
    const { app, services } = makeServer({}, (services) => {
      const hit = services.limiter.hit.bind(services.limiter)
      services.limiter.hit = (key: string, now?: number) => (keys.push(key), hit(key, now))
    })
    app.listen({ port: 0 })
    try {
      const response = await fetch(`http://127.0.0.1:${app.server!.port}/auth/refresh`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ refreshToken: 'not-a-token' }),
      })
      expect(response.status).toBe(401)
      expect(response.headers.get('x-ratelimit-limit')).not.toBeNull()
      expect(keys).toHaveLength(1)
      expect(keys[0]).toMatch(/^ip:(::ffff:)?127\.0\.0\.1$/)
    } finally {
      app.stop(true)
      await services.recorder.close()
    }
  })
})
