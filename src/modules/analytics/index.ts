import { timingSafeEqual } from 'node:crypto'
import { Elysia } from 'elysia'
import { authenticateRequest, authPlugin, bearerToken } from '../../core/auth'
import type { RateLimiter } from '../../core/rate-limit'
import type { AuthService } from '../auth/service'
import { ErrorResponse } from '../system/model'
import { exportStream, firstRead } from './export'
import { DashboardResponse, ExportQuery, MetricsQuery, MetricsResponse } from './model'
import type { PrometheusMetrics } from './prometheus'
import type { RequestRecorder } from './recorder'
import type { Analytics } from './service.postgres'

const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 429: ErrorResponse }

/** Documented responses of routes that answer a body other than JSON (not checked at run time). */
function documented(success: { description: string; contentType: string }, statuses: number[]) {
  return {
    200: { description: success.description, content: { [success.contentType]: { schema: { type: 'string' as const, format: 'binary' } } } },
    ...Object.fromEntries(statuses.map((status) => [status, { description: 'ErrorResponse', content: { 'application/json': { schema: ErrorResponse as object } } }])),
  }
}

function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

export interface AnalyticsDeps {
  /** SQLite's (answers at once) or PostgreSQL's (answers with promises). */
  analytics: Analytics
  recorder: RequestRecorder
  prometheus: PrometheusMetrics
  auth: AuthService
  limiter: RateLimiter
  /** Bearer token a Prometheus scraper may use instead of an admin's (UAGENT_METRICS_TOKEN). */
  metricsToken?: string
  /** Replies rated up and down per model (conversation feedback), for the dashboard. */
  feedback?: () => Promise<{ model: string; up: number; down: number }[]>
  /** The same per assistant (replies that came from one). */
  feedbackByAssistant?: () => Promise<{ assistant: { id: string; name: string }; up: number; down: number }[]>
}

/** `/analytics/*` (admin) and the Prometheus `GET /metrics` (admin or the scrape token). */
export function analyticsModule({ analytics, recorder, prometheus, auth, limiter, metricsToken, feedback, feedbackByAssistant }: AnalyticsDeps) {
  const share = (up: number, down: number) => (up + down ? Math.round((up / (up + down)) * 1000) / 1000 : 0)
  return new Elysia({ name: 'module:analytics', tags: ['Analytics'] })
    .use(authPlugin(auth, limiter))
    .get(
      '/analytics/dashboard',
      async () => {
        await recorder.settle()
        const dashboard = await analytics.dashboard()
        if (!feedback) return dashboard
        // Every rating kept (not the last 24 hours): the share of replies rated up, per model.
        const rated = (await feedback()).map((row) => ({ ...row, upShare: share(row.up, row.down) }))
        const byAssistant = feedbackByAssistant ? (await feedbackByAssistant()).map((row) => ({ ...row, upShare: share(row.up, row.down) })) : undefined
        return { ...dashboard, feedback: rated, ...(byAssistant ? { feedbackByAssistant: byAssistant } : {}) }
      },
      {
        admin: true,
        response: { 200: DashboardResponse, ...errors },
        detail: { summary: 'Dashboard over the last 24 hours: totals, top endpoints, models, per-user usage; and the ratings of replies per model (admin)' },
      },
    )
    .get(
      '/analytics/metrics',
      async ({ query }) => {
        await recorder.settle()
        return await analytics.metrics(query.timeRange ?? '24h', query.metric)
      },
      {
        admin: true,
        query: MetricsQuery,
        response: { 200: MetricsResponse, ...errors },
        detail: { summary: 'Metric series in UTC buckets: requests, performance, errors, users (admin)' },
      },
    )
    .get(
      '/analytics/export',
      async ({ query, set }) => {
        await recorder.settle()
        const range = query.timeRange ?? '24h'
        const format = query.format ?? 'json'
        const rows = await firstRead(analytics.exportRows(range))
        return new Response(exportStream(rows, format), {
          headers: {
            ...(set.headers as Record<string, string>),
            'content-type': 'application/octet-stream',
            'content-disposition': `attachment; filename="analytics-${range}.${format}"`,
          },
        })
      },
      {
        admin: true,
        query: ExportQuery,
        detail: {
          summary: 'Download the recorded requests of a range as JSON or CSV, streamed (admin)',
          responses: documented({ description: 'JSON array or CSV (RFC 4180, header row) of records', contentType: 'application/octet-stream' }, [400, 401, 403, 429]),
        },
      },
    )
    .get(
      '/metrics',
      async ({ set }) => {
        await recorder.settle()
        const text = await prometheus.render()
        return new Response(text, { headers: { ...(set.headers as Record<string, string>), 'content-type': prometheus.contentType } })
      },
      {
        // An admin's access token, or the scrape token; anonymous callers get 401, other users 403.
        transform: auth.asynchronous
          ? async ({ request, set }) => {
              const header = request.headers.get('authorization')
              if (metricsToken && header && sameSecret(bearerToken(header), metricsToken)) return
              await authenticateRequest(auth, limiter, { request, set }, true)
            }
          : ({ request, set }) => {
              const header = request.headers.get('authorization')
              if (metricsToken && header && sameSecret(bearerToken(header), metricsToken)) return
              authenticateRequest(auth, limiter, { request, set }, true)
            },
        detail: {
          summary: 'Prometheus metrics in the text exposition format (admin token or UAGENT_METRICS_TOKEN)',
          tags: ['Analytics'],
          responses: documented({ description: 'Prometheus text exposition format 0.0.4', contentType: 'text/plain' }, [401, 403, 429]),
        },
      },
    )
}
