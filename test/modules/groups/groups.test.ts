import { afterAll, describe, expect, test } from 'bun:test'
import type { Postgres } from '../../../src/db/postgres'
import { makeServer } from '../../helpers'
import { freshPostgres, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../../postgres'

const pools: Postgres[] = []
afterAll(async () => {
  for (const pool of pools) await pool.close()
})

/** The groups routes over HTTP, on SQLite and (with UAGENT_TEST_DATABASE_URL) on PostgreSQL. */
function describeGroupRoutes(kind: 'SQLite' | 'PostgreSQL') {
  const setup = async () => {
    let postgres: Postgres | undefined
    if (kind === 'PostgreSQL') {
      postgres = await freshPostgres()
      pools.push(postgres)
    }
    const server = makeServer(postgres ? { postgres } : {})
    const admin = (await server.login()).accessToken
    const ann = await server.userSession('ann@example.com', 'ann-password-1')
    const bob = await server.userSession('bob@example.com', 'bob-password-1')
    return { ...server, admin, ann, bob }
  }

  const describeIt = kind === 'PostgreSQL' && !TEST_DATABASE_URL ? describe.skip : describe
  describeIt(`groups over HTTP (${kind}${kind === 'PostgreSQL' && !TEST_DATABASE_URL ? `: ${POSTGRES_SKIPPED}` : ''})`, () => {
    test('an admin creates, renames and deletes groups; names are unique (409); others get 403', async () => {
      const { call, admin, ann } = await setup()
      const created = await call('POST', '/groups', { token: admin, body: { name: 'Engineering', description: 'builders' } })
      expect(created.status).toBe(201)
      expect(created.json).toMatchObject({ name: 'Engineering', description: 'builders', members: 0, source: 'local', externalId: null })
      expect(Date.parse(created.json.createdAt)).toBeGreaterThan(0)
      const id = created.json.id
      const dup = await call('POST', '/groups', { token: admin, body: { name: 'Engineering' } })
      expect(dup.status).toBe(409)
      expect(dup.json).toMatchObject({ error: true, code: 'CONFLICT' })
      const bad = await call('POST', '/groups', { token: admin, body: { name: 'x'.repeat(65) } })
      expect(bad.status).toBe(400)
      expect(bad.json.code).toBe('VALIDATION_ERROR')
      expect(bad.json.message).toContain('name')
      expect((await call('POST', '/groups', { token: admin, body: { name: '   ' } })).status).toBe(400)
      expect((await call('POST', '/groups', { token: ann.accessToken, body: { name: 'Mine' } })).status).toBe(403)
      await call('POST', '/groups', { token: admin, body: { name: 'Sales' } })
      expect((await call('PATCH', `/groups/${id}`, { token: admin, body: { name: 'Sales' } })).status).toBe(409)
      const renamed = await call('PATCH', `/groups/${id}`, { token: admin, body: { name: 'Platform' } })
      expect(renamed.status).toBe(200)
      expect(renamed.json).toMatchObject({ id, name: 'Platform', description: 'builders' })
      expect((await call('PATCH', `/groups/${id}`, { token: ann.accessToken, body: { name: 'Nope' } })).status).toBe(403)
      const listed = await call('GET', '/groups', { token: admin })
      expect(listed.json.groups.map((g: { name: string }) => g.name)).toEqual(['Platform', 'Sales'])
      expect(listed.json.total).toBe(2)
      expect((await call('DELETE', `/groups/${id}`, { token: ann.accessToken })).status).toBe(403)
      expect((await call('DELETE', `/groups/${id}`, { token: admin })).json).toEqual({ success: true, id })
      expect((await call('DELETE', `/groups/${id}`, { token: admin })).status).toBe(404)
      expect((await call('GET', `/groups/${id}`, { token: admin })).status).toBe(404)
    })

    test('members: added by id or email, idempotently; a user sees only their groups, 404 for others; removal counts at the next request', async () => {
      const { call, admin, ann, bob } = await setup()
      const team = (await call('POST', '/groups', { token: admin, body: { name: 'Team' } })).json.id
      const other = (await call('POST', '/groups', { token: admin, body: { name: 'Other' } })).json.id
      const added = await call('POST', `/groups/${team}/members`, { token: admin, body: { email: 'ann@example.com' } })
      expect(added.status).toBe(200)
      expect(added.json.members.map((m: { email: string }) => m.email)).toEqual(['ann@example.com'])
      const again = await call('POST', `/groups/${team}/members`, { token: admin, body: { userId: ann.user.id } })
      expect(again.status).toBe(200)
      expect(again.json.memberCount).toBe(1)
      await call('POST', `/groups/${other}/members`, { token: admin, body: { userId: bob.user.id } })
      expect((await call('POST', `/groups/${team}/members`, { token: admin, body: { email: 'nobody@example.com' } })).status).toBe(404)
      const neither = await call('POST', `/groups/${team}/members`, { token: admin, body: {} })
      expect(neither.status).toBe(400)
      expect(neither.json.code).toBe('VALIDATION_ERROR')
      expect((await call('POST', `/groups/${team}/members`, { token: ann.accessToken, body: { userId: bob.user.id } })).status).toBe(403)

      const mine = await call('GET', '/groups', { token: ann.accessToken })
      expect(mine.json.groups.map((g: { id: string }) => g.id)).toEqual([team])
      const detail = await call('GET', `/groups/${team}`, { token: ann.accessToken })
      expect(detail.status).toBe(200)
      expect(detail.json.members).toEqual([{ id: ann.user.id, email: 'ann@example.com', addedAt: expect.any(String) }])
      const hidden = await call('GET', `/groups/${other}`, { token: ann.accessToken })
      expect(hidden.status).toBe(404)
      expect(hidden.text).not.toContain('Other')

      const removed = await call('DELETE', `/groups/${team}/members/${ann.user.id}`, { token: admin })
      expect(removed.status).toBe(200)
      expect(removed.json.members).toEqual([])
      expect((await call('GET', '/groups', { token: ann.accessToken })).json.groups).toEqual([])
      expect((await call('GET', `/groups/${team}`, { token: ann.accessToken })).status).toBe(404)
      expect((await call('DELETE', `/groups/${team}/members/${ann.user.id}`, { token: admin })).status).toBe(200)
      expect((await call('DELETE', `/groups/nope/members/${ann.user.id}`, { token: admin })).status).toBe(404)
    })

    test('groupIdsOf follows every change at once (cached between changes)', async () => {
      const { call, admin, ann, services } = await setup()
      const team = (await call('POST', '/groups', { token: admin, body: { name: 'Team' } })).json.id
      expect(await services.groups.groupIdsOf(ann.user.id)).toEqual([])
      await call('POST', `/groups/${team}/members`, { token: admin, body: { userId: ann.user.id } })
      expect(await services.groups.groupIdsOf(ann.user.id)).toEqual([team])
      // Asked twice: the second answer comes from memory on SQLite (the same array).
      const first = await services.groups.groupIdsOf(ann.user.id)
      if (kind === 'SQLite') expect(services.groups.groupIdsOf(ann.user.id)).toBe(first)
      await call('DELETE', `/groups/${team}`, { token: admin })
      expect(await services.groups.groupIdsOf(ann.user.id)).toEqual([])
      const sync = await services.groups.replaceMemberships(ann.user.id, 'oidc', ['staff'])
      expect(sync.created).toHaveLength(1)
      expect(await services.groups.groupIdsOf(ann.user.id)).toEqual(sync.created)
      const staff = await call('GET', `/groups/${sync.created[0]}`, { token: ann.accessToken })
      expect(staff.json).toMatchObject({ name: 'staff', source: 'oidc', externalId: 'staff' })
    })
  })
}

describeGroupRoutes('SQLite')
describeGroupRoutes('PostgreSQL')
