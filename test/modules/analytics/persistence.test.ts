import { Database } from 'bun:sqlite'
import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApp, createServices } from '../../../src/app'
import { shutdown } from '../../../src/shutdown'

// Password hashing on a busy machine makes logins slow: room for them beyond the 5 s default.
setDefaultTimeout(30_000)

const dirs: string[] = []
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })))

function dataDir() {
  const dir = mkdtempSync(join(tmpdir(), 'uagent-analytics-'))
  dirs.push(dir)
  return dir
}

const ADMIN = { email: 'keeper@example.com', password: 'keeper-password-1' }
const JSON_HEADERS = { 'content-type': 'application/json' }

function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('UAGENT_') && value !== undefined) env[key] = value
  return env
}

const countRows = (path: string) => {
  const db = new Database(path, { readonly: true })
  try {
    return db.query<{ n: number }, []>('SELECT count(*) AS n FROM analytics_requests').get()!.n
  } finally {
    db.close()
  }
}

describe('records on disk', () => {
  test('survive a restart: the dashboard of the new process counts the old requests', async () => {
    const dir = dataDir()
    const options = { dataDir: dir, env: {}, adminEmail: ADMIN.email, adminPassword: ADMIN.password, log: () => {} }
    const first = createServices(options)
    const app = buildApp(first)
    const call = async (path: string, init: RequestInit = {}) => app.handle(new Request(`http://localhost${path}`, init))
    const login = (await (await call('/auth/login', { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(ADMIN) })).json()) as { accessToken: string }
    const auth = { authorization: `Bearer ${login.accessToken}` }
    for (let i = 0; i < 6; i++) await call('/auth/me', { headers: auth })
    await call(`/conversations/${crypto.randomUUID()}`, { headers: auth })
    // Stopped the way the server stops (no listener here): pending records flushed, database closed.
    await shutdown({ server: null, stop: async () => {} }, first)

    const second = createServices(options)
    const restarted = buildApp(second)
    const res = await restarted.handle(new Request('http://localhost/analytics/dashboard', { headers: auth }))
    expect(res.status).toBe(200)
    const dashboard = (await res.json()) as any
    expect(dashboard.requests).toMatchObject({ total: 8, failed: 1 })
    expect(dashboard.requests.topEndpoints.find((e: any) => e.endpoint === 'GET /auth/me').requests).toBe(6)
    await second.recorder.close()
    second.db.close()
  })
})

describe('shutdown', () => {
  test('waits for requests the app is still answering, and keeps their records', async () => {
    const dir = dataDir()
    const services = createServices({ dataDir: dir, env: {}, adminEmail: ADMIN.email, adminPassword: ADMIN.password, log: () => {} })
    const app = buildApp(services)
    // Logins take a while (password hashing): both are running when the shutdown starts.
    const running = Array.from({ length: 2 }, () => app.handle(new Request('http://localhost/auth/login', { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(ADMIN) })))
    expect(services.recorder.runningCount).toBe(2)
    await shutdown({ server: null, stop: async () => {} }, services)
    expect(services.recorder.runningCount).toBe(0)
    expect((await Promise.all(running)).map((res) => res.status)).toEqual([200, 200])
    expect(countRows(join(dir, 'analytics.db'))).toBe(2)
  })
})

describe('the server process', () => {
  test('on SIGTERM it lets running requests finish and loses no record', async () => {
    const dir = dataDir()
    const proc = Bun.spawn(['bun', join(import.meta.dir, '../../../src/index.ts')], {
      env: { ...cleanEnv(), PORT: '0', UAGENT_DATA_DIR: dir, UAGENT_ADMIN_EMAIL: ADMIN.email, UAGENT_ADMIN_PASSWORD: ADMIN.password },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    try {
      const reader = proc.stdout.getReader()
      let output = ''
      while (!/listening on (http:\/\/\S+)/.test(output)) {
        const { value, done } = await reader.read()
        if (done) throw new Error(`the server exited before listening: ${output}${await new Response(proc.stderr).text()}`)
        output += new TextDecoder().decode(value)
      }
      const base = /listening on (http:\/\/\S+)/.exec(output)![1]!
      let answered = 0
      const send = async (path: string, init: RequestInit = {}) => {
        const res = await fetch(`${base}${path}`, init)
        const body = await res.text()
        answered++
        return { status: res.status, body }
      }
      const login = JSON.parse((await send('/auth/login', { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(ADMIN) })).body) as { accessToken: string }
      const headers = { authorization: `Bearer ${login.accessToken}` }
      for (let i = 0; i < 12; i++) await send(i % 4 ? '/auth/me' : '/health', { headers })
      await send('/nowhere')
      // Logins take a while (password hashing): these are still running when SIGTERM arrives.
      const running = Array.from({ length: 3 }, () => send('/auth/login', { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(ADMIN) }))
      await Bun.sleep(100)
      proc.kill('SIGTERM')
      const statuses = (await Promise.all(running)).map((res) => res.status)
      expect(statuses).toEqual([200, 200, 200])
      expect(await proc.exited).toBe(0)
      // Every answered request is in the database, though the last ones were answered within the flush interval.
      expect(answered).toBe(1 + 12 + 1 + 3)
      expect(countRows(join(dir, 'analytics.db'))).toBe(answered)
    } finally {
      if (proc.exitCode === null) proc.kill('SIGKILL')
      await proc.exited
    }
  })
})
