import { SQL } from 'bun'
import { Database } from 'bun:sqlite'
import { afterAll, describe, expect, test } from 'bun:test'
import { loadConfig, ConfigError, DEFAULT_DATABASE_POOL } from '../../src/config'
import { countingQueries, measuredPostgres, PoolSlots, poolSize } from '../../src/db/postgres-pool'
import { ExtractiveGenerator } from '../../src/ml/builtin/extractive-generator'
import { HashEmbedder } from '../../src/ml/builtin/hash-embedder'
import { RagService } from '../../src/modules/rag/service'
import type { RagStore } from '../../src/modules/rag/store'
import { PostgresRagStore } from '../../src/modules/rag/store/postgres'
import { shutdown } from '../../src/shutdown'
import { ADMIN, makeServer } from '../helpers'
import { emptyPostgresDatabase, freshPostgres, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../postgres'

describe('UAGENT_DATABASE_POOL', () => {
  test(`defaults to ${DEFAULT_DATABASE_POOL}; a whole number from 1 to 1000, anything else a configuration error`, () => {
    expect(loadConfig({}).databasePool).toBe(DEFAULT_DATABASE_POOL)
    expect(loadConfig({ UAGENT_DATABASE_POOL: '32' }).databasePool).toBe(32)
    for (const bad of ['0', '-3', 'many', '1001']) expect(() => loadConfig({ UAGENT_DATABASE_POOL: bad })).toThrow(ConfigError)
  })
})

describe('PoolSlots', () => {
  test('a free slot is taken with no wait; the others queue in order, each told how long it waited when a slot came to it, or when it ended first', async () => {
    const waits: number[] = []
    const slots = new PoolSlots(2, { waited: (seconds) => waits.push(seconds) })
    const first = slots.take()
    const second = slots.take()
    const third = slots.take()
    const fourth = slots.take()
    const fifth = slots.take()
    expect(waits).toEqual([0, 0])
    expect(slots.inUse).toBe(2)
    expect(slots.queued).toBe(3)
    await Bun.sleep(20)
    first()
    first() // ending twice frees one slot, not two
    // The first in the queue got the slot, after about 20 ms.
    expect(waits).toHaveLength(3)
    expect(waits[2]!).toBeGreaterThan(0.015)
    expect(slots.queued).toBe(2)
    // The fifth ends before a slot came to it: all its time was waiting, and it frees nothing.
    await Bun.sleep(20)
    fifth()
    expect(waits).toHaveLength(4)
    expect(waits[3]!).toBeGreaterThan(0.035)
    expect(slots.queued).toBe(1)
    expect(slots.inUse).toBe(2)
    second()
    expect(waits).toHaveLength(5) // the fourth's turn
    third()
    fourth()
    expect(slots.inUse).toBe(0)
    expect(slots.queued).toBe(0)
    // Free again: no wait.
    slots.take()()
    expect(waits.at(-1)).toBe(0)
  })
})

if (!TEST_DATABASE_URL) {
  describe.skip(`the measured pool (PostgreSQL: ${POSTGRES_SKIPPED})`, () => test('skipped', () => {}))
} else {
  describe('the measured pool (PostgreSQL)', () => {
    const pools: SQL[] = []
    afterAll(async () => {
      for (const pool of pools) await pool.close()
    })

    test('queries beyond the pool\'s connections are measured as waiting for one, and none is delayed by the measuring; each counts for its request', async () => {
      const database = await emptyPostgresDatabase()
      const raw = new SQL(database.url, { max: 2, idleTimeout: 2 })
      database.track(raw)
      pools.push(raw)
      expect(poolSize(raw)).toBe(2)
      await Promise.all([raw`SELECT 1`, raw`SELECT 1`])
      const waits: number[] = []
      const sql = measuredPostgres(raw, new PoolSlots(poolSize(raw), { waited: (seconds) => waits.push(seconds) }))
      const counter = { count: 0 }
      const started = performance.now()
      const rows = await countingQueries(counter, () => Promise.all(Array.from({ length: 6 }, (_, i) => sql`SELECT ${i}::int AS i, pg_sleep(0.1)`)))
      const elapsed = performance.now() - started
      expect(rows.map(([row]) => row.i)).toEqual([0, 1, 2, 3, 4, 5])
      expect(counter.count).toBe(6)
      // Two connections, each answering its queries one after the other: three rounds of 100 ms.
      expect(elapsed).toBeGreaterThan(290)
      expect(waits.length).toBe(6)
      expect(waits.filter((seconds) => seconds === 0).length).toBe(2)
      expect(waits.filter((seconds) => seconds > 0.05).length).toBe(4)
      expect(Math.max(...waits)).toBeGreaterThan(0.15)
      // Measuring delays nothing: with one slot counted, two queries still run at once on the two connections.
      const oneSlot = measuredPostgres(raw, new PoolSlots(1, { waited: () => {} }))
      const begun = performance.now()
      await Promise.all([oneSlot`SELECT pg_sleep(0.2)`, oneSlot`SELECT pg_sleep(0.2)`])
      expect(performance.now() - begun).toBeLessThan(390)
    })

    test('fragments, helpers, unsafe and transactions work as on the pool itself; only awaited queries count', async () => {
      const raw = await freshPostgres()
      pools.push(raw)
      const sql = measuredPostgres(raw, new PoolSlots(1, { waited: () => {} }))
      expect(measuredPostgres(sql, new PoolSlots(1, { waited: () => {} }))).toBe(sql)
      const counter = { count: 0 }
      await countingQueries(counter, async () => {
        await sql`CREATE TABLE pool_probe (id int PRIMARY KEY, name text)`
        // A transaction holds the only slot: its queries go on its own connection without waiting for one.
        await sql.begin(async (tx) => {
          await tx`INSERT INTO pool_probe (id, name) VALUES (1, 'one'), (2, 'two'), (3, 'three')`
          await tx.unsafe('UPDATE pool_probe SET name = upper(name) WHERE id = $1', [2])
        })
        const limit = 2
        const rows = await sql`SELECT id, name FROM pool_probe WHERE id IN ${sql([1, 2, 3])} ORDER BY id ${limit ? sql`LIMIT ${limit}` : sql``}`
        expect(rows.map((row: { name: string }) => row.name)).toEqual(['one', 'TWO'])
      })
      // CREATE, INSERT, UPDATE, SELECT (the fragments and the helper are parts of the SELECT).
      expect(counter.count).toBe(4)
      // A failing query rejects as it does on the pool, and gives its slot back.
      const error = await sql`SELECT * FROM no_such_table`.catch((caught: Error) => caught)
      expect(String(error)).toContain('no_such_table')
      const failedInTransaction = await sql.begin(async (tx) => void (await tx`SELECT * FROM no_such_table`)).catch((caught: Error) => caught)
      expect(String(failedInTransaction)).toContain('no_such_table')
      expect((await sql`SELECT count(*)::int AS n FROM pool_probe`)[0].n).toBe(3)
    })

    test('RAG: lookups of one collection asked while one is under way share it; one asked after a delete or a create here reads again', async () => {
      const raw = await freshPostgres()
      pools.push(raw)
      const sql = measuredPostgres(raw, new PoolSlots(poolSize(raw), { waited: () => {} }))
      const store = new PostgresRagStore(sql)
      const [user] = await sql`INSERT INTO users (id, email, password_hash, roles, created_at) VALUES ('u1', 'u1@example.com', 'x', '["user"]', ${new Date().toISOString()}) RETURNING id`
      const made = await store.createCollection(user.id, 'docs', 'hash', 4)
      const counter = { count: 0 }
      const found = await countingQueries(counter, () => Promise.all(Array.from({ length: 5 }, () => store.findCollection('u1', 'docs'))))
      expect(found.map((row) => row?.id)).toEqual(Array(5).fill(made.id))
      expect(counter.count).toBe(1)
      // Asked one after the other: a read each.
      const sequential = { count: 0 }
      await countingQueries(sequential, async () => {
        await store.findCollection('u1', 'docs')
        await store.findCollection('u1', 'docs')
      })
      expect(sequential.count).toBe(2)
      // A lookup under way when the collection is deleted here is not shared with one asked after.
      const before = store.findCollection('u1', 'docs')
      await store.deleteCollection(made)
      expect(await store.findCollection('u1', 'docs')).toBeNull()
      await before
      // Likewise a create: a lookup asked after it finds the new collection, whatever the one under way read.
      const pending = store.findCollection('u1', 'docs')
      const again = await store.createCollection('u1', 'docs', 'hash', 4)
      expect((await store.findCollection('u1', 'docs'))?.id).toBe(again.id)
      await pending
    })

    test('RAG: a search makes three queries once its words are known: the collection with the caller\'s access, the keyword matches (with the collection, still there), the candidates\' rows', async () => {
      const raw = await freshPostgres()
      pools.push(raw)
      const sql = measuredPostgres(raw, new PoolSlots(poolSize(raw), { waited: () => {} }))
      const embedder = new HashEmbedder()
      // The collection's state is kept 1 s here (100 ms by default), so that a slow machine cannot make it expire within the search.
      const rag = new RagService<RagStore>({ db: new Database(':memory:'), store: new PostgresRagStore(sql, { stateTtlMs: 1000 }), embedder: async () => embedder, generator: async () => new ExtractiveGenerator() })
      await sql`INSERT INTO users (id, email, password_hash, roles, created_at) VALUES ('u1', 'u1@example.com', 'x', '["user"]', ${new Date().toISOString()})`
      await rag.ingest(
        'u1',
        'handbook',
        Array.from({ length: 5 }, (_, d) => ({ id: `page-${d}`, content: `Page ${d}. The harbour office opens at ${6 + d} in the morning. The keys are kept by the duty officer of shift ${d}.` })),
      )
      // The first search learns the tokens of its words (and loads the vectors); the next asks only
      // what changes per search. The state it read has expired by then: the resolver's row brings it.
      expect((await rag.search('u1', 'handbook', 'harbour keys', 3)).results).toHaveLength(3)
      await Bun.sleep(1100)
      const counter = { count: 0 }
      const found = await countingQueries(counter, () => rag.search('u1', 'handbook', 'harbour keys', 3))
      expect(found.results).toHaveLength(3)
      expect(counter.count).toBe(3)
    })

    test('GET /metrics on a server on PostgreSQL shows each route\'s queries per request and the pool\'s waits', async () => {
      const postgres = await freshPostgres()
      pools.push(postgres)
      const server = makeServer({ postgres, metricsToken: 'scrape-token-1234567890' })
      try {
        const { accessToken } = await server.login(ADMIN.email, ADMIN.password)
        for (let i = 0; i < 3; i++) expect((await server.call('GET', '/conversations?limit=5', { token: accessToken })).status).toBe(200)
        const metrics = await server.call('GET', '/metrics', { headers: { authorization: 'Bearer scrape-token-1234567890' } })
        expect(metrics.status).toBe(200)
        const line = (pattern: RegExp) => metrics.text.split('\n').find((candidate) => pattern.test(candidate))
        const count = line(/^uagent_db_queries_per_request_count\{method="GET",route="\/conversations"/)
        expect(count).toBeDefined()
        expect(Number(count!.split(' ').pop())).toBe(3)
        const sum = Number(line(/^uagent_db_queries_per_request_sum\{method="GET",route="\/conversations"/)!.split(' ').pop())
        // At least the page and its total for each of the three (the caller's account may be cached).
        expect(sum).toBeGreaterThanOrEqual(3)
        expect(Number(line(/^uagent_db_pool_wait_seconds_count/)!.split(' ').pop())).toBeGreaterThan(sum)
      } finally {
        await shutdown(server.app, server.services, 1000)
      }
    })
  })
}
