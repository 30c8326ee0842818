import { buildApp, createServices, type AppOptions } from '../src/app'

export const ADMIN = { email: 'admin@example.com', password: 'admin-password-1' }

/** An in-memory server (no port, no files) with a known admin, plus small request helpers. */
export function makeServer(options: AppOptions = {}) {
  const services = createServices({
    database: ':memory:',
    adminEmail: ADMIN.email,
    adminPassword: ADMIN.password,
    env: {},
    log: () => {},
    ...options,
  })
  const app = buildApp(services)

  async function call(method: string, path: string, init: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) {
    const headers: Record<string, string> = { ...init.headers }
    if (init.token) headers.authorization = `Bearer ${init.token}`
    let body: string | undefined
    if (init.body !== undefined) {
      headers['content-type'] ??= 'application/json'
      body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body)
    }
    const response = await app.handle(new Request(`http://localhost${path}`, { method, headers, body }))
    const text = await response.text()
    let json: any
    try {
      json = text ? JSON.parse(text) : undefined
    } catch {
      json = undefined
    }
    return { status: response.status, headers: response.headers, json, text }
  }

  async function login(email = ADMIN.email, password = ADMIN.password, mfaCode?: string) {
    const res = await call('POST', '/auth/login', { body: { email, password, mfaCode } })
    if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`)
    return res.json as { accessToken: string; refreshToken: string; sessionId: string; user: { id: string } }
  }

  /** Creates a plain user through the admin API and logs them in. */
  async function userSession(email: string, password = 'user-password-1') {
    const admin = await login()
    const created = await call('POST', '/auth/users', { token: admin.accessToken, body: { email, password, roles: ['user'] } })
    if (created.status !== 200) throw new Error(`create user failed: ${created.status} ${created.text}`)
    return login(email, password)
  }

  return { app, services, call, login, userSession }
}
