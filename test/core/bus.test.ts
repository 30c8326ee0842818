import { afterAll, describe, expect, test } from 'bun:test'
import { LocalBus, RedisBus } from '../../src/core/bus'
import { RedisLink } from '../../src/db/redis'
import { freePort, REDIS_SERVER, REDIS_SKIPPED, startRedis, stopRedisServers } from '../redis'

// The Redis servers this file started stop when it ends, whether its tests passed or not.
afterAll(stopRedisServers)

const until = async (check: () => boolean, ms = 3000) => {
  const deadline = Date.now() + ms
  while (!check() && Date.now() < deadline) await Bun.sleep(10)
  return check()
}

describe('LocalBus', () => {
  test('delivers to the subscribers of the topic only, at once; a throwing handler is logged and the others still run; unsubscribe stops it', () => {
    const lines: string[] = []
    const bus = new LocalBus((line) => lines.push(line))
    const seen: unknown[] = []
    bus.subscribe('a', () => {
      throw new Error('handler broke')
    })
    const stop = bus.subscribe('a', (event) => seen.push(event))
    bus.subscribe('b', (event) => seen.push(['b', event]))
    bus.publish('a', { n: 1 })
    expect(seen).toEqual([{ n: 1 }])
    expect(lines.join('\n')).toContain('handler broke')
    stop()
    bus.publish('a', { n: 2 })
    bus.publish('nobody', { n: 3 })
    expect(seen).toEqual([{ n: 1 }])
    expect(bus.shared).toBe(false)
  })
})

describe.skipIf(!REDIS_SERVER)(`RedisBus${REDIS_SERVER ? '' : ` (${REDIS_SKIPPED})`}`, () => {
  test('an event published on one bus reaches the other bus once, and its own subscribers once (not again through Redis)', async () => {
    const redis = await startRedis()
    const links = [new RedisLink(redis.url, () => {}), new RedisLink(redis.url, () => {})]
    await Promise.all(links.map((link) => link.start()))
    const [one, two] = links.map((link) => new RedisBus(link, () => {}))
    const topic = `test-${crypto.randomUUID()}`
    const atOne: unknown[] = []
    const atTwo: unknown[] = []
    one!.subscribe(topic, (event) => atOne.push(event))
    two!.subscribe(topic, (event) => atTwo.push(event))
    await Bun.sleep(200)
    expect(one!.shared).toBe(true)
    one!.publish(topic, { task: 'x', progress: 50 })
    expect(atOne).toEqual([{ task: 'x', progress: 50 }])
    expect(await until(() => atTwo.length > 0)).toBe(true)
    await Bun.sleep(200)
    expect(atTwo).toEqual([{ task: 'x', progress: 50 }])
    expect(atOne).toHaveLength(1)
    for (const bus of [one, two]) bus!.close()
    for (const link of links) link.close()
  })
})

describe.skipIf(!REDIS_SERVER)(`RedisBus when Redis is lost and comes back${REDIS_SERVER ? '' : ` (${REDIS_SKIPPED})`}`, () => {
  test('while Redis is down events stay on their replica and nothing throws; once it answers again they cross again', async () => {
    const redis = await startRedis()
    const links = [new RedisLink(redis.url, () => {}, 200), new RedisLink(redis.url, () => {}, 200)]
    await Promise.all(links.map((link) => link.start()))
    const [one, two] = links.map((link) => new RedisBus(link, () => {}))
    const topic = `test-${crypto.randomUUID()}`
    const atTwo: unknown[] = []
    const atOne: unknown[] = []
    one!.subscribe(topic, (event) => atOne.push(event))
    two!.subscribe(topic, (event) => atTwo.push(event))
    await Bun.sleep(200)
    await redis.kill()
    expect(await until(() => !one!.shared, 5000)).toBe(true)
    expect(() => one!.publish(topic, { n: 1 })).not.toThrow()
    expect(atOne).toEqual([{ n: 1 }])
    await redis.restart()
    expect(await until(() => one!.shared && two!.shared, 10_000)).toBe(true)
    // Resubscribed by the link's next ping.
    let n = 2
    const crossed = await until(() => {
      one!.publish(topic, { n: n++ })
      return atTwo.length > 0
    }, 10_000)
    expect(crossed).toBe(true)
    expect(atTwo.every((event) => (event as { n: number }).n >= 2)).toBe(true)
    for (const bus of [one, two]) bus!.close()
    for (const link of links) link.close()
  }, 30_000)
})

describe('RedisBus with Redis down', () => {
  test('publishing still reaches this process, never throws, and the bus says it is not shared', async () => {
    const lines: string[] = []
    const link = new RedisLink(`redis://127.0.0.1:${freePort()}`, (line) => lines.push(line))
    expect(await link.start()).toBe(false)
    const bus = new RedisBus(link, (line) => lines.push(line))
    const seen: unknown[] = []
    bus.subscribe('agents', (event) => seen.push(event))
    expect(() => bus.publish('agents', { kind: 'queued' })).not.toThrow()
    expect(seen).toEqual([{ kind: 'queued' }])
    expect(bus.shared).toBe(false)
    await Bun.sleep(100)
    bus.close()
    link.close()
  })
})
