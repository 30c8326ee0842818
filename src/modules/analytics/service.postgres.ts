import type { MaybePromise } from '../../db/maybe-promise'
import type { Postgres } from '../../db/postgres'
import { HOUR, MINUTE } from './record'
import { type BucketRow, dashboardOf, type ExportRow, exportRowOf, type MetricName, metricsOf, type Totals } from './service'
import { type TimeRange, timeWindow, type Window } from './window'

// Sums and counts come back from PostgreSQL as bigint or numeric (strings in Bun's client): the
// queries cast them to float8, which is exact for every count and sum these tables can reach.
// (Parameters are cast to the columns' type: a JS number sent as float8 would keep the index out.)
const IN_HOURS = 'FROM analytics_hourly WHERE hour >= $1::bigint AND hour < $2::bigint'
const PER_ROLLUP = `sum(requests)::float8 AS requests, sum(duration_sum)::float8 AS duration, sum(failures)::float8 AS errors, count(DISTINCT nullif(user_id, ''))::float8 AS users`

/**
 * The dashboard, metric series and export computed by PostgreSQL from the records every server on
 * the database wrote (same tables, same queries and same response shapes as AnalyticsService on
 * SQLite: see service.ts).
 */
export class PostgresAnalyticsService {
  constructor(
    private readonly sql: Postgres,
    private readonly startedAt: number = Date.now(),
    private readonly emailsOf: (userIds: string[]) => MaybePromise<Map<string, string>> = () => new Map(),
  ) {}

  async dashboard(now = Date.now()) {
    const window = timeWindow('24h', now)
    const hours = [window.start / HOUR, window.end / HOUR]
    // One after the other, on one connection at a time (an admin's page: the pool stays for requests).
    const queries = [
      () => this.sql.unsafe(
        `SELECT coalesce(sum(requests), 0)::float8 AS requests, coalesce(sum(failures), 0)::float8 AS failures, coalesce(sum(duration_sum), 0)::float8 AS duration,
                coalesce(sum(prompt_tokens + completion_tokens), 0)::float8 AS tokens,
                coalesce(sum(requests) FILTER (WHERE model <> ''), 0)::float8 AS "modelRequests",
                coalesce(sum(duration_sum) FILTER (WHERE model <> ''), 0)::float8 AS "modelDuration"
         ${IN_HOURS}`,
        hours,
      ),
      () => this.sql.unsafe(`SELECT hour::float8 AS hour, sum(requests)::float8 AS requests ${IN_HOURS} GROUP BY hour`, hours),
      () => this.sql.unsafe(`SELECT count(DISTINCT user_id)::float8 AS users ${IN_HOURS} AND user_id <> ''`, hours),
      () => this.sql.unsafe(
        `SELECT method, route, sum(requests)::float8 AS requests, sum(failures)::float8 AS failures, sum(duration_sum)::float8 AS duration, 0 AS tokens
         ${IN_HOURS} GROUP BY method, route ORDER BY sum(requests) DESC, method, route LIMIT 10`,
        hours,
      ),
      () => this.sql.unsafe(
        `SELECT model, sum(requests)::float8 AS requests, sum(failures)::float8 AS failures, sum(duration_sum)::float8 AS duration, sum(prompt_tokens + completion_tokens)::float8 AS tokens
         ${IN_HOURS} AND model <> '' GROUP BY model ORDER BY 5 DESC, 2 DESC, model LIMIT 10`,
        hours,
      ),
      () => this.sql.unsafe(
        `SELECT user_id AS "userId", sum(requests)::float8 AS requests, sum(prompt_tokens)::float8 AS "promptTokens", sum(completion_tokens)::float8 AS "completionTokens"
         ${IN_HOURS} AND user_id <> '' GROUP BY user_id
         ORDER BY 2 DESC, sum(prompt_tokens + completion_tokens) DESC, user_id LIMIT 100`,
        hours,
      ),
    ]
    const results: unknown[][] = []
    for (const query of queries) results.push([...(await query())])
    const [totals, byHour, activeUsers, endpoints, models, usage] = results as [unknown[], unknown[], unknown[], unknown[], unknown[], unknown[]]
    const users = usage as { userId: string; requests: number; promptTokens: number; completionTokens: number }[]
    return dashboardOf({
      window,
      uptime: Math.floor((Date.now() - this.startedAt) / 1000),
      totals: totals[0] as Totals & { modelRequests: number; modelDuration: number },
      byHour: [...byHour] as { hour: number; requests: number }[],
      activeUsers: (activeUsers[0] as { users: number }).users,
      endpoints: [...endpoints] as ({ method: string; route: string } & Totals)[],
      models: [...models] as ({ model: string } & Totals)[],
      usage: [...users],
      emails: users.length ? await this.emailsOf(users.map((row) => row.userId)) : new Map<string, string>(),
    })
  }

  async metrics(range: TimeRange, metric?: MetricName, now = Date.now()) {
    const window = timeWindow(range, now)
    return metricsOf(range, window, await this.buckets(window), metric)
  }

  private async buckets(window: Window): Promise<BucketRow[]> {
    if (window.size === MINUTE) {
      const ids = await this.idsOf(window.start, window.end)
      if (!ids) return []
      const rows = await this.sql.unsafe(
        `SELECT ((ts - $1::bigint) / ${MINUTE})::float8 AS bucket, count(*)::float8 AS requests, sum(duration_ms)::float8 AS duration,
                count(*) FILTER (WHERE status >= 400)::float8 AS errors, count(DISTINCT user_id)::float8 AS users
         FROM analytics_records WHERE id >= $3::bigint AND id <= $4::bigint AND ts >= $1::bigint AND ts < $2::bigint GROUP BY 1`,
        [window.start, window.end, ...ids],
      )
      return [...rows] as BucketRow[]
    }
    const hours = [window.start / HOUR, window.end / HOUR]
    const rows =
      window.size === HOUR
        ? await this.sql.unsafe(`SELECT (hour - $1::bigint)::float8 AS bucket, ${PER_ROLLUP} ${IN_HOURS} GROUP BY hour`, hours)
        : await this.sql.unsafe(`SELECT ((hour - $1::bigint) / 24)::float8 AS bucket, ${PER_ROLLUP} ${IN_HOURS} GROUP BY 1`, hours)
    return [...rows] as BucketRow[]
  }

  /** The first and last id among which the records of [start, end) lie, or null when there are none. */
  private async idsOf(start: number, end: number): Promise<[number, number] | null> {
    const [span] = await this.sql.unsafe('SELECT min(first_id)::float8 AS first, max(last_id)::float8 AS last FROM analytics_spans WHERE minute >= $1::bigint AND minute <= $2::bigint', [
      Math.floor(start / MINUTE),
      Math.floor((end - 1) / MINUTE),
    ])
    return span?.first == null || span.last == null ? null : [span.first, span.last]
  }

  /** The records of a range in the order they were stored (by id), read a page at a time. */
  async *exportRows(range: TimeRange, now = Date.now(), pageSize = 1000): AsyncGenerator<ExportRow> {
    const window = timeWindow(range, now)
    const ids = await this.idsOf(window.start, window.end)
    if (!ids) return
    let after = ids[0] - 1
    for (;;) {
      const rows = (await this.sql.unsafe(
        // The page's records first (the primary key's order, stopping at the page's end), then their strings.
        `WITH page AS (
           SELECT * FROM analytics_records
           WHERE id > $3::bigint AND id <= $4::bigint AND ts >= $1::bigint AND ts < $2::bigint
           ORDER BY id LIMIT $5::int
         )
         SELECT r.id::float8 AS id, r.ts::float8 AS ts, m.value AS method, p.value AS route, r.status, r.duration_ms AS "durationMs",
                u.value AS "userId", r.prompt_tokens + r.completion_tokens AS tokens, o.value AS model
         FROM page r
         LEFT JOIN analytics_strings m ON m.id = r.method
         LEFT JOIN analytics_strings p ON p.id = r.route
         LEFT JOIN analytics_strings u ON u.id = r.user_id
         LEFT JOIN analytics_strings o ON o.id = r.model
         ORDER BY r.id`,
        [window.start, window.end, after, ids[1], pageSize],
      )) as { id: number; ts: number; method: string; route: string; status: number; durationMs: number; userId: string | null; tokens: number; model: string | null }[]
      for (const row of rows) yield exportRowOf(row)
      if (rows.length < pageSize) return
      after = rows[rows.length - 1]!.id
    }
  }
}

/** Either backend's analytics: the routes await what they answer. */
export type Analytics = import('./service').AnalyticsService | PostgresAnalyticsService
