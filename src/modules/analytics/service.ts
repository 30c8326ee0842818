import type { Database } from 'bun:sqlite'
import { andThen, type MaybePromise } from '../../db/maybe-promise'
import { HOUR, MINUTE } from './recorder'
import { bucketStarts, type TimeRange, timeWindow, type Window } from './window'

export const METRICS = ['requests', 'performance', 'errors', 'users'] as const
export type MetricName = (typeof METRICS)[number]

/** What the export writes for each record. */
export interface ExportRow {
  timestamp: string
  method: string
  route: string
  status: number
  durationMs: number
  userId: string | null
  tokens: number
  model: string | null
}

export interface Totals {
  requests: number
  failures: number
  duration: number
  tokens: number
}

export interface BucketRow {
  bucket: number
  requests: number
  duration: number
  errors: number
  users: number
}

const round2 = (value: number) => Math.round(value * 100) / 100

/** A health figure 0..100 from the error rate and the mean latency (the README gives the formula). */
export function healthScore(errorRate: number, averageMs: number): number {
  const latencyPenalty = Math.min(1, Math.max(0, (averageMs - 500) / 4500))
  return Math.round(Math.min(100, Math.max(0, 100 - 60 * errorRate - 40 * latencyPenalty)))
}

/** Dashboard, metric series and export, all computed by SQLite from the recorded requests. */
export class AnalyticsService {
  private readonly totals
  private readonly byHour
  private readonly endpoints
  private readonly models
  private readonly activeUsers
  private readonly usage
  private readonly span
  private readonly minuteBuckets
  private readonly hourBuckets
  private readonly dayBuckets
  private readonly page

  constructor(
    private readonly db: Database,
    private readonly startedAt: number = Date.now(),
    /**
     * The accounts' emails by user id. The records live in a database of their own (analytics.db),
     * so that the recorder's writes never contend with the requests' (see db/analytics.ts); the
     * accounts are in the server's.
     */
    private readonly emailsOf: (userIds: string[]) => MaybePromise<Map<string, string>> = () => new Map(),
  ) {
    // Dashboard and hourly/daily series: the hourly rollup, by its primary key (hour first).
    const inHours = 'FROM analytics_hourly WHERE hour >= ?1 AND hour < ?2'
    this.totals = db.query<Totals & { modelRequests: number; modelDuration: number }, [number, number]>(
      `SELECT coalesce(sum(requests), 0) AS requests, coalesce(sum(failures), 0) AS failures, coalesce(sum(duration_sum), 0) AS duration,
              coalesce(sum(prompt_tokens + completion_tokens), 0) AS tokens,
              coalesce(sum(requests) FILTER (WHERE model <> ''), 0) AS modelRequests,
              coalesce(sum(duration_sum) FILTER (WHERE model <> ''), 0) AS modelDuration
       ${inHours}`,
    )
    this.byHour = db.query<{ hour: number; requests: number }, [number, number]>(`SELECT hour, sum(requests) AS requests ${inHours} GROUP BY hour`)
    this.endpoints = db.query<{ method: string; route: string } & Totals, [number, number]>(
      `SELECT method, route, sum(requests) AS requests, sum(failures) AS failures, sum(duration_sum) AS duration, 0 AS tokens
       ${inHours} GROUP BY method, route ORDER BY requests DESC, method, route LIMIT 10`,
    )
    this.models = db.query<{ model: string } & Totals, [number, number]>(
      `SELECT model, sum(requests) AS requests, sum(failures) AS failures, sum(duration_sum) AS duration, sum(prompt_tokens + completion_tokens) AS tokens
       ${inHours} AND model <> '' GROUP BY model ORDER BY tokens DESC, requests DESC, model LIMIT 10`,
    )
    this.activeUsers = db.query<{ users: number }, [number, number]>(`SELECT count(DISTINCT user_id) AS users ${inHours} AND user_id <> ''`)
    this.usage = db.query<{ userId: string; requests: number; promptTokens: number; completionTokens: number }, [number, number]>(
      `SELECT user_id AS userId, sum(requests) AS requests, sum(prompt_tokens) AS promptTokens, sum(completion_tokens) AS completionTokens
       ${inHours} AND user_id <> '' GROUP BY user_id
       ORDER BY requests DESC, promptTokens + completionTokens DESC, userId LIMIT 100`,
    )
    const perBucket = `count(*) AS requests, sum(duration_ms) AS duration, sum(status >= 400) AS errors, count(DISTINCT user_id) AS users`
    // The ids among which the records of a range of time lie: those of its minutes' spans.
    this.span = db.query<{ first: number | null; last: number | null }, [number, number]>(
      `SELECT min(first_id) AS first, max(last_id) AS last FROM analytics_spans WHERE minute >= ? AND minute <= ?`,
    )
    // Minute series: the records themselves, a range of ids filtered by time.
    this.minuteBuckets = db.query<BucketRow, [number, number, number, number]>(
      `SELECT (ts - ?1) / ${MINUTE} AS bucket, ${perBucket} FROM analytics_records
       WHERE id >= ?3 AND id <= ?4 AND ts >= ?1 AND ts < ?2 GROUP BY bucket`,
    )
    const perRollup = `sum(requests) AS requests, sum(duration_sum) AS duration, sum(failures) AS errors, count(DISTINCT nullif(user_id, '')) AS users`
    this.hourBuckets = db.query<BucketRow, [number, number]>(`SELECT hour - ?1 AS bucket, ${perRollup} ${inHours} GROUP BY hour`)
    this.dayBuckets = db.query<BucketRow, [number, number]>(`SELECT (hour - ?1) / 24 AS bucket, ${perRollup} ${inHours} GROUP BY bucket`)
    // Export pages: in the order records were stored, continuing after the last id sent (the
    // view analytics_requests gives the records their strings).
    this.page = db.query<
      { id: number; ts: number; method: string; route: string; status: number; durationMs: number; userId: string | null; tokens: number; model: string | null },
      [number, number, number, number, number]
    >(
      `SELECT id, ts, method, route, status, duration_ms AS durationMs, user_id AS userId, prompt_tokens + completion_tokens AS tokens, model
       FROM analytics_requests WHERE id > ?3 AND id <= ?4 AND ts >= ?1 AND ts < ?2
       ORDER BY id LIMIT ?5`,
    )
  }

  /** The dashboard over the last 24 hourly buckets (the current hour and the 23 before it). */
  dashboard(now = Date.now()) {
    const window = timeWindow('24h', now)
    const hours: [number, number] = [window.start / HOUR, window.end / HOUR]
    const usage = this.usage.all(...hours)
    const parts = {
      window,
      uptime: Math.floor((Date.now() - this.startedAt) / 1000),
      totals: this.totals.get(...hours)!,
      byHour: this.byHour.all(...hours),
      activeUsers: this.activeUsers.get(...hours)!.users,
      endpoints: this.endpoints.all(...hours),
      models: this.models.all(...hours),
      usage,
    }
    // The accounts may be in PostgreSQL: their emails then arrive later.
    const emails = usage.length ? this.emailsOf(usage.map((row) => row.userId)) : new Map<string, string>()
    return andThen(emails, (found) => dashboardOf({ ...parts, emails: found }))
  }

  /** Metric series over a range's buckets; every bucket present, empty ones 0. */
  metrics(range: TimeRange, metric?: MetricName, now = Date.now()) {
    const window = timeWindow(range, now)
    return metricsOf(range, window, this.buckets(window), metric)
  }

  private buckets(window: Window): BucketRow[] {
    if (window.size === MINUTE) {
      const ids = this.idsOf(window.start, window.end)
      return ids ? this.minuteBuckets.all(window.start, window.end, ...ids) : []
    }
    const hours: [number, number] = [window.start / HOUR, window.end / HOUR]
    return window.size === HOUR ? this.hourBuckets.all(...hours) : this.dayBuckets.all(...hours)
  }

  /** The first and last id among which the records of [start, end) lie, or null when there are none. */
  private idsOf(start: number, end: number): [number, number] | null {
    const span = this.span.get(Math.floor(start / MINUTE), Math.floor((end - 1) / MINUTE))
    return span?.first == null || span.last == null ? null : [span.first, span.last]
  }

  /**
   * The records of a range in the order they were stored, read a page at a time: time order,
   * except that a request still running when later ones were stored comes after them.
   */
  *exportRows(range: TimeRange, now = Date.now(), pageSize = 1000): Generator<ExportRow> {
    const window = timeWindow(range, now)
    const ids = this.idsOf(window.start, window.end)
    if (!ids) return
    let after = ids[0] - 1
    for (;;) {
      const rows = this.page.all(window.start, window.end, after, ids[1], pageSize)
      for (const row of rows) yield exportRowOf(row)
      if (rows.length < pageSize) return
      after = rows[rows.length - 1]!.id
    }
  }
}

function zeros(window: Window): number[] {
  return new Array<number>(window.count).fill(0)
}

/** What the dashboard is computed from: the rollup's figures over its 24 hours (either backend reads them). */
export interface DashboardParts {
  window: Window
  uptime: number
  totals: Totals & { modelRequests: number; modelDuration: number }
  byHour: { hour: number; requests: number }[]
  activeUsers: number
  endpoints: ({ method: string; route: string } & Totals)[]
  models: ({ model: string } & Totals)[]
  usage: { userId: string; requests: number; promptTokens: number; completionTokens: number }[]
  emails: Map<string, string>
}

/** The dashboard response from its figures. */
export function dashboardOf({ window, uptime, totals, byHour: hourRows, activeUsers, endpoints, models, usage, emails }: DashboardParts) {
  const firstHour = window.start / HOUR
  const successful = totals.requests - totals.failures
  const averageResponseTime = totals.requests ? Math.round(totals.duration / totals.requests) : 0
  const errorRate = totals.requests ? totals.failures / totals.requests : 0
  const byHour = new Array<number>(window.count).fill(0)
  for (const row of hourRows) byHour[row.hour - firstHour] = row.requests
  return {
    overview: {
      uptime,
      totalRequests: totals.requests,
      successRate: `${(totals.requests ? (successful / totals.requests) * 100 : 100).toFixed(1)}%`,
      averageResponseTime,
      activeUsers,
      healthScore: healthScore(errorRate, averageResponseTime),
    },
    requests: {
      total: totals.requests,
      successful,
      failed: totals.failures,
      byHour,
      topEndpoints: endpoints.map((row) => ({
        endpoint: `${row.method} ${row.route}`,
        requests: row.requests,
        averageTime: Math.round(row.duration / row.requests),
        errorRate: row.failures / row.requests,
      })),
    },
    ai: {
      totalTokens: totals.tokens,
      // Self-hosted models cost nothing per token; an upstream's prices are not known here.
      totalCost: 0,
      averageResponseTime: totals.modelRequests ? Math.round(totals.modelDuration / totals.modelRequests) : 0,
      topModels: models.map((row) => ({ model: row.model, requests: row.requests, tokens: row.tokens, cost: 0 })),
    },
    usage: usage.map((row) => ({
      userId: row.userId,
      email: emails.get(row.userId) ?? null,
      requests: row.requests,
      tokens: row.promptTokens + row.completionTokens,
      promptTokens: row.promptTokens,
      completionTokens: row.completionTokens,
    })),
  }
}

/** Metric series from the rows of a window's buckets; every bucket present, empty ones 0. */
export function metricsOf(range: TimeRange, window: Window, rows: BucketRow[], metric?: MetricName) {
  const series = { requests: zeros(window), performance: zeros(window), errors: zeros(window), users: zeros(window) }
  for (const row of rows) {
    if (row.bucket < 0 || row.bucket >= window.count) continue
    series.requests[row.bucket] = row.requests
    series.performance[row.bucket] = row.requests ? round2(row.duration / row.requests) : 0
    series.errors[row.bucket] = row.errors
    series.users[row.bucket] = row.users
  }
  const timestamps = bucketStarts(window)
  const names = metric ? [metric] : METRICS
  return {
    timeRange: range,
    metrics: Object.fromEntries(names.map((name) => [name, { timestamps, values: series[name] }])) as Record<string, { timestamps: string[]; values: number[] }>,
  }
}

/** A stored record as the export writes it. */
export function exportRowOf(row: { ts: number; method: string; route: string; status: number; durationMs: number; userId: string | null; tokens: number; model: string | null }): ExportRow {
  return {
    timestamp: new Date(row.ts).toISOString(),
    method: row.method,
    route: row.route,
    status: row.status,
    durationMs: row.durationMs,
    userId: row.userId,
    tokens: row.tokens,
    model: row.model,
  }
}
