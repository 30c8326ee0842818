import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeServer } from '../helpers'
import { freshPostgres, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../postgres'
import { type OidcAccount, type OidcFixture, signInAtProvider, startOidcProvider } from '../sso/providers'

// A real OpenID Connect provider (panva's oidc-provider under Node) on a free port. The server
// under test is reached in-process at PUBLIC (its UAGENT_PUBLIC_URL): the provider only ever
// redirects the "browser" (this test) there.
const PUBLIC = 'http://uagent.test'
const CALLBACK = `${PUBLIC}/auth/oidc/callback`
const ACCOUNTS: Record<string, OidcAccount> = {
  ann: { email: 'ann@example.com', email_verified: true, name: 'Ann', groups: ['staff', 'uagent-admins'] },
  ben: { email: 'ben@example.com', email_verified: true, name: 'Ben', groups: ['staff'] },
  una: { email: 'una@example.com', email_verified: false, name: 'Una', groups: [] },
  nomail: { name: 'No Mail', groups: [] },
}

let provider: OidcFixture
beforeAll(async () => {
  provider = await startOidcProvider([CALLBACK], ACCOUNTS)
}, 30_000)
afterAll(async () => {
  await provider?.stop()
})

function server(extra: Record<string, string> = {}, idp: OidcFixture = provider) {
  const logged: string[] = []
  const s = makeServer({
    log: (line) => void logged.push(line),
    env: {
      UAGENT_PUBLIC_URL: PUBLIC,
      UAGENT_OIDC_ISSUER: idp.issuer,
      UAGENT_OIDC_CLIENT_ID: idp.clientId,
      UAGENT_OIDC_CLIENT_SECRET: idp.clientSecret,
      UAGENT_OIDC_NAME: 'Test IdP',
      UAGENT_OIDC_ADMIN_GROUPS: 'uagent-admins',
      ...extra,
    },
  })
  /** A GET as a browser at PUBLIC would send it, with its cookies. */
  const get = (url: string, cookies: Record<string, string> = {}) =>
    s.app.handle(new Request(url.startsWith('http') ? url : `${PUBLIC}${url}`, { headers: { cookie: Object.entries(cookies).map(([k, v]) => `${k}=${v}`).join('; '), host: 'uagent.test' } }))
  const users = () => s.services.db.query<{ email: string; roles: string }, []>('SELECT email, roles FROM users ORDER BY created_at, email').all()
  const sessions = () => s.services.db.query<{ n: number }, []>('SELECT count(*) AS n FROM sessions').get()!.n
  const groupsOf = (email: string) =>
    s.services.db
      .query<{ name: string; source: string }, [string]>('SELECT g.name, g.source FROM group_members m JOIN groups g ON g.id = m.group_id JOIN users u ON u.id = m.user_id WHERE u.email = ? ORDER BY g.name')
      .all(email)
      .map((row) => `${row.name} (${row.source})`)
  /** Starts a sign-in: the provider URL and the state cookie the browser got. */
  const start = async (query = '') => {
    const res = await get(`/auth/oidc/login${query}`)
    expect(res.status).toBe(302)
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('uagent_oidc_state='))!
    expect(cookie).toContain('HttpOnly')
    return { location: res.headers.get('location')!, state: /uagent_oidc_state=([^;]*)/.exec(cookie)![1]! }
  }
  /** A whole sign-in as `login`: the callback's answer, and the callback URL (for replays). */
  const signIn = async (login: string) => {
    const { location, state } = await start()
    const callback = await signInAtProvider(location, login, CALLBACK)
    return { res: await get(callback, { uagent_oidc_state: state }), callback, state }
  }
  const errorOf = (res: Response) => {
    expect(res.status).toBe(302)
    const location = new URL(res.headers.get('location')!, PUBLIC)
    expect(location.pathname).toBe('/app')
    return location.searchParams.get('sso_error')
  }
  return { ...s, get, users, sessions, groupsOf, start, signIn, errorOf, logged }
}

describe('OpenID Connect sign-in (oidc-provider)', () => {
  test('GET /auth/providers offers the provider by name', async () => {
    const s = server()
    expect((await s.call('GET', '/auth/providers')).json).toEqual({ password: true, oidc: { name: 'Test IdP', loginUrl: '/auth/oidc/login' }, ldap: false })
  })

  test('login redirects to the provider with PKCE S256, state and nonce', async () => {
    const s = server()
    const { location, state } = await s.start()
    const url = new URL(location)
    expect(url.origin).toBe(provider.issuer)
    expect(url.searchParams.get('code_challenge_method')).toBe('S256')
    expect(url.searchParams.get('code_challenge')).toMatch(/^[\w-]{43}$/)
    expect(url.searchParams.get('state')).toBe(state)
    expect(url.searchParams.get('nonce')).toBeTruthy()
    expect(url.searchParams.get('redirect_uri')).toBe(CALLBACK)
    // Where to land afterwards is a page of the web app, nothing else.
    expect((await s.get('/auth/oidc/login?returnTo=/app/device?code=BKMT-QWXR')).status).toBe(302)
    for (const returnTo of ['https://evil.example/', '//evil.example/app', '/apparently', '/auth/web/logout']) {
      const refused = await s.get(`/auth/oidc/login?returnTo=${encodeURIComponent(returnTo)}`)
      expect({ returnTo, status: refused.status }).toEqual({ returnTo, status: 400 })
    }
  })

  test('a sign-in creates the user (admin from the admin group), syncs oidc groups and signs the browser in as /auth/web/login does', async () => {
    const s = server()
    const { res } = await s.signIn('ann')
    expect(res.status).toBe(302)
    expect(res.headers.get('location')).toBe('/app')
    const cookies = res.headers.getSetCookie()
    const refresh = cookies.find((c) => c.startsWith('uagent_refresh='))!
    expect(refresh).toContain('HttpOnly')
    expect(refresh).toContain('SameSite=Strict')
    expect(cookies.some((c) => c.startsWith('uagent_oidc_state=;') && c.includes('Max-Age=0'))).toBe(true)
    expect(s.users()).toContainEqual({ email: 'ann@example.com', roles: '["admin"]' })
    expect(s.groupsOf('ann@example.com')).toEqual(['staff (oidc)', 'uagent-admins (oidc)'])
    // The cookie is a web session: the page gets an access token from it.
    const session = await s.app.handle(
      new Request(`${PUBLIC}/auth/web/refresh`, { method: 'POST', headers: { cookie: refresh.split(';')[0]!, 'x-requested-with': 'uagent-web', origin: PUBLIC, host: 'uagent.test' } }),
    )
    expect(session.status).toBe(200)
    const body = (await session.json()) as { user: { email: string; roles: string[] } }
    expect(body.user).toMatchObject({ email: 'ann@example.com', roles: ['admin'] })
    await s.services.audit.flush()
    const login = s.services.db.query<{ details: string }, []>("SELECT details FROM audit_events WHERE action = 'auth.login'").get()!
    expect(JSON.parse(login.details)).toMatchObject({ via: 'oidc', issuer: provider.issuer })
  })

  test('the groups claim is followed at each sign-in: memberships added and removed, admin with them', async () => {
    const s = server()
    await s.signIn('ben')
    expect(s.groupsOf('ben@example.com')).toEqual(['staff (oidc)'])
    expect(s.users()).toContainEqual({ email: 'ben@example.com', roles: '["user"]' })
    provider.setAccounts({ ...ACCOUNTS, ben: { ...ACCOUNTS.ben, groups: ['research', 'uagent-admins'] } })
    try {
      await s.signIn('ben')
      expect(s.groupsOf('ben@example.com')).toEqual(['research (oidc)', 'uagent-admins (oidc)'])
      expect(s.users()).toContainEqual({ email: 'ben@example.com', roles: '["admin"]' })
    } finally {
      provider.setAccounts(ACCOUNTS)
    }
    await s.signIn('ben')
    expect(s.groupsOf('ben@example.com')).toEqual(['staff (oidc)'])
    expect(s.users()).toContainEqual({ email: 'ben@example.com', roles: '["user"]' })
  })

  test('a replayed callback is refused and signs nobody in again', async () => {
    const s = server()
    const { res, callback, state } = await s.signIn('ben')
    expect(res.headers.get('location')).toBe('/app')
    const [users, sessions] = [s.users().length, s.sessions()]
    const replay = await s.get(callback, { uagent_oidc_state: state })
    expect(s.errorOf(replay)).toContain('already used')
    expect(replay.headers.getSetCookie().some((c) => c.startsWith('uagent_refresh='))).toBe(false)
    expect([s.users().length, s.sessions()]).toEqual([users, sessions])
  })

  test('a forged callback (made-up code, or a state this browser never got) creates nobody and is no 500', async () => {
    const s = server()
    const before = s.users().length
    // A state that exists, in the browser that holds it, with a code the provider never issued.
    const { state } = await s.start()
    const forged = await s.get(`/auth/oidc/callback?code=forged-code&state=${state}&iss=${encodeURIComponent(provider.issuer)}`, { uagent_oidc_state: state })
    expect(s.errorOf(forged)).toContain("provider's answer was refused")
    // Someone else's callback URL opened in a browser that did not start that sign-in (login CSRF).
    const theirs = await s.start()
    const callback = await signInAtProvider(theirs.location, 'ann', CALLBACK)
    const foreign = await s.get(callback)
    expect(s.errorOf(foreign)).toContain('not started in this browser')
    const wrongState = await s.get(callback, { uagent_oidc_state: 'someone-elses-state' })
    expect(s.errorOf(wrongState)).toContain('not started in this browser')
    // No code at all, and a provider error, read as messages too.
    expect(s.errorOf(await s.get('/auth/oidc/callback'))).toContain('no code or state')
    expect(s.errorOf(await s.get('/auth/oidc/callback?error=access_denied&error_description=The+user+said+no'))).toBe('The provider refused the sign-in: The user said no')
    expect(s.users().length).toBe(before)
  })

  test('a wrong nonce in the ID token is refused (nobody created)', async () => {
    const s = server()
    const before = s.users().length
    const { location, state } = await s.start()
    // What this server expects differs from what the provider put into the ID token.
    s.services.db.run('UPDATE oidc_logins SET nonce = ? WHERE state = ?', ['a-different-nonce', state])
    const callback = await signInAtProvider(location, 'ben', CALLBACK)
    const res = await s.get(callback, { uagent_oidc_state: state })
    expect(s.errorOf(res)).toContain('nonce')
    expect(s.users().length).toBe(before)
  })

  test('first sign-in links an existing account by verified email; an unverified email is not linked; no email: a message', async () => {
    const s = server()
    const admin = await s.login()
    for (const email of ['ben@example.com', 'una@example.com']) {
      expect((await s.call('POST', '/auth/users', { token: admin.accessToken, body: { email, password: 'local-password-1' } })).status).toBe(200)
    }
    const linked = await s.signIn('ben')
    expect(linked.res.headers.get('location')).toBe('/app')
    expect(s.services.db.query<{ n: number }, []>("SELECT count(*) AS n FROM external_identities WHERE provider = 'oidc' AND subject = 'ben'").get()!.n).toBe(1)
    expect(s.users().filter((user) => user.email === 'ben@example.com')).toHaveLength(1)
    expect(s.errorOf((await s.signIn('una')).res)).toContain('does not say that email is verified')
    expect(s.errorOf((await s.signIn('nomail')).res)).toContain('did not send an email')
  })

  test('a user disabled here stays refused, whatever the provider says', async () => {
    const s = server()
    await s.signIn('ben')
    const admin = await s.login()
    const ben = s.services.db.query<{ id: string }, []>("SELECT id FROM users WHERE email = 'ben@example.com'").get()!
    expect((await s.call('POST', `/auth/users/${ben.id}/disable`, { token: admin.accessToken })).status).toBe(200)
    const sessions = s.sessions()
    expect(s.errorOf((await s.signIn('ben')).res)).toContain('disabled')
    expect(s.sessions()).toBe(sessions)
    await s.services.audit.flush()
    const failed = s.services.db.query<{ details: string }, []>("SELECT details FROM audit_events WHERE action = 'auth.login_failed'").get()!
    expect(JSON.parse(failed.details)).toMatchObject({ via: 'oidc', reason: 'FORBIDDEN' })
  })

  test('UAGENT_LOCAL_LOGIN=off: no password form, OIDC users sign in, the break-glass admin still can', async () => {
    const s = server({ UAGENT_LOCAL_LOGIN: 'off' })
    expect((await s.call('GET', '/auth/providers')).json).toMatchObject({ password: false, ldap: false })
    expect((await s.signIn('ben')).res.headers.get('location')).toBe('/app')
    expect((await s.call('POST', '/auth/login', { body: { email: 'admin@example.com', password: 'admin-password-1' } })).status).toBe(200)
  })

  test('a failure of the server itself mid-sign-in: back to /app with the request id, logged, no 500', async () => {
    const s = server()
    const { location, state } = await s.start()
    const callback = await signInAtProvider(location, 'ben', CALLBACK)
    s.services.db.run('DROP TABLE external_identities')
    const res = await s.get(callback, { uagent_oidc_state: state })
    const message = s.errorOf(res)!
    const requestId = /request ([\w-]+)/.exec(message)![1]!
    expect(message).toContain('failed on the server')
    expect(res.headers.get('x-request-id')).toBe(requestId)
    expect(s.logged.some((line) => line.includes(requestId) && line.includes('external_identities'))).toBe(true)
  })

  test('a provider that cannot be reached: back to /app with a readable message', async () => {
    const s = server({ UAGENT_OIDC_ISSUER: 'http://127.0.0.1:9' })
    const res = await s.get('/auth/oidc/login')
    expect(s.errorOf(res)).toContain('could not be reached')
  })
})

describe.skipIf(!TEST_DATABASE_URL)(`OpenID Connect across replicas${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('a sign-in started on one server finishes on another (state, nonce and verifier in PostgreSQL), once', async () => {
    const postgres = await freshPostgres()
    const env = { UAGENT_PUBLIC_URL: PUBLIC, UAGENT_OIDC_ISSUER: provider.issuer, UAGENT_OIDC_CLIENT_ID: provider.clientId, UAGENT_OIDC_CLIENT_SECRET: provider.clientSecret }
    const [one, two] = [makeServer({ postgres, env }), makeServer({ postgres, env })]
    const get = (s: typeof one, url: string, cookie = '') => s.app.handle(new Request(url.startsWith('http') ? url : `${PUBLIC}${url}`, { headers: { cookie, host: 'uagent.test' } }))
    const started = await get(one, '/auth/oidc/login')
    const state = /uagent_oidc_state=([^;]*)/.exec(started.headers.getSetCookie().join('\n'))![1]!
    const callback = await signInAtProvider(started.headers.get('location')!, 'ann', CALLBACK)
    const finished = await get(two, callback, `uagent_oidc_state=${state}`)
    expect([finished.status, finished.headers.get('location')]).toEqual([302, '/app'])
    const rows: { email: string }[] = await postgres`SELECT u.email FROM external_identities i JOIN users u ON u.id = i.user_id WHERE i.provider = 'oidc'`
    expect(rows).toEqual([{ email: 'ann@example.com' }])
    const replay = await get(one, callback, `uagent_oidc_state=${state}`)
    expect(new URL(replay.headers.get('location')!, PUBLIC).searchParams.get('sso_error')).toContain('already used')
  })
})

describe('a provider that releases groups only for the groups scope (Dex, Okta, oidc-provider)', () => {
  let scoped: OidcFixture
  beforeAll(async () => {
    scoped = await startOidcProvider([CALLBACK], ACCOUNTS, { groupsScope: true })
  }, 30_000)
  afterAll(async () => {
    await scoped?.stop()
  })

  test('the sign-in asks for groups because discovery lists it: synced groups made, the admin group makes an admin', async () => {
    const s = server({}, scoped)
    const { location } = await s.start()
    expect(new URL(location).searchParams.get('scope')!.split(' ').sort()).toEqual(['email', 'groups', 'openid', 'profile'])
    expect((await s.signIn('ann')).res.headers.get('location')).toBe('/app')
    expect(s.users()).toContainEqual({ email: 'ann@example.com', roles: '["admin"]' })
    expect(s.groupsOf('ann@example.com')).toEqual(['staff (oidc)', 'uagent-admins (oidc)'])
    expect(s.logged.filter((line) => line.includes('UAGENT_OIDC_ADMIN_GROUPS'))).toEqual([])
  })

  test('a provider that does not list groups is not asked for it', async () => {
    const { location } = await server().start()
    expect(new URL(location).searchParams.get('scope')!.split(' ').sort()).toEqual(['email', 'openid', 'profile'])
  })

  test('UAGENT_OIDC_SCOPES sets the scopes; without groups the claim is missing and each such sign-in logs it once, without secrets', async () => {
    const s = server({ UAGENT_OIDC_SCOPES: 'openid,email profile' }, scoped)
    const { location } = await s.start()
    expect(new URL(location).searchParams.get('scope')).toBe('openid email profile')
    await s.signIn('ann')
    expect(s.users()).toContainEqual({ email: 'ann@example.com', roles: '["user"]' })
    expect(s.groupsOf('ann@example.com')).toEqual([])
    const warnings = () => s.logged.filter((line) => line.includes('UAGENT_OIDC_ADMIN_GROUPS'))
    expect(warnings()).toHaveLength(1)
    expect(warnings()[0]).toContain('"groups"')
    expect(warnings()[0]).toContain('UAGENT_OIDC_SCOPES')
    expect(warnings()[0]).not.toContain(scoped.clientSecret)
    expect(warnings()[0]).not.toMatch(/eyJ[\w-]+\./)
    await s.signIn('ben')
    expect(warnings()).toHaveLength(2)
    // Scopes that include groups by hand work as discovery's do.
    const byHand = server({ UAGENT_OIDC_SCOPES: 'openid email profile groups' }, scoped)
    await byHand.signIn('ann')
    expect(byHand.users()).toContainEqual({ email: 'ann@example.com', roles: '["admin"]' })
  })

  test('without admin groups configured, a missing groups claim is nothing to log', async () => {
    const s = server({ UAGENT_OIDC_SCOPES: 'openid email profile', UAGENT_OIDC_ADMIN_GROUPS: '' }, scoped)
    await s.signIn('ben')
    expect(s.users()).toContainEqual({ email: 'ben@example.com', roles: '["user"]' })
    expect(s.logged.filter((line) => line.includes('groups'))).toEqual([])
  })
})
