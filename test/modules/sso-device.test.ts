import { describe, expect, test } from 'bun:test'
import { hashToken } from '../../src/core/tokens'
import type { Postgres } from '../../src/db/postgres'
import { makeServer } from '../helpers'
import { freshPostgres, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../postgres'

type Server = ReturnType<typeof makeServer>

/** The stored row of a device code, from whichever backend holds it. */
async function storedCode(s: Server, postgres: Postgres | null, deviceCode: string): Promise<{ status: string; expires_at: number } | null> {
  const hash = hashToken(deviceCode)
  if (postgres) {
    const rows: { status: string; expires_at: string }[] = await postgres`SELECT status, expires_at FROM device_codes WHERE device_code_hash = ${hash}`
    return rows[0] ? { status: rows[0].status, expires_at: Number(rows[0].expires_at) } : null
  }
  return s.services.db.query<{ status: string; expires_at: number }, [string]>('SELECT status, expires_at FROM device_codes WHERE device_code_hash = ?').get(hash)
}

async function expire(s: Server, postgres: Postgres | null, deviceCode: string): Promise<void> {
  const hash = hashToken(deviceCode)
  if (postgres) await postgres`UPDATE device_codes SET expires_at = ${Date.now() - 1000} WHERE device_code_hash = ${hash}`
  else s.services.db.run('UPDATE device_codes SET expires_at = ? WHERE device_code_hash = ?', [Date.now() - 1000, hash])
}

function deviceFlowTests(backend: () => Promise<Postgres | null>) {
  const setup = async () => {
    const postgres = await backend()
    const s = makeServer(postgres ? { postgres } : {})
    const start = async () => {
      const res = await s.call('POST', '/auth/device', { body: { clientName: 'uagent on test-host' } })
      expect(res.status).toBe(200)
      return res.json as { deviceCode: string; userCode: string; verificationUrl: string; verificationUrlComplete: string; interval: number; expiresIn: number }
    }
    const poll = (deviceCode: string) => s.call('POST', '/auth/device/token', { body: { deviceCode } })
    return { s, postgres, start, poll }
  }

  test('a code approved in the browser signs the CLI in once; polls before that are AUTHORIZATION_PENDING or SLOW_DOWN', async () => {
    const { s, postgres, start, poll } = await setup()
    const grant = await start()
    expect(grant.userCode).toMatch(/^[B-Y]{4}-[B-Y]{4}$/)
    expect(grant.verificationUrl).toBe('http://localhost/app/device')
    expect(grant.verificationUrlComplete).toBe(`http://localhost/app/device?code=${grant.userCode}`)
    expect([grant.interval, grant.expiresIn]).toEqual([5, 600])
    // Stored hashed: the device code itself is nowhere in the database.
    expect(await storedCode(s, postgres, grant.deviceCode)).toMatchObject({ status: 'pending' })

    const pending = await poll(grant.deviceCode)
    expect([pending.status, pending.json.code]).toEqual([400, 'AUTHORIZATION_PENDING'])
    const tooFast = await poll(grant.deviceCode)
    expect([tooFast.status, tooFast.json.code]).toEqual([400, 'SLOW_DOWN'])

    // The approval page needs a signed-in person; the code may be typed in any case, without the dash.
    expect((await s.call('GET', `/auth/device/${grant.userCode}`)).status).toBe(401)
    const user = await s.userSession('cli-user@example.com')
    const typed = grant.userCode.replace('-', '').toLowerCase()
    const shown = await s.call('GET', `/auth/device/${typed}`, { token: user.accessToken })
    expect(shown.status).toBe(200)
    expect(shown.json).toMatchObject({ userCode: grant.userCode, status: 'pending', clientName: 'uagent on test-host' })
    const approved = await s.call('POST', `/auth/device/${typed}/approve`, { token: user.accessToken })
    expect(approved.status).toBe(200)
    expect(approved.json.request.status).toBe('approved')
    expect((await s.call('POST', `/auth/device/${typed}/deny`, { token: user.accessToken })).status).toBe(409)

    const signedIn = await poll(grant.deviceCode)
    expect(signedIn.status).toBe(200)
    expect(signedIn.json.user.email).toBe('cli-user@example.com')
    expect((await s.call('GET', '/auth/me', { token: signedIn.json.accessToken })).json.email).toBe('cli-user@example.com')
    expect((await s.call('POST', '/auth/refresh', { body: { refreshToken: signedIn.json.refreshToken } })).status).toBe(200)
    // Once.
    const again = await poll(grant.deviceCode)
    expect([again.status, again.json.code]).toEqual([400, 'EXPIRED_TOKEN'])
    expect(await storedCode(s, postgres, grant.deviceCode)).toMatchObject({ status: 'used' })
  })

  test('a denied code is ACCESS_DENIED; an expired one EXPIRED_TOKEN and can no longer be approved; an unknown one EXPIRED_TOKEN', async () => {
    const { s, postgres, start, poll } = await setup()
    const admin = await s.login()
    const denied = await start()
    expect((await s.call('POST', `/auth/device/${denied.userCode}/deny`, { token: admin.accessToken })).json.request.status).toBe('denied')
    const refused = await poll(denied.deviceCode)
    expect([refused.status, refused.json.code]).toEqual([400, 'ACCESS_DENIED'])

    const late = await start()
    await expire(s, postgres, late.deviceCode)
    const expired = await poll(late.deviceCode)
    expect([expired.status, expired.json.code]).toEqual([400, 'EXPIRED_TOKEN'])
    expect((await s.call('POST', `/auth/device/${late.userCode}/approve`, { token: admin.accessToken })).status).toBe(404)
    expect((await s.call('GET', `/auth/device/${late.userCode}`, { token: admin.accessToken })).status).toBe(404)

    const unknown = await poll('not-a-device-code')
    expect([unknown.status, unknown.json.code]).toEqual([400, 'EXPIRED_TOKEN'])
    expect((await s.call('POST', '/auth/device/token', { body: {} })).json.message).toContain('deviceCode')
  })

  test('a code approved by a user who is then disabled signs nobody in', async () => {
    const { s, start, poll } = await setup()
    const user = await s.userSession('soon-disabled@example.com')
    const grant = await start()
    expect((await s.call('POST', `/auth/device/${grant.userCode}/approve`, { token: user.accessToken })).status).toBe(200)
    const admin = await s.login()
    expect((await s.call('POST', `/auth/users/${user.user.id}/disable`, { token: admin.accessToken })).status).toBe(200)
    const res = await poll(grant.deviceCode)
    expect(res.status).toBe(403)
  })
}

describe('device codes (SQLite)', () => deviceFlowTests(async () => null))

describe.skipIf(!TEST_DATABASE_URL)(`device codes (PostgreSQL${TEST_DATABASE_URL ? '' : `: ${POSTGRES_SKIPPED}`})`, () => deviceFlowTests(() => freshPostgres()))

describe.skipIf(!TEST_DATABASE_URL)(`device codes across replicas${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('a code started on one server is approved on another and polled on the first: they share PostgreSQL, nothing in memory', async () => {
    const postgres = await freshPostgres()
    const [one, two] = [makeServer({ postgres }), makeServer({ postgres })]
    const grant = (await one.call('POST', '/auth/device', { body: {} })).json
    const user = await two.userSession('replica-user@example.com')
    expect((await two.call('POST', `/auth/device/${grant.userCode}/approve`, { token: user.accessToken })).status).toBe(200)
    const signedIn = await one.call('POST', '/auth/device/token', { body: { deviceCode: grant.deviceCode } })
    expect(signedIn.status).toBe(200)
    expect(signedIn.json.user.email).toBe('replica-user@example.com')
    const again = await two.call('POST', '/auth/device/token', { body: { deviceCode: grant.deviceCode } })
    expect([again.status, again.json.code]).toEqual([400, 'EXPIRED_TOKEN'])
  })
})
