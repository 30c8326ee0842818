import { describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openAnalyticsDatabase } from '../../../src/db'
import type { RequestRecord } from '../../../src/modules/analytics/record'
import { batchOf, receiveStrings, recordsOf, StringIds, type StringList } from '../../../src/modules/analytics/record-batch'
import { RequestRecorder } from '../../../src/modules/analytics/recorder'
import { WriterThread } from '../../../src/modules/analytics/writer-thread'
import { record } from './helpers'

describe('record batches', () => {
  test('each batch carries only the strings it is the first to use; the receiving side reads every batch back whole', () => {
    const ids = new StringIds()
    const received: StringList = [null]
    const first = [record({ ts: 1, userId: 'u1', route: '/a' }), record({ ts: 2, userId: 'u1', route: '/b', model: 'm', promptTokens: 3, completionTokens: 4, status: 500 })]
    const second = [record({ ts: 3, userId: 'u2', route: '/a' }), record({ ts: 4, route: '/b', model: 'm', durationMs: 1.25 })]
    const one = batchOf(ids, first)
    const two = batchOf(ids, second)
    expect(one.strings).toEqual(['GET', '/a', 'u1', '/b', 'm'])
    expect(two.strings).toEqual(['u2'])
    receiveStrings(received, one)
    expect(recordsOf(one, received)).toEqual(first)
    receiveStrings(received, two)
    expect(recordsOf(two, received)).toEqual(second)
  })

  test('past its limit the table starts again, and the next batch says so: ids are reused without mixing up strings', () => {
    const ids = new StringIds()
    const received: StringList = [null]
    const one = batchOf(ids, [record({ ts: 1, route: '/one', userId: 'u1' }), record({ ts: 2, route: '/two', userId: 'u2' })])
    receiveStrings(received, one)
    ids.restartOver(3)
    const later = [record({ ts: 3, route: '/three', userId: 'u3' }), record({ ts: 4, route: '/one', userId: 'u1' })]
    const two = batchOf(ids, later)
    expect(two.reset).toBe(true)
    expect(two.strings).toEqual(['GET', '/three', 'u3', '/one', 'u1'])
    receiveStrings(received, two)
    expect(recordsOf(two, received)).toEqual(later)
    // Below the limit nothing starts again.
    ids.restartOver(100)
    expect(batchOf(ids, [record({ ts: 5, route: '/three' })])).toMatchObject({ reset: false, strings: [] })
  })
})

describe('the writer thread', () => {
  /** A batch of `records` (their strings given ids by `ids`) in `rows`, a buffer shared between threads, as the recorder's are. */
  const shared = (ids: StringIds, records: RequestRecord[], rows = new Float64Array(new SharedArrayBuffer(records.length * 9 * 8))) => {
    const batch = batchOf(ids, records)
    rows.set(batch.rows)
    return { ...batch, rows }
  }

  test('a thread started anew is sent the whole string table: batches after it read their strings right', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'uagent-writer-thread-'))
    const path = join(dir, 'analytics.db')
    openAnalyticsDatabase(path).close()
    const failures: string[] = []
    const writer = new WriterThread(path, (count, reason) => failures.push(`${count}: ${reason}`))
    const ids = new StringIds()
    const at = (ts: number, route: string, userId: string | null): RequestRecord => ({ ts, method: 'GET', route, status: 200, durationMs: 1, userId, promptTokens: 0, completionTokens: 0, model: null })
    try {
      writer.write(shared(ids, [at(1000, '/a', 'u1'), at(1001, '/b', null)]), ids.names)
      await writer.drained()
      // The thread stops (as one that failed would); the next batch uses strings only the old one was sent.
      await writer.close()
      const next = shared(ids, [at(2000, '/b', 'u1'), at(2001, '/c', 'u2'), at(2002, '/a', null)])
      expect(next.strings).toEqual(['/c', 'u2'])
      writer.write(next, ids.names)
      await writer.drained()
      await writer.close()
      const db = openAnalyticsDatabase(path)
      const rows = db.query<{ ts: number; route: string; user_id: string | null }, []>('SELECT ts, route, user_id FROM analytics_requests ORDER BY id').all()
      db.close()
      expect(failures).toEqual([])
      expect(rows).toEqual([
        { ts: 1000, route: '/a', user_id: 'u1' },
        { ts: 1001, route: '/b', user_id: null },
        { ts: 2000, route: '/b', user_id: 'u1' },
        { ts: 2001, route: '/c', user_id: 'u2' },
        { ts: 2002, route: '/a', user_id: null },
      ])
    } finally {
      await writer.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('a shared buffer is sent to the thread once and then named: each batch in it is read afresh, it comes back itself, and a new thread is sent it again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'uagent-writer-thread-'))
    const path = join(dir, 'analytics.db')
    openAnalyticsDatabase(path).close()
    const failures: string[] = []
    const returned: Float64Array[] = []
    const writer = new WriterThread(path, (count, reason) => failures.push(`${count}: ${reason}`), (rows) => returned.push(rows))
    const ids = new StringIds()
    const at = (ts: number, route: string): RequestRecord => ({ ts, method: 'GET', route, status: 200, durationMs: 1, userId: null, promptTokens: 0, completionTokens: 0, model: null })
    const one = new Float64Array(new SharedArrayBuffer(4 * 9 * 8))
    const two = new Float64Array(new SharedArrayBuffer(4 * 9 * 8))
    try {
      writer.write(shared(ids, [at(1000, '/a'), at(1001, '/b')], one), ids.names)
      await writer.drained()
      // The same buffer again, other records in it: the thread must read them, not what it had.
      writer.write(shared(ids, [at(1002, '/c')], one), ids.names)
      writer.write(shared(ids, [at(1003, '/a'), at(1004, '/c'), at(1005, '/b')], two), ids.names)
      await writer.drained()
      expect(returned).toHaveLength(3)
      expect(returned[0]).toBe(one)
      expect(returned.filter((rows) => rows === two)).toHaveLength(1)
      // A buffer let go of and used again is sent again.
      writer.retire(two)
      writer.write(shared(ids, [at(1006, '/d')], two), ids.names)
      await writer.drained()
      // The thread stops (as one that failed would): the next one holds no buffer yet.
      await writer.close()
      writer.write(shared(ids, [at(2000, '/b'), at(2001, '/e')], one), ids.names)
      await writer.drained()
      await writer.close()
      const db = openAnalyticsDatabase(path)
      const rows = db.query<{ ts: number; route: string }, []>('SELECT ts, route FROM analytics_requests ORDER BY id').all()
      db.close()
      expect(failures).toEqual([])
      expect(rows).toEqual([
        { ts: 1000, route: '/a' },
        { ts: 1001, route: '/b' },
        { ts: 1002, route: '/c' },
        { ts: 1003, route: '/a' },
        { ts: 1004, route: '/c' },
        { ts: 1005, route: '/b' },
        { ts: 1006, route: '/d' },
        { ts: 2000, route: '/b' },
        { ts: 2001, route: '/e' },
      ])
      expect(returned).toHaveLength(5)
    } finally {
      await writer.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('the recorder with its writer thread', () => {
  test('every record is stored, through buffers that grew, were handed back and used again, and batches of several sizes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'uagent-recorder-thread-'))
    const path = join(dir, 'analytics.db')
    const recorder = new RequestRecorder(openAnalyticsDatabase(path), { retentionDays: 30, maxBatch: 3000, flushIntervalMs: 60_000 })
    const users = ['u1', 'u2', null]
    const sizes = [5000, 1, 2999, 3000, 1200, 7000]
    let ts = Date.now() - 60_000
    let expected = 0
    let failed = 0
    try {
      for (const size of sizes) {
        // More than maxBatch at once: the buffer grows past its first size before the flush.
        for (let i = 0; i < size; i++, ts++) {
          const status = i % 7 === 0 ? 500 : 200
          if (status === 500) failed++
          recorder.add(ts, 'GET', `/r${i % 5}`, status, (i % 100) / 10, users[i % 3]!, 0, 0, null)
        }
        expected += size
        recorder.flush()
        // Every other batch waits for the thread, so that handed-back buffers are used again.
        if (size % 2) await recorder.settle()
      }
      await recorder.close()
      const db = openAnalyticsDatabase(path)
      const stored = db.query<{ n: number; failed: number; first: number; last: number; ordered: number }, []>(
        `SELECT count(*) AS n, sum(status >= 400) AS failed, min(ts) AS first, max(ts) AS last,
                sum(ts = first_ts + rn - 1) AS ordered
         FROM (SELECT ts, status, min(ts) OVER () AS first_ts, row_number() OVER (ORDER BY id) AS rn FROM analytics_requests)`,
      ).get()!
      db.close()
      expect(recorder.dropped).toBe(0)
      expect(stored).toEqual({ n: expected, failed, first: ts - expected, last: ts - 1, ordered: expected })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('record times', () => {
  test('times taken on the performance clock never step back when a flush checks the wall clock again', () => {
    const recorder = new RequestRecorder(openAnalyticsDatabase(':memory:'), { retentionDays: 30, writer: 'inline' })
    // Date.now() counts whole milliseconds: re-taking the offset at every flush moved it by up to 1 ms.
    let last = -Infinity
    let back = 0
    for (let i = 0; i < 3000; i++) {
      const ts = recorder.epoch + performance.now()
      if (ts < last) back++
      last = ts
      recorder.flush()
    }
    expect(back).toBe(0)
  })
})
