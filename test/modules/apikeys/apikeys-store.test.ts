import { afterAll, describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { hashToken } from '../../../src/core/tokens'
import { ApiKeyService } from '../../../src/modules/apikeys/service'
import type { ApiKeyStore } from '../../../src/modules/apikeys/store'
import { PostgresApiKeyStore } from '../../../src/modules/apikeys/store.postgres'
import { SqliteApiKeyStore } from '../../../src/modules/apikeys/store.sqlite'
import type { User } from '../../../src/modules/auth/service'
import { makeServer, openInbox } from '../../helpers'
import { describeBackends, freshPostgres, insertTestUser, POSTGRES_SKIPPED, type TestBackend, TEST_DATABASE_URL } from '../../postgres'

/** The key service of a backend over a set of users the test controls (disabled, deleted). */
function keysOf(backend: TestBackend) {
  const store: ApiKeyStore = backend.kind === 'postgres' ? new PostgresApiKeyStore(backend.sql) : new SqliteApiKeyStore(backend.db)
  const users = new Map<string, User>()
  const user = async (roles: string[] = ['user']) => {
    const id = await insertTestUser(backend, roles)
    users.set(id, { id, email: `${id}@example.com`, roles, mfaEnabled: false, createdAt: new Date().toISOString(), disabled: false })
    return id
  }
  return { service: new ApiKeyService(store, { getUser: (id) => users.get(id) ?? null }), store, users, user }
}

async function code(value: unknown): Promise<string> {
  try {
    await value
    return 'ok'
  } catch (error) {
    return (error as { code?: string }).code ?? String(error)
  }
}

/** Calls `run` and awaits what it gives, so that a synchronous throw counts like a rejection. */
async function outcome(run: () => unknown): Promise<string> {
  try {
    return await code(run())
  } catch (error) {
    return (error as { code?: string }).code ?? String(error)
  }
}

describeBackends('API key store', (backend) => {
  test('a key is stored hashed, listed newest first without its secret, and authenticates as its owner', async () => {
    const { service, store, user } = keysOf(backend())
    const owner = await user(['user', 'admin'])
    const first = await service.create(owner, ' laptop ')
    const second = await service.create(owner, 'CI', '1h')
    expect(first).toMatchObject({ name: 'laptop', lastUsedAt: null, expiresAt: null })
    expect(Date.parse(second.expiresAt!) - Date.parse(second.createdAt)).toBe(3600_000)
    expect((await service.list(owner)).map((key) => key.name)).toEqual(['CI', 'laptop'])
    expect(JSON.stringify(await service.list(owner))).not.toContain(first.key)
    expect((await store.byHash(hashToken(first.key)))?.id).toBe(first.id)
    const principal = await service.authenticate(first.key)
    expect(principal).toMatchObject({ user: { id: owner }, sessionId: `apikey:${first.id}`, isAdmin: true, apiKeyId: first.id })
    // The first use is recorded.
    expect((await service.list(owner)).find((key) => key.id === first.id)!.lastUsedAt).not.toBeNull()
    expect(await service.isLive(`apikey:${first.id}`)).toBe(true)
    expect(await service.list(await user())).toEqual([])
  })

  test('unknown, expired, revoked, a disabled or deleted owner: 401; revoke is 404 for someone else’s key', async () => {
    const { service, store, users, user } = keysOf(backend())
    const owner = await user()
    const other = await user()
    expect(await outcome(() => service.authenticate('uak_nothing-like-this'))).toBe('UNAUTHORIZED')
    const expiring = await service.create(owner, 'short', 1)
    await store.insert({ ...(await store.byId(expiring.id))!, id: randomUUID(), expires_at: new Date(Date.now() - 1000).toISOString() }, hashToken('uak_expired'))
    expect(await outcome(() => service.authenticate('uak_expired'))).toBe('UNAUTHORIZED')

    const key = await service.create(owner, 'main')
    expect(await outcome(() => service.revoke(other, key.id))).toBe('NOT_FOUND')
    expect(await outcome(() => service.authenticate(key.key))).toBe('ok')
    users.set(owner, { ...users.get(owner)!, disabled: true })
    expect(await outcome(() => service.authenticate(key.key))).toBe('UNAUTHORIZED')
    expect(await service.isLive(`apikey:${key.id}`)).toBe(false)
    users.set(owner, { ...users.get(owner)!, disabled: false })
    expect(await service.isLive(`apikey:${key.id}`)).toBe(true)
    users.delete(owner)
    expect(await outcome(() => service.authenticate(key.key))).toBe('UNAUTHORIZED')
    expect(await service.isLive(`apikey:${key.id}`)).toBe(false)
    users.set(owner, { id: owner, email: 'x@example.com', roles: ['user'], mfaEnabled: false, createdAt: '', disabled: false })

    expect((await service.revoke(owner, key.id)).id).toBe(key.id)
    expect(await outcome(() => service.authenticate(key.key))).toBe('UNAUTHORIZED')
    expect(await service.isLive(`apikey:${key.id}`)).toBe(false)
    expect(await outcome(() => service.revoke(owner, key.id))).toBe('NOT_FOUND')
  })

  test('revokeAllForUser deletes one user’s keys and counts them; 100 keys at most', async () => {
    const { service, user } = keysOf(backend())
    const owner = await user()
    const other = await user()
    for (let i = 0; i < 100; i++) await service.create(owner, `k${i}`)
    expect(await outcome(() => service.create(owner, 'one too many'))).toBe('CONFLICT')
    const kept = await service.create(other, 'kept')
    expect(await service.revokeAllForUser(owner)).toBe(100)
    expect(await service.list(owner)).toEqual([])
    expect(await outcome(() => service.authenticate(kept.key))).toBe('ok')
  })
})

describe.skipIf(!TEST_DATABASE_URL)(`API keys over HTTP and WebSocket on PostgreSQL${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  const stops: (() => void)[] = []
  afterAll(() => stops.forEach((stop) => stop()))

  test('a key made over HTTP lives in PostgreSQL, authenticates requests and the WebSocket; a password change ends it', async () => {
    const postgres = await freshPostgres()
    const server = makeServer({ postgres })
    const admin = await server.login()
    const user = await server.userSession('keys@example.com')
    const created = await server.call('POST', '/auth/api-keys', { token: user.accessToken, body: { name: 'laptop' } })
    expect(created.status).toBe(200)
    const { key, id } = created.json
    const rows: { name: string; key_hash: string }[] = await postgres`SELECT name, key_hash FROM api_keys WHERE id = ${id}`
    expect(rows).toEqual([{ name: 'laptop', key_hash: hashToken(key) }])
    expect(server.services.db.query('SELECT count(*) AS n FROM api_keys').get()).toEqual({ n: 0 })

    const me = await server.call('GET', '/auth/me', { token: key })
    expect(me.status).toBe(200)
    expect(me.json.email).toBe('keys@example.com')
    expect((await server.call('GET', '/auth/me', { token: 'uak_not-a-key' })).status).toBe(401)
    expect((await server.call('GET', '/analytics/dashboard', { token: key })).status).toBe(403)
    expect((await server.call('GET', '/auth/api-keys', { token: key })).json).toMatchObject({ total: 1, keys: [{ id, name: 'laptop' }] })

    // The socket: auth and a message sent at once are taken in order.
    const app = server.app.listen({ port: 0 })
    stops.push(() => app.stop(true))
    const { socket, next } = await openInbox(app.server!.port!)
    socket.send(JSON.stringify({ type: 'auth', token: key }))
    socket.send(JSON.stringify({ type: 'stream_chat', message: 'hello', id: 'm1' }))
    expect(await next()).toMatchObject({ type: 'auth_success', sessionId: `apikey:${id}` })
    const replies: any[] = []
    for (let i = 0; i < 200; i++) {
      const reply = await next()
      if (!reply) break
      replies.push(reply)
      if (reply.type === 'chat_response' || reply.type === 'error') break
    }
    expect(replies.at(-1)).toMatchObject({ type: 'chat_response', id: 'm1' })

    const changed = await server.call('POST', '/auth/password', { token: user.accessToken, body: { currentPassword: 'user-password-1', newPassword: 'user-password-2' } })
    expect(changed.status).toBe(200)
    expect((await server.call('GET', '/auth/me', { token: key })).status).toBe(401)
    expect(await postgres`SELECT id FROM api_keys WHERE id = ${id}`).toHaveLength(0)
    socket.send(JSON.stringify({ type: 'stream_chat', message: 'again' }))
    expect(await next()).toMatchObject({ type: 'error', code: 'UNAUTHORIZED' })
    socket.close()

    // A deleted user's keys are gone from PostgreSQL too.
    const again = await server.login('keys@example.com', 'user-password-2')
    const other = (await server.call('POST', '/auth/api-keys', { token: again.accessToken, body: { name: 'second' } })).json
    expect((await server.call('DELETE', `/auth/users/${user.user.id}`, { token: admin.accessToken })).status).toBe(200)
    expect((await server.call('GET', '/auth/me', { token: other.key })).status).toBe(401)
    let left = 1
    for (let i = 0; i < 50 && left; i++) {
      left = (await postgres`SELECT id FROM api_keys WHERE user_id = ${user.user.id}`).length
      if (left) await Bun.sleep(20)
    }
    expect(left).toBe(0)
  })
})
