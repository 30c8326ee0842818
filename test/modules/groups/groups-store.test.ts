import { expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import type { GroupStore } from '../../../src/modules/groups/store'
import { PostgresGroupStore } from '../../../src/modules/groups/store.postgres'
import { SqliteGroupStore } from '../../../src/modules/groups/store.sqlite'
import { deleteTestUser, describeBackends, insertTestUser, type TestBackend } from '../../postgres'

const storeOf = (backend: TestBackend): GroupStore => (backend.kind === 'postgres' ? new PostgresGroupStore(backend.sql) : new SqliteGroupStore(backend.db))
const now = () => new Date().toISOString()

async function makeGroup(store: GroupStore, name: string) {
  const id = randomUUID()
  const at = now()
  expect(await store.insert({ id, name, description: '', source: 'local', external_id: null, created_at: at, updated_at: at })).toBe(true)
  return id
}

describeBackends('Group store', (backend) => {
  test('groups are unique by name; members are added once, listed by email, and looked up by user', async () => {
    const store = storeOf(backend())
    const suffix = randomUUID().slice(0, 8)
    const team = await makeGroup(store, `team-${suffix}`)
    const at = now()
    expect(await store.insert({ id: randomUUID(), name: `team-${suffix}`, description: '', source: 'local', external_id: null, created_at: at, updated_at: at })).toBe(false)
    const alice = await insertTestUser(backend())
    const bob = await insertTestUser(backend())
    expect(await store.addMember(team, alice, now())).toBe(true)
    expect(await store.addMember(team, alice, now())).toBe(false)
    expect(await store.addMember(team, bob, now())).toBe(true)
    expect((await store.get(team))!.members).toBe(2)
    expect((await store.members(team)).map((m) => m.id).sort()).toEqual([alice, bob].sort())
    expect(await store.groupIdsOf(alice)).toEqual([team])
    expect((await store.listOf(bob)).map((g) => g.id)).toEqual([team])
    expect(await store.removeMember(team, bob)).toBe(true)
    expect(await store.removeMember(team, bob)).toBe(false)
    expect(await store.groupIdsOf(bob)).toEqual([])
    // A deleted user's memberships go with them.
    await deleteTestUser(backend(), alice)
    expect((await store.get(team))!.members).toBe(0)
  })

  test('rename: taken names are refused, unknown groups are missing; delete returns the members it had', async () => {
    const store = storeOf(backend())
    const suffix = randomUUID().slice(0, 8)
    const a = await makeGroup(store, `a-${suffix}`)
    await makeGroup(store, `b-${suffix}`)
    expect(await store.update(a, { name: `b-${suffix}` }, now())).toBe('taken')
    expect(await store.update(a, { name: `c-${suffix}`, description: 'the c team' }, now())).toBe('updated')
    expect(await store.get(a)).toMatchObject({ name: `c-${suffix}`, description: 'the c team', source: 'local' })
    expect(await store.update(randomUUID(), { name: 'x' }, now())).toBe('missing')
    const user = await insertTestUser(backend())
    await store.addMember(a, user, now())
    expect(await store.remove(a)).toEqual([user])
    expect(await store.remove(a)).toBeNull()
    expect(await store.groupIdsOf(user)).toEqual([])
  })

  test('replaceMemberships creates missing provider groups, follows the provider, and never touches local groups', async () => {
    const store = storeOf(backend())
    const suffix = randomUUID().slice(0, 8)
    const local = await makeGroup(store, `eng-${suffix}`)
    const user = await insertTestUser(backend())
    await store.addMember(local, user, now())
    const first = await store.replaceMemberships(user, 'oidc', [`eng-${suffix}`, `ops-${suffix}`, `ops-${suffix}`], now())
    expect(first.created.map((g) => g.name).sort()).toEqual([`eng-${suffix} (oidc)`, `ops-${suffix}`])
    expect(first.joined).toHaveLength(2)
    expect((await store.groupIdsOf(user)).sort()).toEqual([local, ...first.joined].sort())
    // Same claim again: nothing changes.
    expect(await store.replaceMemberships(user, 'oidc', [`eng-${suffix}`, `ops-${suffix}`], now())).toEqual({ created: [], joined: [], left: [] })
    // The provider dropped ops: the user leaves it; the local group stays.
    const ops = first.created.find((g) => g.name === `ops-${suffix}`)!.id
    const second = await store.replaceMemberships(user, 'oidc', [`eng-${suffix}`], now())
    expect(second).toEqual({ created: [], joined: [], left: [ops] })
    expect(await store.groupIdsOf(user)).toContain(local)
    expect(await store.groupIdsOf(user)).not.toContain(ops)
    expect(await store.get(ops)).toMatchObject({ source: 'oidc', external_id: `ops-${suffix}` })
    const third = await store.replaceMemberships(user, 'oidc', [], now())
    expect(third.left).toHaveLength(1)
    expect(await store.groupIdsOf(user)).toEqual([local])
  })
})
