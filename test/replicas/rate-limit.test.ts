import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { RateLimiter } from '../../src/core/rate-limit'
import { RedisLink } from '../../src/db/redis'
import { makeServer } from '../helpers'
import { freePort, REDIS_SERVER, REDIS_SKIPPED, startRedis, type TestRedis, stopRedisServers } from '../redis'

// The Redis servers this file started stop when it ends, whether its tests passed or not.
afterAll(stopRedisServers)

const suite = REDIS_SERVER ? describe : describe.skip
const name = (title: string) => (REDIS_SERVER ? title : `${title} (${REDIS_SKIPPED})`)

suite(name('one rate-limit window shared by replicas through Redis'), () => {
  let redis: TestRedis
  const links: RedisLink[] = []
  const link = async (url: string, log: (line: string) => void = () => {}) => {
    const made = new RedisLink(url, log, 100)
    links.push(made)
    await made.start()
    return made
  }
  beforeAll(async () => {
    redis = await startRedis()
  })
  afterAll(() => {
    for (const made of links) made.close()
  })

  test('80 requests at once over two limiters with a limit of 60: exactly 20 are refused', async () => {
    const linkA = await link(redis.url)
    const a = new RateLimiter(60, 60, linkA)
    const b = new RateLimiter(60, 60, await link(redis.url))
    const key = `user:${crypto.randomUUID()}`
    const outcomes = await Promise.allSettled(Array.from({ length: 80 }, (_, i) => (i % 2 ? a : b).hit(key)))
    const refused = outcomes.filter((outcome) => outcome.status === 'rejected')
    expect(refused).toHaveLength(20)
    expect((refused[0] as PromiseRejectedResult).reason.code).toBe('RATE_LIMITED')
    // The window's counter expires with its window (set by its first count, left by the others).
    const [counter] = (await linkA.client.send('KEYS', [`uagent:rl:${key}:*`])) as string[]
    expect(Number(await linkA.client.send('GET', [counter!]))).toBe(80)
    const ttl = Number(await linkA.client.send('PTTL', [counter!]))
    expect(ttl).toBeGreaterThan(55_000)
    expect(ttl).toBeLessThanOrEqual(61_000)
    // Another key has a window of its own.
    expect((await a.hit(`user:${crypto.randomUUID()}`)).remaining).toBe(59)
  })

  test('two servers on one Redis count anonymous requests in one window: 80 spread over both with a window of 60, 20 get 429', async () => {
    const servers = [0, 1].map(() => makeServer({ redisUrl: redis.url, rateLimitMax: 60, rateLimitWindow: 60 }))
    for (const server of servers) await server.services.redis!.start()
    try {
      // In-process requests have no client address: both servers count them under one key, as they
      // would one client's address behind a proxy. A fresh key for this test: the flush of Redis.
      await servers[0]!.services.redis!.client.send('FLUSHALL', [])
      const answers = await Promise.all(Array.from({ length: 80 }, (_, i) => servers[i % 2]!.call('POST', '/auth/login', { body: {} })))
      const statuses = answers.map((answer) => answer.status)
      expect(statuses.filter((status) => status === 429)).toHaveLength(20)
      expect(statuses.filter((status) => status === 400)).toHaveLength(60)
      const limited = answers.find((answer) => answer.status === 429)!
      expect(limited.json.code).toBe('RATE_LIMITED')
      expect(limited.headers.get('retry-after')).toMatch(/^\d+$/)
      expect(limited.headers.get('x-ratelimit-remaining')).toBe('0')
    } finally {
      for (const server of servers) server.services.redis!.close()
    }
  })

  test('Redis lost: /health is degraded naming UAGENT_REDIS_URL, requests still answer with each replica counting alone, logged once; back: healthy and shared again', async () => {
    const own = await startRedis()
    const lines: string[] = []
    const server = makeServer({ redisUrl: own.url, rateLimitMax: 5, rateLimitWindow: 60 })
    const redisLink = server.services.redis!
    ;(redisLink as unknown as { log: (line: string) => void }).log = (line) => lines.push(line)
    await redisLink.start()
    try {
      const healthy = await server.call('GET', '/health')
      expect(healthy.json.status).toBe('healthy')
      expect(healthy.json.connections.redis).toBe('connected')
      await own.kill()
      // The next count finds Redis gone and falls back at once.
      const during = await server.call('POST', '/auth/login', { body: {} })
      expect(during.status).toBe(400)
      await redisLink.check()
      await Bun.sleep(300)
      const degraded = await server.call('GET', '/health')
      expect(degraded.json.status).toBe('degraded')
      expect(degraded.json.connections.redis).toBe('unreachable')
      expect(degraded.json.reason).toContain('UAGENT_REDIS_URL')
      // Alone, the replica still enforces the limit.
      const alone = await Promise.all(Array.from({ length: 8 }, () => server.call('POST', '/auth/login', { body: {} })))
      expect(alone.filter((answer) => answer.status === 429).length).toBeGreaterThan(0)
      for (const answer of alone) expect([400, 429]).toContain(answer.status)
      expect(lines.filter((line) => line.includes('cannot be reached'))).toHaveLength(1)
      expect(lines[0]).toContain('UAGENT_REDIS_URL')
      await own.restart()
      for (let tries = 0; tries < 50 && !(await redisLink.check()); tries++) await Bun.sleep(100)
      await Bun.sleep(300)
      const back = await server.call('GET', '/health')
      expect(back.json.connections.redis).toBe('connected')
      expect(lines.some((line) => line.includes('answers again'))).toBe(true)
      const shared = await server.call('POST', '/auth/login', { body: {} })
      expect(shared.status).toBe(400)
      expect(Number(await redisLink.client.send('DBSIZE', []))).toBeGreaterThan(0)
    } finally {
      redisLink.close()
    }
  })

  test('Redis unreachable from the start: the server starts degraded and counts alone', async () => {
    const lines: string[] = []
    const lonely = await link(`redis://127.0.0.1:${freePort()}`, (line) => lines.push(line))
    expect(lonely.healthy).toBe(false)
    const limiter = new RateLimiter(2, 60, lonely)
    const key = `user:${crypto.randomUUID()}`
    expect(limiter.hit(key)).not.toBeInstanceOf(Promise)
    limiter.hit(key)
    expect(() => limiter.hit(key)).toThrow(/Rate limit of 2/)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^Redis at UAGENT_REDIS_URL \(redis:\/\/127\.0\.0\.1:\d+\/?\) cannot be reached/)
  })
})
