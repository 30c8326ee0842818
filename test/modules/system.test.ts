import { describe, expect, test } from 'bun:test'
import pkg from '../../package.json'
import { makeServer } from '../helpers'

describe('health and system info', () => {
  test('GET /health is public and reports real figures', async () => {
    const { call } = makeServer()
    const res = await call('GET', '/health')
    expect(res.status).toBe(200)
    expect(res.json.status).toBe('healthy')
    expect(Number.isInteger(res.json.uptime)).toBe(true)
    expect(res.json.memory).toMatch(/^\d+\.\d MB$/)
    expect(res.json.connections).toMatchObject({ database: 'connected', vectorStore: 'connected' })
    for (const name of ['rag', 'voice', 'plugins', 'multiAgent']) expect(typeof res.json.features[name]).toBe('boolean')
    // Without weights, the built-in engines are active, and /health names them.
    expect(res.json.connections).toMatchObject({ embedder: 'builtin', llm: 'builtin' })
    expect(res.json.models).toEqual({ embedder: 'builtin/hash-embed-384', generator: 'builtin/extractive' })
  })

  test('GET /system/info needs a token and reports version and limits', async () => {
    const { call, login } = makeServer({ rateLimitMax: 120, rateLimitWindow: 30 })
    expect((await call('GET', '/system/info')).status).toBe(401)
    const res = await call('GET', '/system/info', { token: (await login()).accessToken })
    expect(res.status).toBe(200)
    expect(res.json.version).toBe(pkg.version)
    expect(res.json.nodeVersion).toStartWith(`bun ${Bun.version}`)
    expect(res.json.limits).toEqual({ maxRequestSize: '10mb', rateLimit: { window: 30, max: 120 } })
  })

  test('OpenAPI JSON lists the routes; the UI is served at /openapi and /swagger without a CDN', async () => {
    const { call } = makeServer()
    const spec = await call('GET', '/openapi/json')
    expect(spec.status).toBe(200)
    expect(Object.keys(spec.json.paths)).toContain('/auth/login')
    expect(spec.json.paths['/auth/login'].post.summary).toBeTruthy()
    for (const path of ['/openapi', '/swagger']) {
      const page = await call('GET', path)
      expect(page.status).toBe(200)
      expect(page.text).toContain('/openapi/assets/swagger-ui-bundle.js')
    }
    expect((await call('GET', '/openapi/assets/swagger-ui-bundle.js')).status).toBe(200)
  })
})
