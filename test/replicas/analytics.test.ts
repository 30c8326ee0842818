import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { openPostgres } from '../../src/db/postgres'
import { ensureFirstAdmin } from '../../src/modules/auth/bootstrap'
import { ADMIN, makeServer, tempDir } from '../helpers'
import { emptyPostgresDatabase, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../postgres'

setDefaultTimeout(60_000)

const suite = TEST_DATABASE_URL ? describe : describe.skip

suite(`analytics of replicas on one PostgreSQL database${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  const stops: (() => Promise<void>)[] = []
  afterAll(async () => {
    for (const stop of stops) await stop()
  })

  /** A replica listening on a port: its own empty data dir, the shared database and JWT key. */
  async function replica(url: string, name: string) {
    const dir = tempDir(`analytics-replica-${name}`)
    const server = makeServer({ database: join(dir, 'uagent.db'), dataDir: dir, postgres: await openPostgres(url), jwtSecret: 'r'.repeat(48), env: { UAGENT_INSTANCE_ID: name } })
    // The first admin is made with a promise on PostgreSQL (makeServer's helpers wait for it; fetch does not).
    await ensureFirstAdmin(server.services.auth, server.services.config, server.services.log)
    const listening = server.app.listen({ port: 0, hostname: '127.0.0.1' })
    const base = `http://127.0.0.1:${listening.server!.port}`
    stops.push(async () => {
      listening.stop(true)
      await server.services.recorder.close()
      await server.services.postgres?.close({ timeout: 1 })
    })
    const call = async (method: string, path: string, token?: string, body?: unknown) => {
      const response = await fetch(`${base}${path}`, {
        method,
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      })
      return { status: response.status, json: (await response.json()) as any }
    }
    const token = (await call('POST', '/auth/login', undefined, ADMIN)).json.accessToken as string
    return { call, token }
  }

  test("requests answered by one replica are counted by the other's dashboard once its recorder flushes (every second), with no call to flush", async () => {
    const { url } = await emptyPostgresDatabase()
    const a = await replica(url, 'a')
    const b = await replica(url, 'b')
    const endpoint = (dashboard: any, name: string) => dashboard.requests.topEndpoints.find((e: any) => e.endpoint === name)?.requests ?? 0
    const before = endpoint((await a.call('GET', '/analytics/dashboard', a.token)).json, 'GET /conversations')
    expect(before).toBe(0)
    for (let i = 0; i < 12; i++) expect((await b.call('GET', '/conversations', b.token)).status).toBe(200)
    expect((await b.call('GET', '/health')).status).toBe(200)
    const sent = performance.now()
    let seen = 0
    let dashboard: any
    while (performance.now() - sent < 5000) {
      dashboard = (await a.call('GET', '/analytics/dashboard', a.token)).json
      seen = endpoint(dashboard, 'GET /conversations')
      if (seen === 12) break
      await Bun.sleep(100)
    }
    // (How soon is a figure for the benchmarks: the flush comes within a second.)
    expect(seen).toBe(12)
    expect(endpoint(dashboard, 'GET /health')).toBe(1)
    // Both logins, B's 13 requests, and A's dashboards so far (each recorded after it answers).
    expect(dashboard.overview.totalRequests).toBeGreaterThanOrEqual(2 + 13 + 1)
    // The export of either replica holds the same records.
    const fromA = (await a.call('GET', '/analytics/export?timeRange=1h', a.token)).json
    const fromB = (await b.call('GET', '/analytics/export?timeRange=1h', b.token)).json
    expect(fromA.filter((row: any) => row.route === '/conversations')).toHaveLength(12)
    expect(fromB.filter((row: any) => row.route === '/conversations')).toHaveLength(12)
  })
})
