import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { openAnalyticsDatabase, openDatabase } from '../../../src/db'
import { ANALYTICS_MIGRATIONS } from '../../../src/db/migrations'
import { DAY, HOUR, MINUTE, type RequestRecord } from '../../../src/modules/analytics/record'
import { RecordStore } from '../../../src/modules/analytics/record-store'
import { RequestRecorder } from '../../../src/modules/analytics/recorder'
import { AnalyticsService } from '../../../src/modules/analytics/service'
import { tempDir } from '../../temp'

// Request records have no time index: each minute's span of ids (analytics_spans) says where its
// records lie, and ranges of time are read as ranges of ids filtered by time. These tests hold the
// spans to that, whatever order records are written in.

const databasePath = () => join(tempDir('spans'), 'analytics.db')

const record = (ts: number, route = '/auth/me'): RequestRecord => ({
  ts,
  method: 'GET',
  route,
  status: 200,
  durationMs: 1.5,
  userId: null,
  promptTokens: 0,
  completionTokens: 0,
  model: null,
})

type Row = { id: number; ts: number; route: string }
type Db = ReturnType<typeof openAnalyticsDatabase>
const rowsOf = (db: Db) => db.query<Row, []>('SELECT id, ts, route FROM analytics_requests ORDER BY id').all()

/** Every record's id lies within the span of its minute. */
function expectSpanned(db: Db) {
  const spans = new Map(db.query<{ minute: number; first_id: number; last_id: number }, []>('SELECT * FROM analytics_spans').all().map((s) => [s.minute, s]))
  for (const row of rowsOf(db)) {
    const span = spans.get(Math.floor(row.ts / MINUTE))
    expect(span).toBeDefined()
    expect(row.id).toBeGreaterThanOrEqual(span!.first_id)
    expect(row.id).toBeLessThanOrEqual(span!.last_id)
  }
}

describe('records without a time index', () => {
  test('batches out of time order and records of minutes long past: each batch stored in time order, every record found by its range', () => {
    const db = openAnalyticsDatabase(databasePath())
    const store = new RecordStore(db)
    // Read as of ten minutes into the hour before the current one (every record is in the past).
    const hour = Math.floor(Date.now() / HOUR) * HOUR - HOUR
    const now = hour + 10 * MINUTE
    // A batch in the order its requests ended (arrivals a little out of order), across a minute.
    store.write([hour + 59_990, hour + 59_950, hour + 60_010, hour + 59_999, hour + 60_000].map((ts) => record(ts)))
    // Then one with requests that arrived long before (streams), and one of two hours ago.
    store.write([hour + 61_000, hour + 5, hour - 2 * HOUR, hour + 60_005].map((ts) => record(ts, '/late')))
    // Bulk, in one millisecond.
    store.write(Array.from({ length: 3000 }, () => record(hour + 62_000, '/bulk')))
    expectSpanned(db)
    const rows = rowsOf(db)
    expect(rows.slice(0, 5).map((row) => row.ts - hour)).toEqual([59_950, 59_990, 59_999, 60_000, 60_010])
    expect(rows.slice(5, 9).map((row) => row.ts - hour)).toEqual([-2 * HOUR, 5, 60_005, 61_000])

    const analytics = new AnalyticsService(db, now)
    // The export reads exactly the records of its range (the one of two hours ago is outside 1h).
    const exported = [...analytics.exportRows('1h', now, 700)]
    expect(exported.length).toBe(rows.length - 1)
    expect(exported.map((row) => row.timestamp)).toEqual(rows.filter((row) => row.ts >= now - HOUR).map((row) => new Date(row.ts).toISOString()))
    expect([...analytics.exportRows('24h', now)].length).toBe(rows.length)
    expect([...analytics.exportRows('1h', hour - HOUR)].length).toBe(0)
    // The minute series counts them in their minutes.
    const series = analytics.metrics('1h', 'requests', now).metrics.requests!
    const at = (ts: number) => series.timestamps.indexOf(new Date(Math.floor(ts / MINUTE) * MINUTE).toISOString())
    expect(series.values[at(hour)]).toBe(4)
    expect(series.values[at(hour + MINUTE)]).toBe(3004)
    expect(series.values.reduce((a, b) => a + b, 0)).toBe(rows.length - 1)
    db.close()
  })

  test('pruning deletes the records and the spans before the retention period, whatever order they were stored in', async () => {
    const db = openAnalyticsDatabase(databasePath())
    const now = Date.now()
    const recorder = new RequestRecorder(db, { retentionDays: 1, writer: 'inline' })
    // An old record stored after newer ones (the span of its minute then holds newer ids too).
    recorder.write([record(now - 3 * DAY, '/old'), record(now - 1000, '/new')])
    recorder.write([record(now - 500, '/new'), record(now - 2 * DAY, '/old')])
    expect(await recorder.prune(now)).toBe(2)
    expect(rowsOf(db).map((row) => row.route)).toEqual(['/new', '/new'])
    expect(db.query<{ n: number }, [number]>('SELECT count(*) AS n FROM analytics_spans WHERE minute < ?').get((now - DAY) / MINUTE)!.n).toBe(0)
    expectSpanned(db)
    await recorder.close()
    db.close()
  })

  test('the migration gives records already stored their spans and drops the time index', () => {
    const path = databasePath()
    const before = openDatabase(path, ANALYTICS_MIGRATIONS.filter((migration) => migration.version < 12))
    const insert = before.prepare('INSERT INTO analytics_requests (ts, method, route, status, duration_ms) VALUES (?, ?, ?, ?, ?)')
    const base = Math.floor(Date.now() / HOUR) * HOUR - 3 * MINUTE
    const stamps = [base + 7, base + MINUTE + 2, base + 2, base + 2 * MINUTE + 9, base + 1]
    before.transaction(() => stamps.forEach((ts, i) => insert.run(ts, 'GET', `/r${i}`, 200, 1)))()
    before.close()

    const after = openAnalyticsDatabase(path)
    expect(rowsOf(after).length).toBe(stamps.length)
    expectSpanned(after)
    expect(after.query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'analytics_requests'").all()).toEqual([])
    expect([...new AnalyticsService(after, Date.now()).exportRows('24h')].length).toBe(stamps.length)
    after.close()
  })
})
