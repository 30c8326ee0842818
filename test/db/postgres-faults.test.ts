import { afterAll, describe, expect, test } from 'bun:test'
import { openPostgres } from '../../src/db/postgres'
import { makeServer } from '../helpers'
import { emptyPostgresDatabase, POSTGRES_SKIPPED, relay, TEST_DATABASE_URL } from '../postgres'

describe.skipIf(!TEST_DATABASE_URL)(`PostgreSQL lost while serving${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  const closers: (() => void)[] = []
  afterAll(() => closers.forEach((close) => close()))

  test('requests that need it get 503 DATABASE_UNAVAILABLE, /health is degraded naming it, and both recover without a restart', async () => {
    const database = await emptyPostgresDatabase()
    const target = new URL(database.url)
    const link = await relay(target)
    closers.push(() => link.close())
    const viaRelay = new URL(database.url)
    viaRelay.port = String(link.port)
    const postgres = await openPostgres(viaRelay.toString())
    database.track(postgres)
    const lines: string[] = []
    const { call, login, services } = makeServer({ postgres, log: (line) => lines.push(line) })
    closers.push(() => services.postgresMonitor?.close())
    const session = await login()
    const chat = await call('POST', '/chat', { token: session.accessToken, body: { message: 'before the fault' } })
    expect(chat.status).toBe(200)
    expect((await call('GET', '/health')).json).toMatchObject({ status: 'healthy', connections: { postgres: 'connected' } })

    await link.cut()
    const listed = await call('GET', '/conversations', { token: session.accessToken })
    expect(listed.status).toBe(503)
    expect(listed.json).toMatchObject({ error: true, code: 'DATABASE_UNAVAILABLE' })
    expect(listed.json.message).toContain('UAGENT_DATABASE_URL')
    const refused = await call('POST', '/chat', { token: session.accessToken, body: { message: 'during the fault' } })
    expect(refused.status).toBe(503)
    expect(refused.json.code).toBe('DATABASE_UNAVAILABLE')
    // Routes that do not need PostgreSQL keep working.
    expect((await call('GET', '/auth/me', { token: session.accessToken })).status).toBe(200)
    await Bun.sleep(300)
    const degraded = (await call('GET', '/health')).json
    expect(degraded).toMatchObject({ status: 'degraded', connections: { postgres: 'unreachable' } })
    expect(degraded.reason).toContain('postgresql')
    expect(degraded.reason).toContain('UAGENT_DATABASE_URL')
    expect(lines.some((line) => line.includes('cannot be reached'))).toBe(true)

    await link.restore()
    let status = 0
    for (let i = 0; i < 100 && status !== 200; i++) {
      status = (await call('GET', '/conversations', { token: session.accessToken })).status
      if (status !== 200) await Bun.sleep(100)
    }
    expect(status).toBe(200)
    const after = await call('GET', '/conversations', { token: session.accessToken })
    // What was acknowledged before the fault is there; what was refused during it is not.
    expect(after.json.conversations.map((c: { title: string }) => c.title)).toEqual(['before the fault'])
    let health = ''
    for (let i = 0; i < 50 && health !== 'healthy'; i++) {
      health = (await call('GET', '/health')).json.status
      if (health !== 'healthy') await Bun.sleep(100)
    }
    expect(health).toBe('healthy')
    expect(lines.some((line) => line.includes('answers again'))).toBe(true)
  })
})
