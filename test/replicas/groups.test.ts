import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../postgres'
import { REDIS_SERVER, REDIS_SKIPPED, startRedis, stopRedisServers } from '../redis'
import { twoServers } from '../two-servers'

setDefaultTimeout(60_000)

const closers: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const close of closers) await close()
  await stopRedisServers()
})

/** Waits (up to 1 s) until `check` holds; how long it took. */
async function within1s(check: () => Promise<boolean>): Promise<number> {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > 1000) throw new Error('not within 1 s')
    await Bun.sleep(10)
  }
  return Date.now() - started
}

const missing = !TEST_DATABASE_URL ? POSTGRES_SKIPPED : !REDIS_SERVER ? REDIS_SKIPPED : null

describe.skipIf(missing !== null)(`group changes on one replica count on the other within 1 s${missing ? ` (${missing})` : ''}`, () => {
  test('with Redis: B answers from memory, and forgets a member removed (or a group deleted) on A as soon as the event arrives', async () => {
    const redis = await startRedis()
    const { a, b, close } = await twoServers({ redisUrl: redis.url })
    closers.push(close)
    for (const server of [a, b]) await server.services.redis!.start()
    const probes: unknown[] = []
    b.services.bus.subscribe('probe', (event) => probes.push(event))
    for (let i = 0; i < 250 && !probes.length; i++) {
      a.services.bus.publish('probe', { i })
      await Bun.sleep(20)
    }
    expect(b.services.bus.shared).toBe(true)
    const admin = (await a.login()).accessToken
    const ann = await a.userSession('ann@example.com', 'ann-password-1')
    const team = (await a.call('POST', '/groups', { token: admin, body: { name: 'Team' } })).json.id
    const other = (await a.call('POST', '/groups', { token: admin, body: { name: 'Other' } })).json.id
    await a.call('POST', `/groups/${team}/members`, { token: admin, body: { userId: ann.user.id } })
    await a.call('POST', `/groups/${other}/members`, { token: admin, body: { userId: ann.user.id } })
    // B reads ann's groups once: then it answers from memory (the same array, no query).
    await within1s(async () => (await b.services.groups.groupIdsOf(ann.user.id)).length === 2)
    const cached = await b.services.groups.groupIdsOf(ann.user.id)
    expect(b.services.groups.groupIdsOf(ann.user.id)).toBe(cached)

    expect((await a.call('DELETE', `/groups/${team}/members/${ann.user.id}`, { token: admin })).status).toBe(200)
    await within1s(async () => !(await b.services.groups.groupIdsOf(ann.user.id)).includes(team))
    expect((await b.call('GET', '/groups', { token: ann.accessToken })).json.groups.map((g: { name: string }) => g.name)).toEqual(['Other'])
    expect((await b.call('GET', `/groups/${team}`, { token: ann.accessToken })).status).toBe(404)

    expect((await a.call('DELETE', `/groups/${other}`, { token: admin })).status).toBe(200)
    await within1s(async () => (await b.services.groups.groupIdsOf(ann.user.id)).length === 0)

    // And B's own events land in the same audit log A reads.
    await b.call('POST', '/groups', { token: admin, body: { name: 'Made on B' } })
    // (B writes its waiting events within a second.)
    await within1s(async () => (await a.call('GET', '/admin/audit?action=group.created', { token: admin })).json.events.length === 3)
  })

  test('without Redis: every look-up reads PostgreSQL, so a change on A counts on B at once', async () => {
    const { a, b, close } = await twoServers()
    closers.push(close)
    const admin = (await a.login()).accessToken
    const ann = await a.userSession('ann@example.com', 'ann-password-1')
    const team = (await a.call('POST', '/groups', { token: admin, body: { name: 'Team' } })).json.id
    await a.call('POST', `/groups/${team}/members`, { token: admin, body: { email: 'ann@example.com' } })
    expect(await b.services.groups.groupIdsOf(ann.user.id)).toEqual([team])
    await a.call('DELETE', `/groups/${team}/members/${ann.user.id}`, { token: admin })
    expect(await b.services.groups.groupIdsOf(ann.user.id)).toEqual([])
  })
})
