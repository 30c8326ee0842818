import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ADMIN, makeServer } from '../helpers'
import { freshPostgres, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../postgres'
import { type LdapFixture, startSlapd } from '../sso/providers'

// A real directory: Debian's slapd on a free port, with a service account, users (one whose name
// holds the filter's special characters), and groups of both kinds (member / uniqueMember).
const BASE = 'dc=example,dc=com'
const STAR_DN = `cn=Star *()\\5C User,ou=people,${BASE}`
const DIRECTORY = `
dn: ${BASE}
objectClass: dcObject
objectClass: organization
o: Example
dc: example

dn: ou=people,${BASE}
objectClass: organizationalUnit
ou: people

dn: ou=groups,${BASE}
objectClass: organizationalUnit
ou: groups

dn: cn=uagent,${BASE}
objectClass: organizationalRole
objectClass: simpleSecurityObject
cn: uagent
userPassword: service-password

dn: uid=alice,ou=people,${BASE}
objectClass: inetOrgPerson
uid: alice
cn: Alice Example
sn: Example
mail: alice@example.com
userPassword: alice-password

dn: ${STAR_DN}
objectClass: inetOrgPerson
cn: Star *()\\ User
sn: User
mail: star@example.com
userPassword: star-password

dn: uid=bob,ou=people,${BASE}
objectClass: inetOrgPerson
uid: bob
cn: Bob
sn: Example
mail: bob@example.com
userPassword: bob-password

dn: cn=engineers,ou=groups,${BASE}
objectClass: groupOfNames
cn: engineers
member: uid=alice,ou=people,${BASE}
member: ${STAR_DN}

dn: cn=uagent-admins,ou=groups,${BASE}
objectClass: groupOfUniqueNames
cn: uagent-admins
uniqueMember: cn=placeholder,${BASE}
uniqueMember: uid=alice,ou=people,${BASE}
`

let directory: LdapFixture
beforeAll(async () => {
  directory = await startSlapd(DIRECTORY)
}, 30_000)
afterAll(async () => {
  await directory?.stop()
})

function ldapEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    UAGENT_LDAP_URL: directory.url,
    UAGENT_LDAP_BIND_DN: `cn=uagent,${BASE}`,
    UAGENT_LDAP_BIND_PASSWORD: 'service-password',
    UAGENT_LDAP_USER_BASE: `ou=people,${BASE}`,
    UAGENT_LDAP_GROUP_BASE: `ou=groups,${BASE}`,
    UAGENT_LDAP_ADMIN_GROUPS: 'uagent-admins',
    ...extra,
  }
}

/** An in-memory server using the directory, with views of the stored rows. */
function server(extra: Record<string, string> = {}) {
  const s = makeServer({ env: ldapEnv(extra) })
  const identities = () => s.services.db.query<{ provider: string; subject: string; user_id: string }, []>('SELECT provider, subject, user_id FROM external_identities ORDER BY subject').all()
  /** A user's groups as stored: "name (source)". */
  const groupsOf = (userId: string) =>
    s.services.db
      .query<{ name: string; source: string }, [string]>('SELECT g.name, g.source FROM group_members m JOIN groups g ON g.id = m.group_id WHERE m.user_id = ? ORDER BY g.name')
      .all(userId)
      .map((row) => `${row.name} (${row.source})`)
  const actions = async () => {
    await s.services.audit.flush()
    return s.services.db.query<{ action: string; details: string }, []>('SELECT action, details FROM audit_events ORDER BY id').all()
  }
  return { ...s, identities, groupsOf, actions }
}

const login = (s: ReturnType<typeof server>, email: string, password: string) => s.call('POST', '/auth/login', { body: { email, password } })

describe('LDAP sign-in (slapd)', () => {
  test('GET /auth/providers says LDAP is on and the password form is shown', async () => {
    const s = server()
    const res = await s.call('GET', '/auth/providers')
    expect(res.status).toBe(200)
    expect(res.json).toEqual({ password: true, oidc: null, ldap: true })
  })

  test('a directory user signs in with the directory password: account created, admin from the admin group, groups synced', async () => {
    const s = server()
    const res = await login(s, 'Alice@Example.com', 'alice-password')
    expect(res.status).toBe(200)
    expect(res.json.user.email).toBe('alice@example.com')
    expect(res.json.user.roles).toEqual(['admin'])
    expect(s.identities()).toEqual([{ provider: 'ldap', subject: `uid=alice,ou=people,${BASE}`, user_id: res.json.user.id }])
    expect(s.groupsOf(res.json.user.id)).toEqual(['engineers (ldap)', 'uagent-admins (ldap)'])
    const events = await s.actions()
    expect(events.map((event) => event.action)).toEqual(expect.arrayContaining(['user.created', 'group.created', 'group.member_added', 'auth.login']))
    expect(JSON.stringify(events)).not.toContain('alice-password')
    // The token works, and the account has no local password: the same password through the local path is not what let it in.
    const me = await s.call('GET', '/auth/me', { token: res.json.accessToken })
    expect(me.json.email).toBe('alice@example.com')
    const hash = s.services.db.query<{ password_hash: string }, [string]>('SELECT password_hash FROM users WHERE id = ?').get(res.json.user.id)!.password_hash
    expect(hash.startsWith('$argon2')).toBe(false)
    // Signing in again finds the same account by its DN.
    const again = await login(s, 'alice@example.com', 'alice-password')
    expect(again.json.user.id).toBe(res.json.user.id)
    expect(s.identities()).toHaveLength(1)
  })

  test('a user whose name holds *()\\ signs in, and the groups naming their DN are found', async () => {
    const s = server()
    const res = await login(s, 'star@example.com', 'star-password')
    expect(res.status).toBe(200)
    expect(res.json.user.roles).toEqual(['user'])
    expect(s.identities()[0]!.subject.toLowerCase()).toBe(STAR_DN.toLowerCase())
    expect(s.groupsOf(res.json.user.id)).toEqual(['engineers (ldap)'])
  })

  test('a wrong password is 401 and creates nobody; a filter wildcard in the email matches no one', async () => {
    const s = server()
    const wrong = await login(s, 'bob@example.com', 'not-bobs')
    expect(wrong.status).toBe(401)
    expect(wrong.json.code).toBe('INVALID_CREDENTIALS')
    // Filter characters in the email are escaped (or refused as no email at all): never a match on someone else.
    for (const email of ['*@example.com', 'b*@example.com', 'x)(mail=*)@example.com', 'bob@example.com)(|(mail=*']) {
      const res = await login(s, email, 'bob-password')
      expect({ email, status: res.status }).toEqual({ email, status: res.status === 400 ? 400 : 401 })
    }
    expect(s.identities()).toEqual([])
    expect((await s.call('GET', '/auth/users', { token: (await s.login()).accessToken })).json.total).toBe(1)
  })

  test('group sync follows the directory: a member removed there loses the group at the next sign-in, and admin with it', async () => {
    const s = server()
    const first = await login(s, 'alice@example.com', 'alice-password')
    expect(first.json.user.roles).toEqual(['admin'])
    // A group made here by hand is never touched by the sync.
    const admin = await s.login()
    const local = await s.call('POST', '/groups', { token: admin.accessToken, body: { name: 'hand-made' } })
    expect(local.status).toBe(201)
    expect((await s.call('POST', `/groups/${local.json.id}/members`, { token: admin.accessToken, body: { userId: first.json.user.id } })).status).toBeLessThan(300)
    expect(s.groupsOf(first.json.user.id)).toEqual(['engineers (ldap)', 'hand-made (local)', 'uagent-admins (ldap)'])
    await directory.modify(`dn: cn=uagent-admins,ou=groups,${BASE}\nchangetype: modify\ndelete: uniqueMember\nuniqueMember: uid=alice,ou=people,${BASE}\n`)
    await directory.modify(`dn: cn=engineers,ou=groups,${BASE}\nchangetype: modify\ndelete: member\nmember: uid=alice,ou=people,${BASE}\n`)
    try {
      const second = await login(s, 'alice@example.com', 'alice-password')
      expect(second.status).toBe(200)
      expect(second.json.user.roles).toEqual(['user'])
      expect(s.groupsOf(first.json.user.id)).toEqual(['hand-made (local)'])
      const events = await s.actions()
      expect(events.filter((event) => event.action === 'group.member_removed')).toHaveLength(2)
      expect(events.map((event) => event.action)).toContain('user.roles_changed')
      // The first session's token now carries a user who is no longer an admin.
      expect((await s.call('GET', '/auth/users', { token: first.json.accessToken })).status).toBe(403)
    } finally {
      await directory.modify(`dn: cn=uagent-admins,ou=groups,${BASE}\nchangetype: modify\nadd: uniqueMember\nuniqueMember: uid=alice,ou=people,${BASE}\n`)
      await directory.modify(`dn: cn=engineers,ou=groups,${BASE}\nchangetype: modify\nadd: member\nmember: uid=alice,ou=people,${BASE}\n`)
    }
  })

  test('a user disabled here stays refused, whatever the directory says', async () => {
    const s = server()
    const first = await login(s, 'bob@example.com', 'bob-password')
    const admin = await s.login()
    expect((await s.call('POST', `/auth/users/${first.json.user.id}/disable`, { token: admin.accessToken })).status).toBe(200)
    const again = await login(s, 'bob@example.com', 'bob-password')
    expect(again.status).toBe(403)
    expect(again.json.code).toBe('FORBIDDEN')
  })

  test('the web sign-in works for directory users too', async () => {
    const s = server()
    const res = await s.call('POST', '/auth/web/login', {
      body: { email: 'bob@example.com', password: 'bob-password' },
      headers: { 'x-requested-with': 'uagent-web', origin: 'http://localhost' },
    })
    expect(res.status).toBe(200)
    expect(res.json.user.email).toBe('bob@example.com')
    expect(res.headers.get('set-cookie')).toContain('uagent_refresh=')
  })

  test('UAGENT_LOCAL_LOGIN=off: local passwords are refused except the admin of UAGENT_ADMIN_EMAIL; directory users sign in', async () => {
    const s = server({ UAGENT_LOCAL_LOGIN: 'off' })
    expect((await s.call('GET', '/auth/providers')).json).toEqual({ password: true, oidc: null, ldap: true })
    const admin = await s.login()
    expect((await s.call('POST', '/auth/users', { token: admin.accessToken, body: { email: 'local@example.com', password: 'local-password-1' } })).status).toBe(200)
    const local = await login(s, 'local@example.com', 'local-password-1')
    expect(local.status).toBe(403)
    expect(local.json.message).toContain('single sign-on')
    expect((await login(s, ADMIN.email, ADMIN.password)).status).toBe(200)
    expect((await login(s, 'bob@example.com', 'bob-password')).status).toBe(200)
  })

  test('a directory that is down: 503 for its users, local accounts unaffected', async () => {
    const s = server()
    expect((await login(s, 'bob@example.com', 'bob-password')).status).toBe(200)
    await directory.pause()
    try {
      const down = await login(s, 'bob@example.com', 'bob-password')
      expect(down.status).toBe(503)
      expect(down.json.code).toBe('DIRECTORY_UNAVAILABLE')
      expect(down.json.message).toContain('local accounts still work')
      const unknown = await login(s, 'nobody@example.com', 'whatever-1')
      expect(unknown.status).toBe(503)
      expect((await login(s, ADMIN.email, ADMIN.password)).status).toBe(200)
    } finally {
      await directory.start()
    }
    expect((await login(s, 'bob@example.com', 'bob-password')).status).toBe(200)
    // Each refusal while the directory was down is an auth.login_failed event with its reason, never the password.
    await s.services.audit.flush()
    const failed = s.services.db.query<{ target: string; details: string }, []>("SELECT target, details FROM audit_events WHERE action = 'auth.login_failed' ORDER BY target").all()
    expect(failed.map((e) => [e.target, JSON.parse(e.details)])).toEqual([
      ['bob@example.com', { via: 'password', reason: 'DIRECTORY_UNAVAILABLE' }],
      ['nobody@example.com', { via: 'password', reason: 'DIRECTORY_UNAVAILABLE' }],
    ])
    expect(failed.some((e) => e.details.includes('bob-password') || e.details.includes('whatever-1'))).toBe(false)
  }, 30_000)
})

describe.skipIf(!TEST_DATABASE_URL)(`LDAP sign-in with the accounts in PostgreSQL${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('the identity, the account and its ldap groups are stored in PostgreSQL; a second sign-in finds them', async () => {
    const postgres = await freshPostgres()
    const s = makeServer({ postgres, env: ldapEnv() })
    const first = await s.call('POST', '/auth/login', { body: { email: 'star@example.com', password: 'star-password' } })
    expect(first.status).toBe(200)
    const identities: { provider: string; user_id: string }[] = await postgres`SELECT provider, user_id FROM external_identities`
    expect(identities).toEqual([{ provider: 'ldap', user_id: first.json.user.id }])
    const groups: { name: string; source: string }[] = await postgres`SELECT g.name, g.source FROM group_members m JOIN groups g ON g.id = m.group_id WHERE m.user_id = ${first.json.user.id}`
    expect(groups).toEqual([{ name: 'engineers', source: 'ldap' }])
    const second = await s.call('POST', '/auth/login', { body: { email: 'star@example.com', password: 'star-password' } })
    expect(second.json.user.id).toBe(first.json.user.id)
  })
})
