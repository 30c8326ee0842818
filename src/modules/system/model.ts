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
  workers: t.Optional(
    t.Object(
      {
        size: t.Integer({ description: 'Workers at most (UAGENT_WORKERS)' }),
        started: t.Integer({ description: 'Workers running now (they start as work comes)' }),
        busy: t.Integer({ description: 'Workers running a task' }),
        queued: t.Integer({ description: 'Tasks waiting for a worker' }),
        queueLimit: t.Integer({ description: 'Waiting tasks beyond which work is refused with 503 BUSY (UAGENT_WORK_QUEUE)' }),
        completed: t.Integer({ description: 'Tasks finished since start' }),
        failed: t.Integer({ description: 'Tasks that ended with an error of their own (unreadable input…)' }),
        crashed: t.Integer({ description: 'Tasks whose worker died (each a 500; the worker was replaced)' }),
        cancelled: t.Integer({ description: 'Tasks stopped because their request went away' }),
        heapBytes: t.Integer({ description: 'JavaScript heap of the started workers together (their WebAssembly and native model memory is in the process RSS, `memory`)' }),
      },
      { description: 'The worker pool of speech, text extraction and embedding' },
    ),
  ),
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
  vectorSearch: t.Optional(
    t.Object(
      {
        path: t.String({
          description:
            'What serves vector search: on SQLite `usearch` (collections of `annMinChunks` chunks or more through an approximate index, rescored exactly; smaller ones exactly) or `exact` (every collection exactly: the index library cannot load, or UAGENT_VECTOR_INDEX=off); on PostgreSQL `pgvector` or `in-memory`. Also `connections.vectorSearch` of /health.',
        }),
        reason: t.Optional(t.String({ description: 'Why the approximate index does not serve, when it does not' })),
        annMinChunks: t.Optional(t.Integer({ description: 'UAGENT_ANN_MIN_CHUNKS' })),
        indexes: t.Optional(t.Object({ ready: t.Integer(), building: t.Integer({ description: 'Being built, merged or checked, or about to be once their writes pause (their collections are searched exactly, or with the previous file and the vectors written since, meanwhile)' }) })),
        mappedBytes: t.Optional(t.Integer({ description: 'Index files mapped read-only (page cache, not heap)' })),
        pendingBytes: t.Optional(t.Integer({ description: 'Vectors written since their collection\'s index file, held in memory until the next one' })),
        cacheBytes: t.Integer({ description: 'The exact in-memory copy of vectors in use' }),
        cacheBudgetBytes: t.Integer({ description: 'Its budget, UAGENT_VECTOR_CACHE_MB' }),
        columns: t.Optional(
          t.Object(
            {
              ready: t.Integer({ description: 'Large collections whose int8 columns are in memory (within the budget above): a sparse query scans them instead of walking the index' }),
              loading: t.Integer({ description: 'Being read into memory in the background (searched through their index meanwhile)' }),
            },
            { description: 'Large collections\' int8 columns (SQLite; docs/knowledge-base.md, "At library scale")' },
          ),
        ),
      },
      { additionalProperties: true, description: 'The vector search path and its memory (docs/knowledge-base.md, "At library scale")' },
    ),
  ),
})
