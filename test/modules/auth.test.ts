import { describe, expect, test } from 'bun:test'
import { TOTP, Secret } from 'otpauth'
import { SignJWT } from 'jose'
import { ADMIN, makeServer } from '../helpers'

function totpNow(secret: string, offsetSteps = 0) {
  return new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30 }).generate({ timestamp: Date.now() + offsetSteps * 30_000 })
}

describe('login', () => {
  test('right credentials give tokens and the user record', async () => {
    const { call } = makeServer()
    const res = await call('POST', '/auth/login', { body: ADMIN })
    expect(res.status).toBe(200)
    expect(res.json.success).toBe(true)
    expect(res.json.accessToken.split('.')).toHaveLength(3)
    expect(typeof res.json.refreshToken).toBe('string')
    expect(typeof res.json.sessionId).toBe('string')
    expect(res.json.user).toMatchObject({ email: ADMIN.email, roles: ['admin'], mfaEnabled: false })
  })

  test('wrong password is 401 INVALID_CREDENTIALS', async () => {
    const { call } = makeServer()
    const res = await call('POST', '/auth/login', { body: { email: ADMIN.email, password: 'nope-nope' } })
    expect(res.status).toBe(401)
    expect(res.json).toMatchObject({ error: true, code: 'INVALID_CREDENTIALS' })
  })

  test('malformed bodies are 400 VALIDATION_ERROR naming the field', async () => {
    const { call } = makeServer()
    const broken = await call('POST', '/auth/login', { body: '{"email":' })
    expect(broken.status).toBe(400)
    expect(broken.json.code).toBe('VALIDATION_ERROR')
    const missing = await call('POST', '/auth/login', { body: { email: ADMIN.email } })
    expect(missing.status).toBe(400)
    expect(missing.json.code).toBe('VALIDATION_ERROR')
    expect(missing.json.message).toContain('password')
    const badEmail = await call('POST', '/auth/login', { body: { email: 'not-an-email', password: 'x' } })
    expect(badEmail.status).toBe(400)
    expect(badEmail.json.message).toContain('email')
  })

  test('five failures lock that email (right password too) with Retry-After; others unaffected', async () => {
    const { call, userSession } = makeServer()
    await userSession('other@example.com')
    for (let i = 0; i < 5; i++) {
      expect((await call('POST', '/auth/login', { body: { email: ADMIN.email, password: `wrong-${i}` } })).status).toBe(401)
    }
    const locked = await call('POST', '/auth/login', { body: ADMIN })
    expect(locked.status).toBe(429)
    expect(locked.json.code).toBe('TOO_MANY_ATTEMPTS')
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0)
    const other = await call('POST', '/auth/login', { body: { email: 'other@example.com', password: 'user-password-1' } })
    expect(other.status).toBe(200)
  })
})

describe('tokens and sessions', () => {
  test('refresh rotates; reusing an old refresh token revokes the session', async () => {
    const { call, login } = makeServer()
    const first = await login()
    const second = await call('POST', '/auth/refresh', { body: { refreshToken: first.refreshToken } })
    expect(second.status).toBe(200)
    expect(second.json.refreshToken).not.toBe(first.refreshToken)
    expect(second.json.sessionId).toBe(first.sessionId)
    expect((await call('GET', '/auth/me', { token: second.json.accessToken })).status).toBe(200)

    const reuse = await call('POST', '/auth/refresh', { body: { refreshToken: first.refreshToken } })
    expect(reuse.status).toBe(401)
    // The whole session is gone: the newest tokens stop working too.
    expect((await call('GET', '/auth/me', { token: second.json.accessToken })).status).toBe(401)
    expect((await call('POST', '/auth/refresh', { body: { refreshToken: second.json.refreshToken } })).status).toBe(401)
  })

  test('logout revokes the access token at once', async () => {
    const { call, login } = makeServer()
    const session = await login()
    expect((await call('GET', '/auth/me', { token: session.accessToken })).status).toBe(200)
    expect((await call('POST', '/auth/logout', { token: session.accessToken })).status).toBe(200)
    const after = await call('GET', '/auth/me', { token: session.accessToken })
    expect(after.status).toBe(401)
    expect(after.json.code).toBe('UNAUTHORIZED')
  })

  test('missing, tampered, alg:none and expired tokens are rejected', async () => {
    const { call, login, services } = makeServer({ jwtSecret: 'k'.repeat(40) })
    const session = await login()
    expect((await call('GET', '/auth/me')).json.code).toBe('UNAUTHORIZED')

    const [header, payload, signature] = session.accessToken.split('.')
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString())
    const forged = Buffer.from(JSON.stringify({ ...claims, roles: ['admin', 'root'] })).toString('base64url')
    const tampered = await call('GET', '/auth/me', { token: `${header}.${forged}.${signature}` })
    expect(tampered.status).toBe(401)
    expect(tampered.json.code).toBe('UNAUTHORIZED')

    const none = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')
    const unsigned = await call('GET', '/auth/me', { token: `${none}.${payload}.` })
    expect(unsigned.status).toBe(401)

    const key = new TextEncoder().encode('k'.repeat(40))
    const expired = await new SignJWT({ sid: session.sessionId, roles: ['admin'] })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(session.user.id)
      .setIssuedAt(Math.floor(Date.now() / 1000) - 3600)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 60)
      .sign(key)
    const old = await call('GET', '/auth/me', { token: expired })
    expect(old.status).toBe(401)
    expect(old.json.code).toBe('TOKEN_EXPIRED')
    expect(services.auth.countUsers()).toBe(1)
  })
})

describe('roles', () => {
  test('a user gets 403 FORBIDDEN on an admin route; an admin creates users', async () => {
    const { call, userSession, login } = makeServer()
    const user = await userSession('someone@example.com')
    const denied = await call('POST', '/auth/users', { token: user.accessToken, body: { email: 'x@example.com', password: 'password-9' } })
    expect(denied.status).toBe(403)
    expect(denied.json.code).toBe('FORBIDDEN')
    const admin = await login()
    const dup = await call('POST', '/auth/users', { token: admin.accessToken, body: { email: 'someone@example.com', password: 'password-9' } })
    expect(dup.status).toBe(409)
  })

  test('an admin lists every account without secrets; a user gets 403', async () => {
    const { call, userSession, login } = makeServer()
    const user = await userSession('listed@example.com')
    const denied = await call('GET', '/auth/users', { token: user.accessToken })
    expect(denied.status).toBe(403)
    expect(denied.json.code).toBe('FORBIDDEN')
    const listed = await call('GET', '/auth/users', { token: (await login()).accessToken })
    expect(listed.status).toBe(200)
    expect(listed.json.total).toBe(2)
    expect(listed.json.users.map((u: { email: string }) => u.email)).toEqual([ADMIN.email, 'listed@example.com'])
    expect(listed.json.users[1]).toEqual({ id: user.user.id, email: 'listed@example.com', roles: ['user'], mfaEnabled: false, createdAt: expect.any(String), disabled: false })
    expect(listed.text).not.toContain('argon2')
  })
})

describe('MFA', () => {
  test('setup, enable, then login needs the code; wrong code 401; each code works once; disable', async () => {
    const { call, login } = makeServer()
    const session = await login()
    const setup = await call('POST', '/auth/mfa/setup', { token: session.accessToken })
    expect(setup.status).toBe(200)
    expect(setup.json.otpauthUrl).toStartWith('otpauth://totp/')
    const secret = setup.json.secret as string

    const wrongEnable = await call('POST', '/auth/mfa/enable', { token: session.accessToken, body: { code: '000000' } })
    expect(wrongEnable.status).toBe(400)
    expect(wrongEnable.json.code).toBe('INVALID_MFA_CODE')
    expect((await call('GET', '/auth/me', { token: session.accessToken })).json.mfaEnabled).toBe(false)
    expect((await call('POST', '/auth/mfa/enable', { token: session.accessToken, body: { code: totpNow(secret, -1) } })).status).toBe(200)
    // A session that was already in use sees the change on its next request.
    expect((await call('GET', '/auth/me', { token: session.accessToken })).json.mfaEnabled).toBe(true)

    const required = await call('POST', '/auth/login', { body: ADMIN })
    expect(required.status).toBe(401)
    expect(required.json.code).toBe('MFA_REQUIRED')
    const wrong = await call('POST', '/auth/login', { body: { ...ADMIN, mfaCode: '123456' === totpNow(secret) ? '654321' : '123456' } })
    expect(wrong.status).toBe(401)
    expect(wrong.json.code).toBe('INVALID_MFA_CODE')

    const code = totpNow(secret)
    const ok = await call('POST', '/auth/login', { body: { ...ADMIN, mfaCode: code } })
    expect(ok.status).toBe(200)
    expect(ok.json.user.mfaEnabled).toBe(true)
    const replay = await call('POST', '/auth/login', { body: { ...ADMIN, mfaCode: code } })
    expect(replay.json.code).toBe('INVALID_MFA_CODE')

    const disable = await call('POST', '/auth/mfa/disable', { token: ok.json.accessToken, body: { code: totpNow(secret, 1) } })
    expect(disable.status).toBe(200)
    expect((await call('GET', '/auth/me', { token: ok.json.accessToken })).json.mfaEnabled).toBe(false)
    expect((await call('POST', '/auth/login', { body: ADMIN })).status).toBe(200)
  })
})

describe('password change', () => {
  test('needs the current password; the new one works, the old one does not; other sessions are signed out', async () => {
    const { call, login, userSession } = makeServer()
    const user = await userSession('changer@example.com', 'old-password-1')
    const elsewhere = await login('changer@example.com', 'old-password-1')
    const wrong = await call('POST', '/auth/password', { token: user.accessToken, body: { currentPassword: 'not-it', newPassword: 'new-password-1' } })
    expect(wrong.status).toBe(401)
    expect(wrong.json.code).toBe('INVALID_CREDENTIALS')
    const short = await call('POST', '/auth/password', { token: user.accessToken, body: { currentPassword: 'old-password-1', newPassword: 'short' } })
    expect(short.status).toBe(400)
    expect(short.json.message).toContain('body.newPassword')
    const changed = await call('POST', '/auth/password', { token: user.accessToken, body: { currentPassword: 'old-password-1', newPassword: 'new-password-1' } })
    expect(changed.status).toBe(200)
    expect(changed.json).toMatchObject({ success: true, sessionsRevoked: 1 })
    expect((await call('GET', '/auth/me', { token: user.accessToken })).status).toBe(200)
    expect((await call('GET', '/auth/me', { token: elsewhere.accessToken })).json.code).toBe('UNAUTHORIZED')
    expect((await call('POST', '/auth/refresh', { body: { refreshToken: elsewhere.refreshToken } })).status).toBe(401)
    const old = await call('POST', '/auth/login', { body: { email: 'changer@example.com', password: 'old-password-1' } })
    expect(old.json.code).toBe('INVALID_CREDENTIALS')
    await login('changer@example.com', 'new-password-1')
  })

  test('wrong current passwords count towards login throttling', async () => {
    const { call, userSession } = makeServer()
    const user = await userSession('guessed@example.com', 'right-password-1')
    for (let i = 0; i < 5; i++) {
      const res = await call('POST', '/auth/password', { token: user.accessToken, body: { currentPassword: `guess-${i}`, newPassword: 'new-password-1' } })
      expect(res.json.code).toBe('INVALID_CREDENTIALS')
    }
    const locked = await call('POST', '/auth/password', { token: user.accessToken, body: { currentPassword: 'right-password-1', newPassword: 'new-password-1' } })
    expect(locked.status).toBe(429)
    expect(locked.json.code).toBe('TOO_MANY_ATTEMPTS')
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0)
    expect((await call('POST', '/auth/login', { body: { email: 'guessed@example.com', password: 'right-password-1' } })).status).toBe(429)
  })
})
