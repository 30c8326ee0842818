import { describe, expect, test } from 'bun:test'
import { makeServer } from '../helpers'

async function setup() {
  const server = makeServer()
  const admin = await server.login()
  const user = await server.userSession('ann@example.com', 'ann-password-1')
  return { ...server, admin: admin.accessToken, user, token: user.accessToken }
}

describe('admin user routes', () => {
  test('GET /auth/users is paginated, never shows secrets, and is admin-only', async () => {
    const { call, admin, token } = await setup()
    for (const email of ['b@example.com', 'c@example.com']) await call('POST', '/auth/users', { token: admin, body: { email, password: 'password-123' } })
    const page = await call('GET', '/auth/users?limit=2&offset=1', { token: admin })
    expect(page.status).toBe(200)
    expect(page.json.total).toBe(4)
    expect(page.json.users.map((u: any) => u.email)).toEqual(['ann@example.com', 'b@example.com'])
    expect(page.json.hasMore).toBe(true)
    expect(page.text).not.toContain('argon2')
    expect(Object.keys(page.json.users[0]).sort()).toEqual(['createdAt', 'disabled', 'email', 'id', 'mfaEnabled', 'roles'])
    expect((await call('GET', '/auth/users?limit=101', { token: admin })).status).toBe(400)
    expect((await call('GET', '/auth/users', { token })).status).toBe(403)
  })

  test('setting a password signs out every session of that user; the new password works', async () => {
    const { call, admin, token, user, login } = await setup()
    const res = await call('POST', `/auth/users/${user.user.id}/password`, { token: admin, body: { newPassword: 'fresh-password-9' } })
    expect(res.status).toBe(200)
    expect(res.json.sessionsRevoked).toBe(1)
    expect((await call('GET', '/auth/me', { token })).status).toBe(401)
    expect((await call('POST', '/auth/login', { body: { email: 'ann@example.com', password: 'ann-password-1' } })).status).toBe(401)
    await login('ann@example.com', 'fresh-password-9')
    expect((await call('POST', `/auth/users/${user.user.id}/password`, { token: admin, body: { newPassword: 'short' } })).status).toBe(400)
    expect((await call('POST', `/auth/users/no-such-id/password`, { token: admin, body: { newPassword: 'long-enough-1' } })).status).toBe(404)
  })

  test('unlock clears login throttling', async () => {
    const { call, admin, user } = await setup()
    for (let i = 0; i < 5; i++) await call('POST', '/auth/login', { body: { email: 'ann@example.com', password: 'wrong-password' } })
    const locked = await call('POST', '/auth/login', { body: { email: 'ann@example.com', password: 'ann-password-1' } })
    expect(locked.status).toBe(429)
    const res = await call('POST', `/auth/users/${user.user.id}/unlock`, { token: admin })
    expect(res.status).toBe(200)
    expect((await call('POST', '/auth/login', { body: { email: 'ann@example.com', password: 'ann-password-1' } })).status).toBe(200)
  })

  test("disabling stops the user's tokens at once (cached or not), refuses logins and refreshes; enabling lets them log in again", async () => {
    const { call, admin, token, user, login } = await setup()
    // The token is used first so that its caller sits in the principal cache.
    expect((await call('GET', '/auth/me', { token })).status).toBe(200)
    const res = await call('POST', `/auth/users/${user.user.id}/disable`, { token: admin })
    expect(res.status).toBe(200)
    expect(res.json.user.disabled).toBe(true)
    expect((await call('GET', '/auth/me', { token })).status).toBe(401)
    expect((await call('GET', '/conversations', { token })).status).toBe(401)
    expect((await call('POST', '/auth/refresh', { body: { refreshToken: user.refreshToken } })).status).toBe(401)
    const refused = await call('POST', '/auth/login', { body: { email: 'ann@example.com', password: 'ann-password-1' } })
    expect(refused.status).toBe(403)
    expect(refused.json.message).toContain('disabled')
    expect((await call('POST', `/auth/users/${user.user.id}/enable`, { token: admin })).json.user.disabled).toBe(false)
    const again = await login('ann@example.com', 'ann-password-1')
    expect((await call('GET', '/auth/me', { token: again.accessToken })).status).toBe(200)
  })

  test('deleting a user removes them and everything they own; another user keeps theirs', async () => {
    const { call, admin, token, user, login } = await setup()
    await call('POST', '/chat', { token, body: { message: 'remember this' } })
    await call('POST', '/rag/ingest', { token, body: { collection: 'docs', documents: [{ id: 'd1', content: 'the owner of this text is leaving' }] } })
    await call('POST', '/rag/ingest', { token: admin, body: { collection: 'docs', documents: [{ id: 'a1', content: 'the admin keeps this text' }] } })
    const res = await call('DELETE', `/auth/users/${user.user.id}`, { token: admin })
    expect(res.status).toBe(200)
    expect(res.json.user.email).toBe('ann@example.com')
    expect((await call('GET', '/auth/me', { token })).status).toBe(401)
    const list = await call('GET', '/auth/users?limit=100', { token: admin })
    expect(list.json.users.map((u: any) => u.email)).not.toContain('ann@example.com')
    // Re-created with the same email, the account starts empty.
    await call('POST', '/auth/users', { token: admin, body: { email: 'ann@example.com', password: 'ann-password-2' } })
    const back = await login('ann@example.com', 'ann-password-2')
    expect((await call('GET', '/conversations', { token: back.accessToken })).json.total).toBe(0)
    expect((await call('GET', '/rag/collections', { token: back.accessToken })).json.collections).toEqual([])
    const kept = await call('POST', '/rag/search', { token: admin, body: { collection: 'docs', query: 'admin keeps' } })
    expect(kept.status).toBe(200)
    expect(kept.json.results[0].id).toBe('a1')
    expect((await call('DELETE', `/auth/users/${user.user.id}`, { token: admin })).status).toBe(404)
  })

  test('the last admin can be neither disabled nor deleted; with a second admin it can', async () => {
    const { call, admin, login } = await setup()
    const me = (await call('GET', '/auth/me', { token: admin })).json
    for (const action of ['disable', 'delete'] as const) {
      const res = action === 'delete' ? await call('DELETE', `/auth/users/${me.id}`, { token: admin }) : await call('POST', `/auth/users/${me.id}/disable`, { token: admin })
      expect(res.status).toBe(409)
      expect(res.json.message).toContain('last admin')
    }
    await call('POST', '/auth/users', { token: admin, body: { email: 'second@example.com', password: 'second-password', roles: ['admin'] } })
    const second = await login('second@example.com', 'second-password')
    expect((await call('POST', `/auth/users/${me.id}/disable`, { token: second.accessToken })).status).toBe(200)
    expect((await call('GET', '/auth/me', { token: admin })).status).toBe(401)
    // Now the second admin is the last enabled one.
    const secondId = second.user.id
    expect((await call('DELETE', `/auth/users/${secondId}`, { token: second.accessToken })).status).toBe(409)
  })

  test('every admin route is 403 for a user and 401 without a token', async () => {
    const { call, token, user } = await setup()
    const id = user.user.id
    const routes: [string, string, unknown?][] = [
      ['POST', `/auth/users/${id}/password`, { newPassword: 'whatever-123' }],
      ['POST', `/auth/users/${id}/unlock`],
      ['POST', `/auth/users/${id}/disable`],
      ['POST', `/auth/users/${id}/enable`],
      ['DELETE', `/auth/users/${id}`],
    ]
    for (const [method, path, body] of routes) {
      expect((await call(method, path, { token, body })).status).toBe(403)
      expect((await call(method, path, { body })).status).toBe(401)
    }
  })
})
