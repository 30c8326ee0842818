import type { Postgres } from '../../db/postgres'
import { HOUR, MINUTE, type RequestRecord } from './record'
import { batchOf, COMPLETION, DURATION, FIELDS, METHOD, MODEL, PROMPT, ROUTE, STATUS, StringIds, type StringList, TS, USER } from './record-batch'
import { hourSums } from './record-store'

/** PostgreSQL refuses text holding NUL (U+0000): such a character of a recorded string is replaced. */
const clean = (value: string) => (value.includes('\u0000') ? value.replaceAll('\u0000', '\uFFFD') : value)

/** A batch as the recorder hands it over: its records as numbers, and its strings by id (a copy of its own). */
export interface PostgresBatch {
  count: number
  rows: Float64Array
  names: StringList
}

/**
 * The PostgreSQL side of recording (tables of migrations 7, 12 and 13, as in SQLite): a batch is
 * one transaction of two statements, whatever its size. Its records go in as arrays (one INSERT
 * … SELECT FROM unnest(…)), the spans of their minutes are widened from the ids that INSERT
 * returns, in the same statement, and the hourly rollup takes the batch's sums in one upsert.
 * The arrays are made straight from the batch's numbers (no object per record). Several servers
 * write into the same tables: the rollup's rows and the spans are upserted in key order, so that
 * two batches touching the same rows wait for each other rather than deadlock. Strings get their
 * ids in analytics_strings first (remembered: they never change).
 */
export class PostgresRecordStore {
  /** Ids in analytics_strings of the strings seen so far (bounded: forgotten past 100,000). */
  private readonly ids = new Map<string, number>()

  constructor(private readonly sql: Postgres) {}

  /** Writes records and their rollup in one transaction; throws what PostgreSQL throws (nothing is then written). */
  write(records: RequestRecord[]): Promise<void> {
    const strings = new StringIds()
    const batch = batchOf(strings, records)
    return this.writeBatch({ count: batch.count, rows: batch.rows, names: strings.names })
  }

  /** Writes a batch and its rollup in one transaction; throws what PostgreSQL throws (nothing is then written). */
  async writeBatch({ count, rows, names }: PostgresBatch): Promise<void> {
    if (!count) return
    // The database id of each of the batch's string ids that its records use.
    const used = new Uint8Array(names.length)
    for (let at = 0; at < count * FIELDS; at += FIELDS) {
      used[rows[at + METHOD]!] = 1
      used[rows[at + ROUTE]!] = 1
      used[rows[at + USER]!] = 1
      used[rows[at + MODEL]!] = 1
    }
    const dbIds = await this.stringIds(names, used)
    const ts: number[] = new Array(count)
    const method: number[] = new Array(count)
    const route: number[] = new Array(count)
    const status: number[] = new Array(count)
    const duration: number[] = new Array(count)
    const user: (number | null)[] = new Array(count)
    const prompt: number[] = new Array(count)
    const completion: number[] = new Array(count)
    const model: (number | null)[] = new Array(count)
    for (let i = 0, at = 0; i < count; i++, at += FIELDS) {
      ts[i] = Math.round(rows[at + TS]!)
      method[i] = dbIds[rows[at + METHOD]!]!
      route[i] = dbIds[rows[at + ROUTE]!]!
      status[i] = rows[at + STATUS]!
      duration[i] = rows[at + DURATION]!
      user[i] = dbIds[rows[at + USER]!]!
      prompt[i] = rows[at + PROMPT]!
      completion[i] = rows[at + COMPLETION]!
      model[i] = dbIds[rows[at + MODEL]!]!
    }
    // The rollup's rows, by their strings (two ids whose strings cleaned alike are one row), in key order.
    const hours = new Map<string, { hour: number; method: string; route: string; user: string; model: string; requests: number; failures: number; duration: number; prompt: number; completion: number }>()
    for (const sum of hourSums(rows, count, names.length)) {
      const strings = { method: clean(names[sum.method]!), route: clean(names[sum.route]!), user: clean(names[sum.user] ?? ''), model: clean(names[sum.model] ?? '') }
      const key = `${sum.hour}\u0000${strings.method}\u0000${strings.route}\u0000${strings.user}\u0000${strings.model}`
      const row = hours.get(key)
      if (!row) hours.set(key, { hour: sum.hour, ...strings, requests: sum.requests, failures: sum.failures, duration: sum.duration, prompt: sum.prompt, completion: sum.completion })
      else {
        row.requests += sum.requests
        row.failures += sum.failures
        row.duration += sum.duration
        row.prompt += sum.prompt
        row.completion += sum.completion
      }
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

  /**
   * The ids in analytics_strings of the batch's strings marked in `used` (by batch id; id 0,
   * null, stays null), added there when new (committed at once: they are never removed).
   */
  private async stringIds(names: StringList, used: Uint8Array): Promise<(number | null)[]> {
    if (this.ids.size > 100_000) this.ids.clear()
    const values: (string | null)[] = new Array(names.length).fill(null)
    const missing = new Set<string>()
    for (let id = 1; id < names.length; id++) {
      if (!used[id]) continue
      const value = clean(names[id]!)
      values[id] = value
      if (!this.ids.has(value)) missing.add(value)
    }
    if (missing.size) {
      const list = [...missing].sort(compare)
      await this.sql.unsafe('INSERT INTO analytics_strings (value) SELECT unnest($1::text[]) ON CONFLICT (value) DO NOTHING', [list])
      const rows: { id: number; value: string }[] = await this.sql.unsafe('SELECT id, value FROM analytics_strings WHERE value = ANY($1::text[])', [list])
      for (const row of rows) this.ids.set(row.value, Number(row.id))
    }
    return values.map((value) => (value === null ? null : this.ids.get(value)!))
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
