import { afterAll, describe, expect, test } from 'bun:test'
import { REDIS_SERVER, REDIS_SKIPPED, startRedis, stopRedisServers } from '../../redis'
import { POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../../postgres'
import { twoServers } from '../../two-servers'
import { formOf, makePdf, pagesOf } from './files'
import { slowExtractor } from './slow-extractor'

// The Redis server this file starts is stopped even when its test fails.
afterAll(stopRedisServers)

const skipped = !TEST_DATABASE_URL ? POSTGRES_SKIPPED : !REDIS_SERVER ? REDIS_SKIPPED : ''

describe.skipIf(Boolean(skipped))(`ingestion jobs across replicas with Redis${skipped ? ` (${skipped})` : ''}`, () => {
  test("a job uploaded to one replica runs on the other; the first one's socket gets its ingest_job events, and its cancel stops the work at once", async () => {
    const redis = await startRedis()
    const { a, b, close } = await twoServers({ redisUrl: redis.url, ingestJobAfterMs: 0, rateLimitMax: 100_000 })
    const slow = slowExtractor(30)
    b.services.ingestJobs.extract = slow.extract
    // Replica a takes uploads but runs no job: b, woken through Redis, claims it.
    a.services.ingestJobs.close()
    const listening = a.app.listen({ port: 0, hostname: '127.0.0.1' })
    const ws = new WebSocket(`ws://127.0.0.1:${listening.server!.port}/ws`)
    const opened = new Promise((resolve, reject) => {
      ws.onopen = resolve
      ws.onerror = reject
    })
    try {
      const { accessToken: token } = await a.login()
      const messages: any[] = []
      ws.onmessage = (event) => messages.push(JSON.parse(String(event.data)))
      await opened
      ws.send(JSON.stringify({ type: 'auth', token }))
      const waitFor = async (what: string, ok: () => boolean, ms = 15_000) => {
        const deadline = Date.now() + ms
        while (!ok()) {
          if (Date.now() > deadline) throw new Error(`no ${what}: ${JSON.stringify(messages.slice(-2))}`)
          await Bun.sleep(20)
        }
      }
      await waitFor('auth_success', () => messages.some((m) => m.type === 'auth_success'))
      const form = formOf([['long.pdf', await makePdf(pagesOf(300, 'Long'))]])
      const response = await a.app.handle(new Request('http://localhost/rag/collections/docs/files', { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form }))
      expect(response.status).toBe(202)
      const { jobId } = (await response.json()) as { jobId: string }
      const events = () => messages.filter((m) => m.type === 'ingest_job' && m.data.id === jobId).map((m) => m.data)
      await waitFor('progress from the other replica', () => events().some((job) => job.status === 'running' && job.files[0].pagesDone >= 3))
      expect(a.services.ingestJobs.active).toBe(0)
      expect(b.services.ingestJobs.active).toBe(1)
      // The job as either replica reads it.
      expect((await b.call('GET', `/rag/jobs/${jobId}`, { token })).json.status).toBe('running')

      const cancelled = await a.call('DELETE', `/rag/jobs/${jobId}`, { token })
      expect(cancelled.json.status).toBe('cancelled')
      await waitFor('the cancel reaching b', () => b.services.ingestJobs.active === 0, 3000)
      const read = slow.read.pages
      await Bun.sleep(300)
      expect(slow.read.pages).toBe(read)
      expect(read).toBeLessThan(300)
      await waitFor('the cancelled event', () => events().some((job) => job.status === 'cancelled'))
    } finally {
      ws.close()
      listening.stop(true)
      await close()
    }
  }, 60_000)
})
