import { Elysia } from 'elysia'
import { authPlugin } from '../../../core/auth'
import type { RateLimiter } from '../../../core/rate-limit'
import type { AuthService } from '../../auth/service'
import { ErrorResponse } from '../../system/model'
import { IngestJob, JobParams, JobsQuery, JobsResponse } from './model'
import type { IngestJobService } from './service'

const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse, 429: ErrorResponse, 503: ErrorResponse }

/** Ingestion jobs: uploads that go on after their 202 (OCR, slow files). */
export function ingestJobsModule(jobs: IngestJobService, auth: AuthService, limiter: RateLimiter) {
  return new Elysia({ name: 'module:rag-jobs', prefix: '/rag/jobs', tags: ['RAG'] })
    .use(authPlugin(auth, limiter))
    .get('/', ({ query, principal }) => jobs.list(principal.user.id, { limit: query.limit ?? 20, offset: query.offset ?? 0, status: query.status }), {
      auth: true,
      query: JobsQuery,
      response: { 200: JobsResponse, ...errors },
      detail: { summary: "The caller's ingestion jobs, newest first (filter by status)" },
    })
    .get('/:id', ({ params, principal }) => jobs.get(principal.user.id, params.id), {
      auth: true,
      params: JobParams,
      response: { 200: IngestJob, ...errors },
      detail: { summary: 'One ingestion job: status, progress 0..100, and each file with its pages read' },
    })
    .delete('/:id', ({ params, principal }) => jobs.cancel(principal.user.id, params.id), {
      auth: true,
      params: JobParams,
      response: { 200: IngestJob, 409: ErrorResponse, ...errors },
      detail: { summary: 'Cancel a queued or running ingestion job: its work stops (files already ingested stay); 409 once it has ended' },
    })
}
