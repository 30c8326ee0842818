import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { SQL } from 'bun'
import corpus from '../../fixtures/rag-corpus.json'
import { startServices } from '../../../src/app'
import { openPostgres } from '../../../src/db/postgres'
import { PostgresRagStore } from '../../../src/modules/rag/store/postgres'
import { ADMIN, makeServer, serverOf, tempDir } from '../../helpers'
import { liveServer } from '../../cli/live-server'
import { emptyPostgresDatabase, freshPgvectorPostgres, freshPostgres, PGVECTOR_SKIPPED, POSTGRES_SKIPPED, TEST_DATABASE_URL, TEST_PGVECTOR_TEMPLATE } from '../../postgres'

setDefaultTimeout(120_000)

const QUERIES = ['WireGuard VPN configuration', 'reset a forgotten password', 'expense report receipts', 'printer on the third floor']

/** A server as `bun run start` makes it on PostgreSQL (startServices: pgvector looked for, the line logged), with makeServer's helpers. */
async function startedOn(postgres: InstanceType<typeof SQL>) {
  const lines: string[] = []
  const services = await startServices({ database: ':memory:', adminEmail: ADMIN.email, adminPassword: ADMIN.password, env: {}, log: (line) => lines.push(line), postgres })
  return { ...serverOf(services), lines }
}

describe.skipIf(!TEST_PGVECTOR_TEMPLATE)(`RAG over HTTP with pgvector${TEST_PGVECTOR_TEMPLATE ? '' : ` (${PGVECTOR_SKIPPED})`}`, () => {
  test('the server says pgvector serves (start line, /health, /system/info); ingest, search and delete agree with a server on the in-memory path; another user gets 404', async () => {
    const { sql } = await freshPgvectorPostgres()
    const server = await startedOn(sql)
    const memory = await startedOn(await freshPostgres())
    expect(server.lines.some((line) => line.startsWith('RAG vector search: pgvector in PostgreSQL (pgvector 0.8'))).toBe(true)
    expect(memory.lines.some((line) => line.startsWith("RAG vector search: in this server's memory ("))).toBe(true)
    expect((await server.call('GET', '/health')).json.connections).toMatchObject({ postgres: 'connected', vectorSearch: 'pgvector' })
    expect((await memory.call('GET', '/health')).json.connections).toMatchObject({ postgres: 'connected', vectorSearch: 'in-memory' })
    const admin = await server.login()
    const info = await server.call('GET', '/system/info', { token: admin.accessToken })
    expect(info.json.vectorSearch).toMatchObject({ path: 'pgvector', reason: expect.stringContaining('pgvector 0.8'), cacheBytes: 0 })
    const memoryAdmin = await memory.login()
    const memoryInfo = await memory.call('GET', '/system/info', { token: memoryAdmin.accessToken })
    expect(memoryInfo.json.vectorSearch).toMatchObject({ path: 'in-memory', reason: expect.stringContaining('may not create the extension') })

    const bob = await server.userSession('bob@example.com')
    const memoryBob = await memory.userSession('bob@example.com')
    for (const [side, token] of [
      [server, bob.accessToken],
      [memory, memoryBob.accessToken],
    ] as const) {
      expect((await side.call('POST', '/rag/ingest', { token, body: { collection: 'kb', documents: corpus.documents } })).status).toBe(200)
    }
    for (const query of QUERIES) {
      const [a, b] = await Promise.all([
        server.call('POST', '/rag/search', { token: bob.accessToken, body: { collection: 'kb', query, limit: 5 } }),
        memory.call('POST', '/rag/search', { token: memoryBob.accessToken, body: { collection: 'kb', query, limit: 5 } }),
      ])
      expect(a.status).toBe(200)
      expect(a.json.results.map((r: { id: string }) => r.id)).toEqual(b.json.results.map((r: { id: string }) => r.id))
      a.json.results.forEach((result: { score: number }, i: number) => expect(result.score).toBeCloseTo(b.json.results[i].score, 4))
    }
    // The vectors are in PostgreSQL's vector column, none in this server's memory.
    expect((await sql`SELECT count(vec)::int AS n FROM rag_vectors`)[0].n).toBeGreaterThanOrEqual(corpus.documents.length)
    expect((server.services.rag.store as PostgresRagStore).cache.usedBytes).toBe(0)
    // Isolation: another user's search of bob's collection is a 404, and lists none of it.
    const eve = await server.userSession('eve@example.com')
    expect((await server.call('POST', '/rag/search', { token: eve.accessToken, body: { collection: 'kb', query: 'VPN' } })).status).toBe(404)
    expect((await server.call('GET', '/rag/collections', { token: eve.accessToken })).json.collections).toEqual([])
    // Delete a document, then the collection.
    expect((await server.call('DELETE', '/rag/collections/kb/documents/vpn-setup', { token: bob.accessToken })).status).toBe(200)
    const after = await server.call('POST', '/rag/search', { token: bob.accessToken, body: { collection: 'kb', query: 'WireGuard VPN configuration', limit: 10 } })
    expect(after.json.results.map((r: { id: string }) => r.id)).not.toContain('vpn-setup')
    expect((await server.call('DELETE', '/rag/collections/kb', { token: bob.accessToken })).status).toBe(200)
    expect((await sql`SELECT count(*)::int AS n FROM rag_vectors`)[0].n).toBe(0)
    // Prometheus: the vector memory of this server's path (none: the vectors are searched in the database).
    const metrics = await server.app.handle(new Request('http://localhost/metrics', { headers: { authorization: `Bearer ${admin.accessToken}` } }))
    expect(await metrics.text()).toMatch(/uagent_vector_cache_bytes\{[^}]*state="used"[^}]*\} 0/)
  })

  test('two servers on one database: each finds what the other ingested and loses what it deleted, with no copy of the vectors', async () => {
    const { sql, url } = await freshPgvectorPostgres()
    const a = await startedOn(sql)
    const b = await startedOn(new SQL(url, { max: 5, idleTimeout: 2 }))
    const bob = await a.userSession('bob@example.com')
    const tokenB = (await b.login('bob@example.com', 'user-password-1')).accessToken
    expect((await a.call('POST', '/rag/ingest', { token: bob.accessToken, body: { collection: 'kb', documents: corpus.documents } })).status).toBe(200)
    const found = await b.call('POST', '/rag/search', { token: tokenB, body: { collection: 'kb', query: 'WireGuard VPN configuration', limit: 3 } })
    expect(found.json.results[0].id).toBe('vpn-setup')
    expect((await b.call('DELETE', '/rag/collections/kb/documents/vpn-setup', { token: tokenB })).status).toBe(200)
    await Bun.sleep(150)
    const gone = await a.call('POST', '/rag/search', { token: bob.accessToken, body: { collection: 'kb', query: 'WireGuard VPN configuration', limit: 10 } })
    expect(gone.json.results.map((r: { id: string }) => r.id)).not.toContain('vpn-setup')
    for (const side of [a, b]) expect((side.services.rag.store as PostgresRagStore).vectorMemoryBytes()).toBe(0)
  })
})

describe.skipIf(!TEST_PGVECTOR_TEMPLATE)(`uagent admin migrate-to-postgres into a database with pgvector${TEST_PGVECTOR_TEMPLATE ? '' : ` (${PGVECTOR_SKIPPED})`}`, () => {
  const { run } = liveServer()
  test('the copied vectors land in the vector column, and a server searches them as the SQLite server did', async () => {
    const dataDir = tempDir('uagent-pgvector-migrate-')
    const before = makeServer({ dataDir, database: undefined })
    const bob = await before.userSession('bob@example.com')
    expect((await before.call('POST', '/rag/ingest', { token: bob.accessToken, body: { collection: 'kb', documents: corpus.documents } })).status).toBe(200)
    const expected = await Promise.all(QUERIES.map((query) => before.call('POST', '/rag/search', { token: bob.accessToken, body: { collection: 'kb', query, limit: 5 } })))
    await before.services.recorder.close()
    await before.services.audit.close()
    before.services.analyticsDb.close()
    before.services.db.close()

    const database = await emptyPostgresDatabase(TEST_PGVECTOR_TEMPLATE)
    const migrated = await run(['--json', 'admin', 'migrate-to-postgres', '--data-dir', dataDir, '--database-url', database.url], {}, { url: null })
    expect(migrated.code).toBe(0)
    const report = JSON.parse(migrated.stdout)
    expect(report.vectorSearch).toMatchObject({ path: 'pgvector', indexed: 0 })
    const sql = await openPostgres(database.url)
    database.track(sql)
    const [vectors] = await sql`SELECT count(*)::int AS n, count(vec)::int AS vec, count(embedding)::int AS bytes FROM rag_vectors`
    expect(vectors).toEqual({ n: report.rag.vectors, vec: report.rag.vectors, bytes: 0 })
    expect(vectors.n).toBeGreaterThanOrEqual(corpus.documents.length)
    const after = await startedOn(sql)
    const token = (await after.login('bob@example.com', 'user-password-1')).accessToken
    for (const [i, query] of QUERIES.entries()) {
      const search = await after.call('POST', '/rag/search', { token, body: { collection: 'kb', query, limit: 5 } })
      expect(search.json.results.map((r: { id: string }) => r.id)).toEqual(expected[i]!.json.results.map((r: { id: string }) => r.id))
    }
  })
})

describe.skipIf(!TEST_DATABASE_URL)(`RAG over HTTP on PostgreSQL without pgvector${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('a database where the role may not create the extension keeps the in-memory path, and says why', async () => {
    const server = await startedOn(await freshPostgres())
    const health = (await server.call('GET', '/health')).json
    expect(health.connections.vectorSearch).toBe('in-memory')
    expect(health.status).toBe('healthy')
    const store = server.services.rag.store as PostgresRagStore
    expect(store.vectorSearch()).toMatchObject({ path: 'in-memory' })
    expect(store.pgvector).toBeNull()
  })
})
