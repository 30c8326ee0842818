import { afterAll, describe, expect, test } from 'bun:test'
import { hashToken } from '../../../src/core/tokens'
import { makeServer, openInbox } from '../../helpers'

type Server = ReturnType<typeof makeServer>

async function createKey(server: Server, token: string, body: Record<string, unknown> = { name: 'laptop' }) {
  const created = await server.call('POST', '/auth/api-keys', { token, body })
  expect(created.status).toBe(200)
  return created.json as { id: string; name: string; prefix: string; key: string; createdAt: string; lastUsedAt: string | null; expiresAt: string | null }
}

const stops: (() => void)[] = []
afterAll(() => stops.forEach((stop) => stop()))

describe('personal API keys', () => {
  test('created once with ≥ 160 bits, listed without the secret, stored hashed', async () => {
    const server = makeServer()
    const { accessToken } = await server.login()
    const created = await createKey(server, accessToken, { name: 'Continue in VS Code' })
    expect(created.key).toMatch(/^uak_[A-Za-z0-9_-]{32}$/)
    expect((created.key.length - 4) * 6).toBeGreaterThanOrEqual(160)
    expect(created).toMatchObject({ name: 'Continue in VS Code', lastUsedAt: null, expiresAt: null })
    expect(created.key.startsWith(created.prefix)).toBe(true)
    expect(created.prefix.length).toBeLessThan(created.key.length / 2)
    const second = await createKey(server, accessToken, { name: 'CI' })
    expect(second.key).not.toBe(created.key)

    const listed = await server.call('GET', '/auth/api-keys', { token: accessToken })
    expect(listed.status).toBe(200)
    expect(listed.json.total).toBe(2)
    expect(listed.json.keys.map((k: any) => k.name)).toEqual(['CI', 'Continue in VS Code'])
    for (const key of listed.json.keys) expect(Object.keys(key).sort()).toEqual(['createdAt', 'expiresAt', 'id', 'lastUsedAt', 'name', 'prefix'])
    expect(listed.text).not.toContain(created.key)
    expect(listed.text).not.toContain(second.key)

    const rows = server.services.db.query<Record<string, unknown>, []>('SELECT * FROM api_keys').all()
    expect(rows).toHaveLength(2)
    expect(JSON.stringify(rows)).not.toContain(created.key)
    expect(rows.map((r) => r.key_hash)).toContain(hashToken(created.key))
  })

  test('a key works as a bearer token on /auth/me and /rag/search, with its owner roles; lastUsedAt is recorded', async () => {
    const server = makeServer()
    const admin = await server.login()
    const user = await server.userSession('reader@example.com')
    const ingest = await server.call('POST', '/rag/ingest', {
      token: user.accessToken,
      body: { collection: 'notes', documents: [{ id: 'tea', content: 'Green tea is steeped at 80 degrees for two minutes.' }] },
    })
    expect(ingest.status).toBe(200)
    const { key, id } = await createKey(server, user.accessToken)

    const me = await server.call('GET', '/auth/me', { token: key })
    expect(me.status).toBe(200)
    expect(me.json).toMatchObject({ id: user.user.id, email: 'reader@example.com', roles: ['user'] })
    expect(me.headers.get('x-ratelimit-limit')).toBe('300')

    const search = await server.call('POST', '/rag/search', { token: key, body: { collection: 'notes', query: 'green tea temperature' } })
    expect(search.status).toBe(200)
    expect(search.json.results[0].id).toBe('tea')

    // Its owner's roles, not more: an admin-only route is 403 for a user's key, 200 for an admin's.
    expect((await server.call('GET', '/auth/users', { token: key })).status).toBe(403)
    const adminKey = await createKey(server, admin.accessToken)
    expect((await server.call('GET', '/auth/users', { token: adminKey.key })).status).toBe(200)

    const listed = await server.call('GET', '/auth/api-keys', { token: user.accessToken })
    const used = listed.json.keys.find((k: any) => k.id === id)
    expect(used.lastUsedAt).toBeString()
    expect(Date.parse(used.lastUsedAt)).toBeGreaterThanOrEqual(Date.parse(used.createdAt))
  })

  test('a revoked key stops working at once; revoking it again is 404', async () => {
    const server = makeServer()
    const { accessToken } = await server.login()
    const { key, id } = await createKey(server, accessToken)
    expect((await server.call('GET', '/auth/me', { token: key })).status).toBe(200)
    const revoked = await server.call('DELETE', `/auth/api-keys/${id}`, { token: accessToken })
    expect(revoked.status).toBe(200)
    expect(revoked.json).toEqual({ success: true, id })
    const refused = await server.call('GET', '/auth/me', { token: key })
    expect(refused.status).toBe(401)
    expect(refused.json.code).toBe('UNAUTHORIZED')
    expect((await server.call('GET', '/auth/api-keys', { token: accessToken })).json.total).toBe(0)
    expect((await server.call('DELETE', `/auth/api-keys/${id}`, { token: accessToken })).status).toBe(404)
  })

  test('an expired key is refused; expiresIn takes seconds or a duration', async () => {
    const server = makeServer()
    const { accessToken } = await server.login()
    const shortLived = await createKey(server, accessToken, { name: 'short', expiresIn: 1 })
    expect(Date.parse(shortLived.expiresAt!) - Date.parse(shortLived.createdAt)).toBe(1000)
    expect((await server.call('GET', '/auth/me', { token: shortLived.key })).status).toBe(200)
    await Bun.sleep(1100)
    const expired = await server.call('GET', '/auth/me', { token: shortLived.key })
    expect(expired.status).toBe(401)
    expect(expired.json.message).toContain('expired')

    const quarter = await createKey(server, accessToken, { name: 'quarter', expiresIn: '90d' })
    expect(Date.parse(quarter.expiresAt!) - Date.parse(quarter.createdAt)).toBe(90 * 86_400_000)
    for (const expiresIn of ['0', '-5', '"90 parsecs"', '99999999999', '1e400', '1.5']) {
      const bad = await server.call('POST', '/auth/api-keys', { token: accessToken, body: `{"name":"x","expiresIn":${expiresIn}}` })
      expect(bad.status).toBe(400)
      expect(bad.json.message).toStartWith('body.expiresIn:')
    }
    const blank = await server.call('POST', '/auth/api-keys', { token: accessToken, body: { name: '   ' } })
    expect(blank.status).toBe(400)
    expect(blank.json.message).toStartWith('body.name:')
  })

  test("another user's key is 404 to everyone else, admins included, and never listed", async () => {
    const server = makeServer()
    const admin = await server.login()
    const alice = await server.userSession('alice@example.com')
    const bob = await server.userSession('bob@example.com')
    const alicesKey = await createKey(server, alice.accessToken)
    for (const token of [bob.accessToken, admin.accessToken]) {
      const stolen = await server.call('DELETE', `/auth/api-keys/${alicesKey.id}`, { token })
      expect(stolen.status).toBe(404)
      expect(stolen.json.code).toBe('NOT_FOUND')
      expect((await server.call('GET', '/auth/api-keys', { token })).json.keys).toEqual([])
    }
    expect((await server.call('GET', '/auth/me', { token: alicesKey.key })).status).toBe(200)
  })

  test("a password change stops the owner's keys; a key cannot log out", async () => {
    const server = makeServer()
    const user = await server.userSession('changer@example.com', 'first-password-1')
    const { key } = await createKey(server, user.accessToken)
    const logout = await server.call('POST', '/auth/logout', { token: key })
    expect(logout.status).toBe(400)
    expect(logout.json.message).toContain('DELETE /auth/api-keys/')
    const changed = await server.call('POST', '/auth/password', {
      token: user.accessToken,
      body: { currentPassword: 'first-password-1', newPassword: 'second-password-2' },
    })
    expect(changed.status).toBe(200)
    expect((await server.call('GET', '/auth/me', { token: key })).status).toBe(401)
    expect((await server.call('GET', '/auth/api-keys', { token: user.accessToken })).json.total).toBe(0)
  })

  test("an admin's password reset, disabling and deleting the owner all stop the owner's keys", async () => {
    const server = makeServer()
    const admin = await server.login()
    const user = await server.userSession('managed@example.com')
    const first = await createKey(server, user.accessToken)
    const reset = await server.call('POST', `/auth/users/${user.user.id}/password`, { token: admin.accessToken, body: { newPassword: 'reset-password-9' } })
    expect(reset.status).toBe(200)
    expect((await server.call('GET', '/auth/me', { token: first.key })).status).toBe(401)

    const again = await server.login('managed@example.com', 'reset-password-9')
    const second = await createKey(server, again.accessToken)
    expect((await server.call('POST', `/auth/users/${user.user.id}/disable`, { token: admin.accessToken })).status).toBe(200)
    const disabled = await server.call('GET', '/auth/me', { token: second.key })
    expect(disabled.status).toBe(401)
    expect(disabled.json.message).toContain('disabled')
    expect((await server.call('POST', `/auth/users/${user.user.id}/enable`, { token: admin.accessToken })).status).toBe(200)
    expect((await server.call('GET', '/auth/me', { token: second.key })).status).toBe(200)

    expect((await server.call('DELETE', `/auth/users/${user.user.id}`, { token: admin.accessToken })).status).toBe(200)
    expect((await server.call('GET', '/auth/me', { token: second.key })).status).toBe(401)
    expect(server.services.db.query('SELECT * FROM api_keys').all()).toEqual([])
  })

  test('requests with a key count towards the same per-user rate limit as tokens', async () => {
    const server = makeServer({ rateLimitMax: 4 })
    const { accessToken } = await server.login()
    const { key } = await createKey(server, accessToken)
    expect((await server.call('GET', '/auth/me', { token: accessToken })).headers.get('x-ratelimit-remaining')).toBe('2')
    expect((await server.call('GET', '/auth/me', { token: key })).headers.get('x-ratelimit-remaining')).toBe('1')
    expect((await server.call('GET', '/auth/me', { token: accessToken })).headers.get('x-ratelimit-remaining')).toBe('0')
    const limited = await server.call('GET', '/auth/me', { token: key })
    expect(limited.status).toBe(429)
    expect(limited.json.code).toBe('RATE_LIMITED')
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
  })

  test('a key authenticates the WebSocket; once revoked, the next message is UNAUTHORIZED', async () => {
    const server = makeServer()
    const { accessToken } = await server.login()
    const { key, id } = await createKey(server, accessToken)
    const app = server.app.listen({ port: 0 })
    stops.push(() => app.stop(true))
    const { socket, next } = await openInbox(app.server!.port!)
    socket.send(JSON.stringify({ type: 'auth', token: key }))
    expect(await next()).toMatchObject({ type: 'auth_success', sessionId: `apikey:${id}` })
    expect((await server.call('DELETE', `/auth/api-keys/${id}`, { token: accessToken })).status).toBe(200)
    socket.send(JSON.stringify({ type: 'stream_chat', message: 'hello' }))
    expect(await next()).toMatchObject({ type: 'error', code: 'UNAUTHORIZED' })
    socket.close()
  })
})
