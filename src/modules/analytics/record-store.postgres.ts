import type { Postgres } from '../../db/postgres'
import { HOUR, MINUTE, type RequestRecord } from './record'

/** PostgreSQL refuses text holding NUL (U+0000): such a character of a recorded string is replaced. */
const clean = (value: string) => (value.includes('\u0000') ? value.replaceAll('\u0000', '\uFFFD') : value)

/**
 * The PostgreSQL side of recording (tables of migrations 7, 12 and 13, as in SQLite): a batch is
 * one transaction of two statements, whatever its size. Its records go in as arrays (one INSERT
 * … SELECT FROM unnest(…)), the spans of their minutes are widened from the ids that INSERT
 * returns, in the same statement, and the hourly rollup takes the batch's sums in one upsert.
 * Several servers write into the same tables: the rollup's rows and the spans are upserted, in
 * key order (so that two batches touching the same rows wait for each other rather than
 * deadlock). Strings get their ids in analytics_strings first (remembered: they never change).
 */
export class PostgresRecordStore {
  /** Ids in analytics_strings of the strings seen so far (bounded: forgotten past 100,000). */
  private readonly ids = new Map<string, number>()

  constructor(private readonly sql: Postgres) {}

  /** Writes records and their rollup in one transaction; throws what PostgreSQL throws (nothing is then written). */
  async write(records: RequestRecord[]): Promise<void> {
    if (!records.length) return
    const sorted = records.slice().sort((a, b) => a.ts - b.ts)
    const ids = await this.stringIds(sorted)
    const n = sorted.length
    const ts: number[] = new Array(n)
    const method: number[] = new Array(n)
    const route: number[] = new Array(n)
    const status: number[] = new Array(n)
    const duration: number[] = new Array(n)
    const user: (number | null)[] = new Array(n)
    const prompt: number[] = new Array(n)
    const completion: number[] = new Array(n)
    const model: (number | null)[] = new Array(n)
    const hours = new Map<string, { hour: number; method: string; route: string; user: string; model: string; requests: number; failures: number; duration: number; prompt: number; completion: number }>()
    for (let i = 0; i < n; i++) {
      const r = sorted[i]!
      ts[i] = Math.round(r.ts)
      method[i] = ids.get(clean(r.method))!
      route[i] = ids.get(clean(r.route))!
      status[i] = r.status
      duration[i] = r.durationMs
      user[i] = r.userId === null ? null : ids.get(clean(r.userId))!
      prompt[i] = r.promptTokens
      completion[i] = r.completionTokens
      model[i] = r.model === null ? null : ids.get(clean(r.model))!
      const hour = Math.floor(r.ts / HOUR)
      const key = `${hour}\u0000${r.method}\u0000${r.route}\u0000${r.userId ?? ''}\u0000${r.model ?? ''}`
      let sum = hours.get(key)
      if (!sum) {
        hours.set(key, (sum = { hour, method: clean(r.method), route: clean(r.route), user: clean(r.userId ?? ''), model: clean(r.model ?? ''), requests: 0, failures: 0, duration: 0, prompt: 0, completion: 0 }))
      }
      sum.requests++
      if (r.status >= 400) sum.failures++
      sum.duration += r.durationMs
      sum.prompt += r.promptTokens
      sum.completion += r.completionTokens
    }
    const byKey = [...hours.values()].sort(
      (a, b) => a.hour - b.hour || compare(a.method, b.method) || compare(a.route, b.route) || compare(a.user, b.user) || compare(a.model, b.model),
    )
    const column = <K extends keyof (typeof byKey)[number]>(key: K) => byKey.map((sum) => sum[key])
    await this.sql.begin(async (tx) => {
      await tx.unsafe(
        `WITH stored AS (
           INSERT INTO analytics_records (ts, method, route, status, duration_ms, user_id, prompt_tokens, completion_tokens, model)
           SELECT * FROM unnest($1::bigint[], $2::int[], $3::int[], $4::int[], $5::float8[], $6::int[], $7::int[], $8::int[], $9::int[])
           RETURNING id, ts
         )
         INSERT INTO analytics_spans (minute, first_id, last_id)
         SELECT ts / ${MINUTE}, min(id), max(id) FROM stored GROUP BY 1 ORDER BY 1
         ON CONFLICT (minute) DO UPDATE SET first_id = least(analytics_spans.first_id, excluded.first_id), last_id = greatest(analytics_spans.last_id, excluded.last_id)`,
        [ts, method, route, status, duration, user, prompt, completion, model],
      )
      await tx.unsafe(
        `INSERT INTO analytics_hourly (hour, method, route, user_id, model, requests, failures, duration_sum, prompt_tokens, completion_tokens)
         SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::float8[], $9::bigint[], $10::bigint[])
         ON CONFLICT (hour, method, route, user_id, model) DO UPDATE SET
           requests = analytics_hourly.requests + excluded.requests,
           failures = analytics_hourly.failures + excluded.failures,
           duration_sum = analytics_hourly.duration_sum + excluded.duration_sum,
           prompt_tokens = analytics_hourly.prompt_tokens + excluded.prompt_tokens,
           completion_tokens = analytics_hourly.completion_tokens + excluded.completion_tokens`,
        [column('hour'), column('method'), column('route'), column('user'), column('model'), column('requests'), column('failures'), column('duration'), column('prompt'), column('completion')],
      )
    })
  }

  /** The ids in analytics_strings of the records' strings, added there when new (committed at once: they are never removed). */
  private async stringIds(records: RequestRecord[]): Promise<Map<string, number>> {
    const wanted = new Set<string>()
    for (const r of records) {
      wanted.add(clean(r.method))
      wanted.add(clean(r.route))
      if (r.userId !== null) wanted.add(clean(r.userId))
      if (r.model !== null) wanted.add(clean(r.model))
    }
    const missing = [...wanted].filter((value) => !this.ids.has(value)).sort(compare)
    if (missing.length) {
      if (this.ids.size + missing.length > 100_000) this.ids.clear()
      await this.sql.unsafe('INSERT INTO analytics_strings (value) SELECT unnest($1::text[]) ON CONFLICT (value) DO NOTHING', [missing])
      const rows: { id: number; value: string }[] = await this.sql.unsafe('SELECT id, value FROM analytics_strings WHERE value = ANY($1::text[])', [missing])
      for (const row of rows) this.ids.set(row.value, Number(row.id))
    }
    const ids = new Map<string, number>()
    for (const value of wanted) ids.set(value, this.ids.get(value)!)
    return ids
  }

  /**
   * Deletes records older than `cutoff` (epoch ms, hour-aligned), in slices of 5,000, with their
   * rollup hours and minute spans. Returns the records deleted.
   */
  async prune(cutoff: number, stopped: () => boolean = () => false): Promise<number> {
    const [span]: { id: number | null }[] = await this.sql.unsafe('SELECT max(last_id)::float8 AS id FROM analytics_spans WHERE minute < $1::bigint', [cutoff / MINUTE])
    const last = span?.id ?? -1
    let deleted = 0
    for (;;) {
      if (stopped()) return deleted
      const result = await this.sql.unsafe('DELETE FROM analytics_records WHERE id IN (SELECT id FROM analytics_records WHERE id <= $1::bigint AND ts < $2::bigint LIMIT 5000)', [last, cutoff])
      const changes = Number((result as { count?: number }).count ?? 0)
      deleted += changes
      if (changes < 5000) break
    }
    await this.sql.unsafe('DELETE FROM analytics_hourly WHERE hour < $1::bigint', [cutoff / HOUR])
    await this.sql.unsafe('DELETE FROM analytics_spans WHERE minute < $1::bigint', [cutoff / MINUTE])
    return deleted
  }
}

/** One fixed order of strings, the same on every server: rows are locked in that order by all of them. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
