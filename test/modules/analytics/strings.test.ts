import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { openAnalyticsDatabase, openDatabase } from '../../../src/db'
import { ANALYTICS_MIGRATIONS } from '../../../src/db/migrations'
import { HOUR, type RequestRecord } from '../../../src/modules/analytics/record'
import { batchOf, StringIds } from '../../../src/modules/analytics/record-batch'
import { RecordStore } from '../../../src/modules/analytics/record-store'
import { AnalyticsService } from '../../../src/modules/analytics/service'
import { tempDir } from '../../temp'

// Records keep their strings as ids into analytics_strings (migration 013); the view
// analytics_requests gives them back. These tests hold the ids to the strings they stand for.

const databasePath = () => join(tempDir('strings'), 'analytics.db')

const now = Math.floor(Date.now() / HOUR) * HOUR + 5000
const record = (i: number, route: string, userId: string | null = null, model: string | null = null): RequestRecord => ({
  ts: now + i,
  method: i % 2 ? 'POST' : 'GET',
  route,
  status: 200 + i,
  durationMs: 1.25 + i,
  userId,
  promptTokens: model ? 10 + i : 0,
  completionTokens: model ? 5 + i : 0,
  model,
})

type Db = ReturnType<typeof openAnalyticsDatabase>
const COLUMNS = 'id, ts, method, route, status, duration_ms, user_id, prompt_tokens, completion_tokens, model'
const viewOf = (db: Db) => db.query<Record<string, unknown>, []>(`SELECT ${COLUMNS} FROM analytics_requests ORDER BY id`).all()
const asRow = (r: RequestRecord) => ({
  ts: r.ts,
  method: r.method,
  route: r.route,
  status: r.status,
  duration_ms: r.durationMs,
  user_id: r.userId,
  prompt_tokens: r.promptTokens,
  completion_tokens: r.completionTokens,
  model: r.model,
})

describe('record strings as ids', () => {
  test('records are stored as numbers, one string row per distinct string, and read back whole through the view', () => {
    const db = openAnalyticsDatabase(databasePath())
    const store = new RecordStore(db)
    const records = [record(0, '/chat', 'user-a', 'builtin/extractive'), record(1, '/auth/me', 'user-b'), record(2, '/chat', 'user-a', 'builtin/extractive'), record(3, '/health')]
    store.write(records)
    // A second batch (a table of batch ids of its own) with the same strings and a new one.
    store.write([record(4, '/health'), record(5, '/conversations/:id', 'user-b')])
    expect(viewOf(db).map(({ id, ...row }) => row)).toEqual([...records, record(4, '/health'), record(5, '/conversations/:id', 'user-b')].map(asRow))
    const values = db.query<{ value: string }, []>('SELECT value FROM analytics_strings ORDER BY value').all().map((row) => row.value)
    expect(values).toEqual(['/auth/me', '/chat', '/conversations/:id', '/health', 'GET', 'POST', 'builtin/extractive', 'user-a', 'user-b'])
    const types = db.query<{ t: string }, []>('SELECT DISTINCT typeof(method) || typeof(route) || typeof(user_id) || typeof(model) AS t FROM analytics_records').all()
    expect(types.map((row) => row.t).sort()).toEqual(['integerintegerintegerinteger', 'integerintegerintegernull', 'integerintegernullnull'])
    db.close()
  })

  test('a large batch reads back whole, its statements of records without model usage and with it alike', () => {
    const db = openAnalyticsDatabase(databasePath())
    const store = new RecordStore(db)
    // 64 records a statement: the first statement's records used no model (their usage columns are
    // left to the defaults); in the second one record has tokens without a model, in the third the
    // last record used a model; the rest go one by one.
    const records = Array.from({ length: 64 * 3 + 5 }, (_, i) => {
      if (i === 100) return { ...record(i, '/chat', 'user-1'), promptTokens: 7, completionTokens: 3 }
      if (i === 64 * 3 - 1 || i >= 64 * 3 + 2) return record(i, '/chat', `user-${i % 3}`, 'builtin/extractive')
      return record(i, i % 2 ? '/auth/me' : '/health', i % 4 ? `user-${i % 3}` : null)
    })
    store.write(records)
    expect(viewOf(db).map(({ id, ...row }) => row)).toEqual(records.map(asRow))
    db.close()
  })

  test('a string a failed batch added is not taken for stored: the next batch stores it anew', () => {
    const db = openAnalyticsDatabase(databasePath())
    const store = new RecordStore(db)
    // The batches' ids, as the recorder's table gives them, continuing from batch to batch.
    const ids = new StringIds()
    db.run(`CREATE TEMP TRIGGER refuse BEFORE INSERT ON analytics_records WHEN NEW.status = 599 BEGIN SELECT RAISE(ABORT, 'refused'); END`)
    const failing = [record(0, '/new-route', 'user-new'), { ...record(1, '/other'), status: 599 }]
    expect(() => store.writeBatch(batchOf(ids, failing), ids.names)).toThrow('refused')
    expect(db.query('SELECT count(*) AS n FROM analytics_strings').get()).toEqual({ n: 0 })
    // The same batch ids again (the recorder's table knows the strings already).
    store.writeBatch(batchOf(ids, [record(2, '/new-route', 'user-new')]), ids.names)
    expect(viewOf(db).map(({ id, ...row }) => row)).toEqual([asRow(record(2, '/new-route', 'user-new'))])
    db.close()
  })

  test('the migration turns stored records into ids and keeps their ids, the view reading as the table did', () => {
    const path = databasePath()
    const before = openDatabase(path, ANALYTICS_MIGRATIONS.filter((migration) => migration.version < 13))
    const records = [record(0, '/chat', 'user-a', 'builtin/extractive'), record(1, '/auth/me', 'user-b'), record(2, '/health'), record(3, '/chat', 'user-a', 'builtin/extractive')]
    const insert = before.prepare(`INSERT INTO analytics_requests (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
    before.transaction(() => records.forEach((r, i) => insert.run(10 + 3 * i, r.ts, r.method, r.route, r.status, r.durationMs, r.userId, r.promptTokens, r.completionTokens, r.model)))()
    // (Their spans, as the recorder keeps them.)
    before.run('INSERT INTO analytics_spans SELECT CAST(ts AS INTEGER) / 60000, min(id), max(id) FROM analytics_requests GROUP BY 1')
    before.close()

    const after = openAnalyticsDatabase(path)
    expect(viewOf(after)).toEqual(records.map((r, i) => ({ id: 10 + 3 * i, ...asRow(r) })))
    expect(after.query<{ n: number }, []>('SELECT count(*) AS n FROM analytics_strings').get()!.n).toBe(8)
    // New records continue after the ids kept, and the export reads old and new alike.
    new RecordStore(after).write([record(4, '/health', 'user-b')])
    expect(viewOf(after).at(-1)).toEqual({ id: 20, ...asRow(record(4, '/health', 'user-b')) })
    expect([...new AnalyticsService(after).exportRows('1h', now + 1000)].map((row) => row.route)).toEqual(['/chat', '/auth/me', '/health', '/chat', '/health'])
    after.close()
  })
})
