import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { openAnalyticsDatabase } from '../../../src/db'
import { HOUR, type RequestRecord } from '../../../src/modules/analytics/record'
import { batchOf, StringIds } from '../../../src/modules/analytics/record-batch'
import { type HourSum, hourSums, RecordStore } from '../../../src/modules/analytics/record-store'
import { tempDir } from '../../temp'

// The hourly rollup (analytics_hourly) is what the dashboard reads: each batch written adds its
// records to it, summed per hour, endpoint and caller. These tests hold it to the records themselves.

const hour = Math.floor(Date.now() / HOUR) * HOUR

/** Traffic over three hours: two methods, three routes, three users and anonymous, two models and none, failures. */
function traffic(count: number): RequestRecord[] {
  const routes = ['/chat', '/auth/me', '/conversations/:id']
  const models = ['builtin/extractive', 'onnx/tiny', null]
  const users = [null, 'user-a', 'user-b', 'user-c']
  return Array.from({ length: count }, (_, i) => {
    // Route, model and user vary independently of each other: every endpoint has several callers.
    const route = routes[Math.floor(i / 2) % 3]!
    const model = models[i % 3]!
    return {
      // Not in time order across the hour boundaries, as a batch can be (a stream recorded at its end).
      ts: hour - HOUR + ((i * 7_919_003) % (3 * HOUR)),
      method: route === '/chat' ? 'POST' : 'GET',
      route,
      status: i % 5 === 0 ? 500 : i % 7 === 0 ? 404 : 200,
      durationMs: (i % 13) + 0.25,
      userId: users[Math.floor(i / 5) % 4]!,
      promptTokens: model ? 10 + (i % 3) : 0,
      completionTokens: model ? 5 + (i % 2) : 0,
      model,
    }
  })
}

type Sum = { hour: number; method: string; route: string; user: string; model: string; requests: number; failures: number; duration: number; prompt: number; completion: number }
const key = (s: Sum) => [s.hour, s.method, s.route, s.user, s.model].join(' ')
const sorted = (sums: Sum[]) => [...sums].sort((a, b) => key(a).localeCompare(key(b)))

/** The rollup computed from records directly. */
function expected(records: RequestRecord[]): Sum[] {
  const sums = new Map<string, Sum>()
  for (const r of records) {
    const s: Sum = { hour: Math.floor(r.ts / HOUR), method: r.method, route: r.route, user: r.userId ?? '', model: r.model ?? '', requests: 0, failures: 0, duration: 0, prompt: 0, completion: 0 }
    const found = sums.get(key(s)) ?? s
    sums.set(key(s), found)
    found.requests++
    if (r.status >= 400) found.failures++
    found.duration += r.durationMs
    found.prompt += r.promptTokens
    found.completion += r.completionTokens
  }
  return sorted([...sums.values()])
}

const named = (sums: Iterable<HourSum>, names: (string | null)[]): Sum[] =>
  sorted(
    [...sums].map((s) => ({
      hour: s.hour,
      method: names[s.method]!,
      route: names[s.route]!,
      user: names[s.user] ?? '',
      model: names[s.model] ?? '',
      requests: s.requests,
      failures: s.failures,
      duration: s.duration,
      prompt: s.prompt,
      completion: s.completion,
    })),
  )

describe('hourly rollup', () => {
  test('a batch adds up per hour, endpoint and caller, with a small table of strings and with one of over 9,000', () => {
    const records = traffic(600)
    const want = expected(records)
    expect(want.length).toBeGreaterThan(12)
    expect(new Set(want.map((s) => s.hour)).size).toBe(3)

    // A few strings: each sum's key is one exact number.
    const few = new StringIds()
    const small = batchOf(few, records)
    expect(few.names.length).toBeLessThan(20)
    expect(named(hourSums(small.rows, small.count, few.names.length), few.names)).toEqual(want)

    // 10,000 strings before these: the five ids no longer fit one exact number, a Map per level is used.
    const many = new StringIds()
    for (let i = 0; i < 10_000; i++) many.id(`user-${i}`)
    const large = batchOf(many, records)
    expect(named(hourSums(large.rows, large.count, many.names.length), many.names)).toEqual(want)

    expect([...hourSums(new Float64Array(0), 0, 5)]).toEqual([])
  })

  test('the stored rollup equals the records grouped in SQL, over batches that add to the same hours', () => {
    const db = openAnalyticsDatabase(join(tempDir('rollup'), 'analytics.db'))
    const store = new RecordStore(db)
    const records = traffic(900)
    const ids = new StringIds()
    for (let i = 0; i < records.length; i += 300) store.writeBatch(batchOf(ids, records.slice(i, i + 300)), ids.names)
    const rollup = db
      .query<Sum, []>(
        `SELECT hour, method, route, user_id AS user, model, requests, failures, duration_sum AS duration, prompt_tokens AS prompt, completion_tokens AS completion FROM analytics_hourly`,
      )
      .all()
    const grouped = db
      .query<Sum, []>(
        `SELECT CAST(ts / ${HOUR} AS INTEGER) AS hour, method, route, coalesce(user_id, '') AS user, coalesce(model, '') AS model, count(*) AS requests,
           sum(status >= 400) AS failures, sum(duration_ms) AS duration, sum(prompt_tokens) AS prompt, sum(completion_tokens) AS completion
         FROM analytics_requests GROUP BY 1, 2, 3, 4, 5`,
      )
      .all()
    expect(grouped.reduce((n, s) => n + s.requests, 0)).toBe(900)
    expect(sorted(rollup)).toEqual(sorted(grouped))
    expect(sorted(rollup)).toEqual(expected(records))
    db.close()
  })
})
