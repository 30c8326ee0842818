import { t } from 'elysia'

const timeRange = () =>
  t.Union([t.Literal('1h'), t.Literal('24h'), t.Literal('7d'), t.Literal('30d')], {
    default: '24h',
    description: 'Range of buckets: 1h = 60 minutes, 24h = 24 hours, 7d = 168 hours, 30d = 30 days (UTC, aligned to the bucket size)',
  })

export const MetricsQuery = t.Object({
  timeRange: t.Optional(timeRange()),
  metric: t.Optional(
    t.Union([t.Literal('requests'), t.Literal('performance'), t.Literal('errors'), t.Literal('users')], {
      description: 'requests (count), performance (mean ms), errors (status >= 400), users (distinct); all four when omitted',
    }),
  ),
})

export const ExportQuery = t.Object({
  format: t.Optional(t.Union([t.Literal('json'), t.Literal('csv')], { default: 'json' })),
  timeRange: t.Optional(timeRange()),
})

export const DashboardResponse = t.Object({
  overview: t.Object({
    uptime: t.Integer({ description: 'Seconds since the server started' }),
    totalRequests: t.Integer(),
    successRate: t.String({ description: 'Share of requests with status < 400, e.g. "99.2%"' }),
    averageResponseTime: t.Integer({ description: 'Milliseconds' }),
    activeUsers: t.Integer({ description: 'Distinct users with requests in the last 24 hours' }),
    healthScore: t.Integer({ minimum: 0, maximum: 100 }),
  }),
  requests: t.Object({
    total: t.Integer(),
    successful: t.Integer(),
    failed: t.Integer({ description: 'Requests with status >= 400' }),
    byHour: t.Array(t.Integer(), { description: '24 hourly counts, oldest first, the last one the current hour (UTC)' }),
    topEndpoints: t.Array(
      t.Object({
        endpoint: t.String({ description: 'Method and route pattern, e.g. "GET /agents/task/:taskId" or "WS stream_chat"' }),
        requests: t.Integer(),
        averageTime: t.Integer({ description: 'Milliseconds' }),
        errorRate: t.Number({ minimum: 0, maximum: 1 }),
      }),
      { maxItems: 10 },
    ),
  }),
  ai: t.Object({
    totalTokens: t.Integer(),
    totalCost: t.Number({ description: 'Always 0: self-hosted models cost nothing per token' }),
    averageResponseTime: t.Integer({ description: 'Milliseconds, over requests that called a model' }),
    topModels: t.Array(t.Object({ model: t.String(), requests: t.Integer(), tokens: t.Integer(), cost: t.Number() }), { maxItems: 10 }),
  }),
  usage: t.Array(
    t.Object({
      userId: t.String(),
      email: t.Nullable(t.String()),
      requests: t.Integer(),
      tokens: t.Integer(),
      promptTokens: t.Integer(),
      completionTokens: t.Integer(),
    }),
    { description: 'Extension: requests and tokens per user over the same 24 hours, most requests first (up to 100 users)' },
  ),
  feedback: t.Optional(
    t.Array(
      t.Object({
        model: t.String(),
        up: t.Integer({ description: 'Replies of this model rated up' }),
        down: t.Integer({ description: 'Replies of this model rated down' }),
        upShare: t.Number({ description: 'up / (up + down), 0..1' }),
      }),
      { description: 'Ratings of replies (every one kept, not only the last 24 hours), per model' },
    ),
  ),
  feedbackByAssistant: t.Optional(
    t.Array(
      t.Object({
        assistant: t.Object({ id: t.String(), name: t.String() }),
        up: t.Integer(),
        down: t.Integer(),
        upShare: t.Number({ description: 'up / (up + down), 0..1' }),
      }),
      { description: 'The same, per assistant (replies that came from one)' },
    ),
  ),
})

export const MetricsResponse = t.Object({
  timeRange: t.String(),
  metrics: t.Record(
    t.String(),
    t.Object({
      timestamps: t.Array(t.String({ format: 'date-time' }), { description: 'Bucket starts' }),
      values: t.Array(t.Number()),
    }),
  ),
})
