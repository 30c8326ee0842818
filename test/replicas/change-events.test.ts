import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../postgres'
import { REDIS_SERVER, REDIS_SKIPPED, startRedis, stopRedisServers } from '../redis'
import { twoServers } from '../two-servers'

// The Redis servers this file started stop when it ends, whether its tests passed or not.
afterAll(stopRedisServers)

setDefaultTimeout(60_000)

const missing = !TEST_DATABASE_URL ? POSTGRES_SKIPPED : !REDIS_SERVER ? REDIS_SKIPPED : null

describe.skipIf(missing !== null)(`replicas tell each other what changed through Redis${missing ? ` (${missing})` : ''}`, () => {
  const closers: (() => Promise<void>)[] = []
  afterAll(async () => {
    for (const close of closers) await close()
  })

  test('a logout on A is refused by B as soon as the event arrives, inside the time B would otherwise trust its cache', async () => {
    const redis = await startRedis()
    const { a, b, close } = await twoServers({ redisUrl: redis.url })
    closers.push(close)
    for (const server of [a, b]) await server.services.redis!.start()
    // The event reaching B, seen from outside the server.
    const arrived: unknown[] = []
    b.services.bus.subscribe('accounts', (event) => arrived.push(event))
    // Events cross between the two (B's subscriber connection is up) before the test starts.
    const probes: unknown[] = []
    b.services.bus.subscribe('probe', (event) => probes.push(event))
    for (let i = 0; i < 250 && !probes.length; i++) {
      a.services.bus.publish('probe', { i })
      await Bun.sleep(20)
    }
    expect(probes.length).toBeGreaterThan(0)
    const session = await a.login()
    // B reads the session now: for LIVE_CHECK_MS (500 ms) it would trust it without asking PostgreSQL.
    expect((await b.call('GET', '/auth/me', { token: session.accessToken })).status).toBe(200)
    expect((await a.call('POST', '/auth/logout', { token: session.accessToken })).status).toBeLessThan(300)
    for (let i = 0; i < 1000 && !arrived.length; i++) await Bun.sleep(5)
    expect(arrived).toHaveLength(1)
    expect(arrived[0]).toMatchObject({ sessionId: session.sessionId })
    expect((await b.call('GET', '/auth/me', { token: session.accessToken })).status).toBe(401)
  })
})
