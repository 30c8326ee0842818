import { t } from 'elysia'

export const ErrorResponse = t.Object(
  {
    error: t.Boolean(),
    message: t.String(),
    code: t.String(),
    timestamp: t.String({ format: 'date-time' }),
    requestId: t.String(),
  },
  { description: 'Every non-2xx response' },
)

export const HealthResponse = t.Object({
  status: t.String({ description: '"healthy" or "degraded"' }),
  reason: t.Optional(t.String({ description: 'Why the server is degraded (absent when healthy)' })),
  uptime: t.Integer({ description: 'Seconds since start' }),
  memory: t.String({ description: 'Resident set size, e.g. "84.2 MB"' }),
  connections: t.Record(t.String(), t.String()),
  features: t.Object({ rag: t.Boolean(), voice: t.Boolean(), plugins: t.Boolean(), multiAgent: t.Boolean() }),
  models: t.Object(
    { embedder: t.String(), generator: t.String() },
    { description: 'Ids of the active engines, e.g. builtin/hash-embed-384, a model folder, or the upstream model' },
  ),
  storage: t.Object({
    status: t.String({ description: '"ok", "low" (below UAGENT_MIN_FREE_MB) or "full" (writes fail)' }),
    freeBytes: t.Nullable(t.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Free bytes of the data dir; null for an in-memory server' })),
  }),
})

export const SystemInfoResponse = t.Object({
  version: t.String(),
  nodeVersion: t.String(),
  platform: t.String(),
  architecture: t.String(),
  environment: t.String(),
  features: t.Array(t.String()),
  limits: t.Object({
    maxRequestSize: t.String(),
    rateLimit: t.Object({ window: t.Integer({ description: 'Seconds' }), max: t.Integer() }),
  }),
})
