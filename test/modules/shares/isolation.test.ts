import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { shutdown } from '../../../src/shutdown'
import { makeServer } from '../../helpers'
import { freshPostgres, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../../postgres'
import { REDIS_SERVER, REDIS_SKIPPED, startRedis, stopRedisServers } from '../../redis'
import { twoServers } from '../../two-servers'
import { leaks, misses, probeAll, QUESTION, shareHandbook, type ProbeResult } from './probes'

setDefaultTimeout(240_000)

const stops: (() => Promise<void> | void)[] = []
afterAll(async () => {
  for (const stop of stops.splice(0)) await stop()
  await stopRedisServers()
})

/** Bob (staff, viewer) through every surface by each reference, Carol (no group) too: the leaks and the misses. */
async function probeTeam(server: Parameters<typeof probeAll>[0], made: Awaited<ReturnType<typeof shareHandbook>>) {
  const found: { bob: ProbeResult[]; carol: ProbeResult[] } = { bob: [], carol: [] }
  for (const ref of ['handbook', made.id, 'alice@example.com/handbook']) {
    found.bob.push(...(await probeAll(server, made.bob.accessToken, ref, made.target)))
    found.carol.push(...(await probeAll(server, made.carol.accessToken, ref, made.target)))
  }
  return found
}

describe.skipIf(!TEST_DATABASE_URL)(`shares on PostgreSQL${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('0 leaks in 51 probes by an outsider; every probe answered for the group member; removing the member stops the next request', async () => {
    const postgres = await freshPostgres()
    const server = makeServer({ postgres })
    stops.push(() => shutdown(server.app, server.services, 1000))
    const made = await shareHandbook(server)
    const { bob, carol } = await probeTeam(server, made)
    expect(carol).toHaveLength(51)
    expect(leaks(carol)).toEqual([])
    expect(misses(bob)).toEqual([])
    expect((await server.call('DELETE', `/groups/${made.group.id}/members/${made.bob.user.id}`, { token: made.admin })).status).toBe(200)
    const after = await server.call('POST', '/rag/search', { token: made.bob.accessToken, body: { collection: 'handbook', query: QUESTION } })
    expect(after.status).toBe(404)
    expect(leaks(await probeAll(server, made.bob.accessToken, made.id, made.target))).toEqual([])
  })
})

const replicasSkipped = !TEST_DATABASE_URL ? POSTGRES_SKIPPED : !REDIS_SERVER ? REDIS_SKIPPED : null
describe.skipIf(replicasSkipped !== null)(`shares across two replicas${replicasSkipped ? ` (${replicasSkipped})` : ''}`, () => {
  test('shared on one replica, read on the other; 0 leaks there; a member, a share and a group removed on one stop the next request on the other', async () => {
    const redis = await startRedis()
    // Stopped by this file, whatever happens: the servers first, then their Redis.
    stops.push(() => redis.stop())
    const { a, b, close } = await twoServers({ redisUrl: redis.url })
    stops.unshift(close)
    for (const server of [a, b]) await server.services.redis!.start()
    const made = await shareHandbook(a)
    const { bob, carol } = await probeTeam(b, made)
    expect(carol).toHaveLength(51)
    expect(leaks(carol)).toEqual([])
    expect(misses(bob)).toEqual([])
    const search = () => b.call('POST', '/rag/search', { token: made.bob.accessToken, body: { collection: 'handbook', query: QUESTION } })
    // Each removal on A: B's very next request is refused (well within the contract's 1 s).
    expect((await a.call('DELETE', `/groups/${made.group.id}/members/${made.bob.user.id}`, { token: made.admin })).status).toBe(200)
    expect((await search()).status).toBe(404)
    await a.call('POST', `/groups/${made.group.id}/members`, { token: made.admin, body: { userId: made.bob.user.id } })
    expect((await search()).status).toBe(200)
    await a.call('PUT', '/rag/collections/handbook/access', { token: made.alice.accessToken, body: { shares: [] } })
    expect((await search()).status).toBe(404)
    await a.call('PUT', '/rag/collections/handbook/access', { token: made.alice.accessToken, body: { shares: [{ type: 'group', groupId: made.group.id, role: 'viewer' }] } })
    expect((await search()).status).toBe(200)
    expect((await a.call('DELETE', `/groups/${made.group.id}`, { token: made.admin })).status).toBe(200)
    expect((await search()).status).toBe(404)
    expect(leaks(await probeAll(b, made.bob.accessToken, made.id, made.target))).toEqual([])
  })
})
