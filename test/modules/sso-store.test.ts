import { expect, test } from 'bun:test'
import { PostgresSsoStore } from '../../src/modules/sso/store.postgres'
import { SqliteSsoStore } from '../../src/modules/sso/store.sqlite'
import type { SsoStore } from '../../src/modules/sso/store'
import { describeBackends, insertTestUser, type TestBackend } from '../postgres'

const storeOf = (backend: TestBackend): SsoStore => (backend.kind === 'postgres' ? new PostgresSsoStore(backend.sql) : new SqliteSsoStore(backend.db))

describeBackends('single sign-on store', (backend) => {
  test('an identity links a subject to a user; linking again moves it and keeps one row', async () => {
    const store = storeOf(backend())
    const [one, two] = [await insertTestUser(backend()), await insertTestUser(backend())]
    const at = new Date().toISOString()
    await store.linkIdentity({ provider: 'oidc', subject: 'sub-1', user_id: one, issuer: 'https://idp', email: 'a@example.com', created_at: at, last_login_at: at })
    expect(await store.identity('oidc', 'sub-1')).toMatchObject({ user_id: one, email: 'a@example.com' })
    expect(await store.identity('ldap', 'sub-1')).toBeNull()
    await store.linkIdentity({ provider: 'oidc', subject: 'sub-1', user_id: two, issuer: 'https://idp', email: 'b@example.com', created_at: at, last_login_at: at })
    expect(await store.identity('oidc', 'sub-1')).toMatchObject({ user_id: two, email: 'b@example.com', created_at: at })
  })

  test('an OIDC sign-in under way is taken once, and not after it expired', async () => {
    const store = storeOf(backend())
    const now = Date.now()
    await store.insertOidcLogin({ state: 's1', nonce: 'n1', code_verifier: 'v1', return_to: '/app/device', expires_at: now + 60_000 })
    await store.insertOidcLogin({ state: 's2', nonce: 'n2', code_verifier: 'v2', return_to: '/app', expires_at: now - 1 })
    expect(await store.takeOidcLogin('s1', now)).toEqual({ state: 's1', nonce: 'n1', code_verifier: 'v1', return_to: '/app/device', expires_at: now + 60_000 })
    expect(await store.takeOidcLogin('s1', now)).toBeNull()
    expect(await store.takeOidcLogin('s2', now)).toBeNull()
  })

  test('a device code is decided once and used once; polls too close together are refused', async () => {
    const store = storeOf(backend())
    const user = await insertTestUser(backend())
    const now = Date.now()
    await store.insertDeviceCode({ device_code_hash: 'h1', user_code: 'BCDF-GHJK', status: 'pending', user_id: null, client_name: null, interval_seconds: 5, created_at: new Date(now).toISOString(), expires_at: now + 600_000, last_poll_at: 0 })
    expect(await store.notePoll('h1', now, now - 4500)).toBe(true)
    expect(await store.notePoll('h1', now + 1000, now + 1000 - 4500)).toBe(false)
    expect(await store.useDeviceCode('h1', now)).toBeNull()
    expect(await store.decideDeviceCode('BCDF-GHJK', 'approved', user, now)).toBe(true)
    expect(await store.decideDeviceCode('BCDF-GHJK', 'denied', user, now)).toBe(false)
    expect(await store.useDeviceCode('h1', now)).toBe(user)
    expect(await store.useDeviceCode('h1', now)).toBeNull()
    expect(await store.deviceCodeByUserCode('BCDF-GHJK')).toMatchObject({ status: 'used', user_id: user, expires_at: now + 600_000 })
    await store.deleteExpired(now + 700_000)
    expect(await store.deviceCodeByHash('h1')).toBeNull()
  })
})
