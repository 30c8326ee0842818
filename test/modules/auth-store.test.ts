import { describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { TokenSigner } from '../../src/core/tokens'
import { AuthService } from '../../src/modules/auth/service'
import type { AuthStore } from '../../src/modules/auth/store'
import { PostgresAuthStore } from '../../src/modules/auth/store.postgres'
import { SqliteAuthStore } from '../../src/modules/auth/store.sqlite'
import { describeBackends, freshPostgres, POSTGRES_SKIPPED, type TestBackend, TEST_DATABASE_URL } from '../postgres'

const storeOf = (backend: TestBackend): AuthStore => (backend.kind === 'postgres' ? new PostgresAuthStore(backend.sql) : new SqliteAuthStore(backend.db))

/** A user row of a fresh email; returns its id. */
async function newUser(store: AuthStore, roles: string[] = ['user'], createdAt = new Date().toISOString()): Promise<string> {
  const id = randomUUID()
  expect(await store.insertUser({ id, email: `${id}@example.com`, password_hash: 'hash', roles: JSON.stringify(roles), created_at: createdAt })).toBe(true)
  return id
}

async function newSession(store: AuthStore, userId: string): Promise<string> {
  const id = randomUUID()
  await store.insertSession({ id, userId, at: new Date().toISOString(), userAgent: 'test' })
  return id
}

describeBackends('account store', (backend) => {
  test('a user is stored once per email (two inserts at once: one row); read by id, email and ids; listed oldest first', async () => {
    const store = storeOf(backend())
    const before = await store.countUsers()
    const email = `${randomUUID()}@example.com`
    const inserts = await Promise.all(
      [0, 1, 2].map(() => store.insertUser({ id: randomUUID(), email, password_hash: 'h', roles: '["admin"]', created_at: '2020-01-01T00:00:00.000Z' })),
    )
    expect(inserts.filter(Boolean)).toHaveLength(1)
    expect(await store.countUsers()).toBe(before + 1)
    const row = (await store.userByEmail(email))!
    expect(row).toMatchObject({ email, password_hash: 'h', roles: '["admin"]', mfa_enabled: 0, mfa_secret: null, mfa_pending_secret: null, mfa_last_step: 0, disabled_at: null })
    expect(await store.userById(row.id)).toEqual(row)
    expect(await store.userById(randomUUID())).toBeNull()
    expect(await store.userByEmail('nobody@example.com')).toBeNull()
    const later = await newUser(store, ['user'], '2020-01-02T00:00:00.000Z')
    expect((await store.usersByIds([later, randomUUID(), row.id])).map((user) => user.id).sort()).toEqual([later, row.id].sort())
    const listed = (await store.listUsers(100, 0)).map((user) => user.id)
    expect(listed.indexOf(row.id)).toBeLessThan(listed.indexOf(later))
    expect(await store.listUsers(1, listed.indexOf(later))).toMatchObject([{ id: later }])
  })

  test('sessions: live until revoked, one at a time or all of a user; the owner row comes with a live one', async () => {
    const store = storeOf(backend())
    const owner = await newUser(store)
    const [a, b, c] = [await newSession(store, owner), await newSession(store, owner), await newSession(store, owner)]
    expect(await store.liveSessionUser(a)).toBe(owner)
    expect((await store.liveSessionOwner(a))?.id).toBe(owner)
    await store.revokeSession(a, new Date().toISOString())
    expect(await store.liveSessionUser(a)).toBeNull()
    expect(await store.liveSessionOwner(a)).toBeNull()
    expect(await store.revokeAllSessions(owner, new Date().toISOString())).toBe(2)
    expect([await store.liveSessionUser(b), await store.liveSessionUser(c)]).toEqual([null, null])
    expect(await store.liveSessionUser(randomUUID())).toBeNull()
  })

  test('a refresh token is used once: a second use (even at the same moment) is refused', async () => {
    const store = storeOf(backend())
    const session = await newSession(store, await newUser(store))
    await store.insertRefreshToken('hash-1', session, new Date().toISOString())
    expect(await store.refreshToken('hash-1')).toEqual({ session_id: session, used_at: null })
    const uses = await Promise.all([0, 1, 2].map(() => store.useRefreshToken('hash-1', session, new Date().toISOString())))
    expect(uses.filter(Boolean)).toHaveLength(1)
    expect((await store.refreshToken('hash-1'))!.used_at).not.toBeNull()
    expect(await store.refreshToken('unknown')).toBeNull()
  })

  test('a password change revokes every session but the kept one, or all of them and the login failures', async () => {
    const store = storeOf(backend())
    const owner = await newUser(store)
    const email = (await store.userById(owner))!.email
    const [kept, other] = [await newSession(store, owner), await newSession(store, owner)]
    expect(await store.setPassword(owner, 'new-hash', { at: new Date().toISOString(), keepSessionId: kept })).toBe(1)
    expect((await store.userById(owner))!.password_hash).toBe('new-hash')
    expect([await store.liveSessionUser(kept), await store.liveSessionUser(other)]).toEqual([owner, null])
    await store.recordFailure(email, Date.now(), 0)
    expect(await store.setPassword(owner, 'newer-hash', { at: new Date().toISOString(), clearFailures: email })).toBe(1)
    expect(await store.liveSessionUser(kept)).toBeNull()
    expect(await store.recentFailures(email, 0, 5)).toEqual([])
  })

  test('disabling keeps the first time, revokes every session; enabling clears it; the last enabled admin is counted', async () => {
    const store = storeOf(backend())
    const admin = await newUser(store, ['user', 'admin'])
    const before = await store.otherEnabledAdmins(admin)
    const second = await newUser(store, ['admin'])
    expect(await store.otherEnabledAdmins(admin)).toBe(before + 1)
    await newSession(store, second)
    expect(await store.disableUser(second, '2020-01-01T00:00:00.000Z')).toBe(1)
    expect(await store.disableUser(second, '2021-01-01T00:00:00.000Z')).toBe(0)
    expect((await store.userById(second))!.disabled_at).toBe('2020-01-01T00:00:00.000Z')
    expect(await store.otherEnabledAdmins(admin)).toBe(before)
    await store.enableUser(second)
    expect((await store.userById(second))!.disabled_at).toBeNull()
  })

  test('MFA: a pending secret becomes the secret; each TOTP step is accepted once, in order; disable clears it', async () => {
    const store = storeOf(backend())
    const id = await newUser(store)
    await store.setMfaPending(id, 'PENDING')
    await store.enableMfa(id)
    expect(await store.userById(id)).toMatchObject({ mfa_enabled: 1, mfa_secret: 'PENDING', mfa_pending_secret: null })
    const steps = await Promise.all([0, 1].map(() => store.consumeTotpStep(id, 59_000_000)))
    expect(steps.filter(Boolean)).toHaveLength(1)
    expect(await store.consumeTotpStep(id, 58_999_999)).toBe(false)
    expect(await store.consumeTotpStep(id, 59_000_001)).toBe(true)
    await store.setMfaPending(id, 'NEXT')
    await store.disableMfa(id, false)
    expect(await store.userById(id)).toMatchObject({ mfa_enabled: 0, mfa_secret: null, mfa_pending_secret: 'NEXT', mfa_last_step: 0 })
    await store.disableMfa(id, true)
    expect((await store.userById(id))!.mfa_pending_secret).toBeNull()
  })

  test('login failures: newest first within the window, at most the limit; old ones forgotten; cleared per email', async () => {
    const store = storeOf(backend())
    const email = `${randomUUID()}@example.com`
    const now = Date.now()
    for (const ago of [50_000, 40_000, 30_000, 20_000, 10_000]) await store.recordFailure(email, now - ago, now - 45_000)
    // The one at 50 s ago is at or before 45 s ago: forgotten by the later records.
    expect(await store.recentFailures(email, 0, 10)).toEqual([now - 10_000, now - 20_000, now - 30_000, now - 40_000])
    expect(await store.recentFailures(email, now - 25_000, 10)).toEqual([now - 10_000, now - 20_000])
    expect(await store.recentFailures(email, 0, 2)).toEqual([now - 10_000, now - 20_000])
    expect(await store.clearFailures(email)).toBe(4)
    expect(await store.recentFailures(email, 0, 10)).toEqual([])
  })

  test('deleting a user deletes their sessions and refresh tokens', async () => {
    const store = storeOf(backend())
    const id = await newUser(store)
    const session = await newSession(store, id)
    await store.insertRefreshToken(`hash-${id}`, session, new Date().toISOString())
    await store.deleteUser(id)
    expect(await store.userById(id)).toBeNull()
    expect(await store.liveSessionUser(session)).toBeNull()
    expect(await store.refreshToken(`hash-${id}`)).toBeNull()
  })
})

describeBackends('account service', (backend) => {
  const signer = new TokenSigner('a-test-key-of-more-than-32-characters!')

  test('a revoked session, a disabled user and a password change are refused by this process at once', async () => {
    const auth = new AuthService(storeOf(backend()), signer)
    const user = await auth.createUser(`${randomUUID()}@example.com`, 'first-password-1', ['user'])
    const admin = await auth.createUser(`${randomUUID()}@example.com`, 'admin-password-1', ['admin'])
    const first = await auth.login(user.email, 'first-password-1', null)
    expect((await auth.authenticate(first.accessToken)).user.id).toBe(user.id)
    // Cached now: the next check must still see the revocation.
    await auth.revokeSession(first.sessionId)
    expect(await failure(() => auth.authenticate(first.accessToken))).toBe('UNAUTHORIZED')
    expect(await auth.isSessionLive(first.sessionId)).toBe(false)

    const second = await auth.login(user.email, 'first-password-1', null)
    const third = await auth.login(user.email, 'first-password-1', null)
    await auth.authenticate(second.accessToken)
    await auth.authenticate(third.accessToken)
    expect(await auth.changePassword(user.id, second.sessionId, 'first-password-1', 'second-password-2')).toBe(1)
    expect((await auth.authenticate(second.accessToken)).user.id).toBe(user.id)
    expect(await failure(() => auth.authenticate(third.accessToken))).toBe('UNAUTHORIZED')

    expect((await auth.disable(user.id)).sessionsRevoked).toBe(1)
    expect(await failure(() => auth.authenticate(second.accessToken))).toBe('UNAUTHORIZED')
    expect((await auth.getUser(user.id))?.disabled).toBe(true)
    expect(await failure(() => auth.login(user.email, 'second-password-2', null))).toBe('FORBIDDEN')
    expect((await auth.enable(user.id)).disabled).toBe(false)
    expect((await auth.login(user.email, 'second-password-2', null)).user.id).toBe(user.id)
    expect(await failure(() => auth.deleteUser(admin.id))).toBe('CONFLICT')
    expect((await auth.deleteUser(user.id)).id).toBe(user.id)
    expect(await auth.getUser(user.id)).toBeNull()
  })
})

/** The error code a call ends with (thrown at once or rejected), or 'ok'. */
async function failure(run: () => unknown): Promise<string> {
  try {
    await run()
    return 'ok'
  } catch (error) {
    return (error as { code?: string }).code ?? String(error)
  }
}

describe.skipIf(!TEST_DATABASE_URL)(`two servers on one PostgreSQL database${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  /** Milliseconds until `run` fails with UNAUTHORIZED, polling every 20 ms for at most 3 s. */
  async function refusedAfter(run: () => unknown): Promise<number> {
    const start = performance.now()
    while (performance.now() - start < 3000) {
      if ((await failure(run)) === 'UNAUTHORIZED') return performance.now() - start
      await Bun.sleep(20)
    }
    return Infinity
  }

  test('a logout, a password change or a disabled account on one is refused by the other within 1 s', async () => {
    const sql = await freshPostgres()
    const signer = new TokenSigner('a-key-both-servers-share-of-32-characters')
    const a = new AuthService(new PostgresAuthStore(sql), signer)
    const b = new AuthService(new PostgresAuthStore(sql), signer)
    await a.createUser('admin@example.com', 'admin-password-1', ['admin'])
    const user = await a.createUser('pat@example.com', 'first-password-1', ['user'])

    const session = await a.login(user.email, 'first-password-1', null)
    // B has checked the session (and trusts it for a while) before A revokes it.
    expect((await b.authenticate(session.accessToken)).user.email).toBe('pat@example.com')
    await a.revokeSession(session.sessionId)
    expect(await failure(() => a.authenticate(session.accessToken))).toBe('UNAUTHORIZED')
    expect(await refusedAfter(() => b.authenticate(session.accessToken))).toBeLessThan(1000)

    const kept = await a.login(user.email, 'first-password-1', null)
    const other = await b.login(user.email, 'first-password-1', null)
    await b.authenticate(other.accessToken)
    await a.changePassword(user.id, kept.sessionId, 'first-password-1', 'second-password-2')
    expect(await refusedAfter(() => b.authenticate(other.accessToken))).toBeLessThan(1000)
    expect((await b.authenticate(kept.accessToken)).user.id).toBe(user.id)

    expect((await b.getUser(user.id))?.disabled).toBe(false)
    await a.disable(user.id)
    expect(await refusedAfter(() => b.authenticate(kept.accessToken))).toBeLessThan(1000)
    const start = performance.now()
    while ((await b.getUser(user.id))?.disabled !== true && performance.now() - start < 3000) await Bun.sleep(20)
    expect(performance.now() - start).toBeLessThan(1000)
    await sql.close()
  })
})
