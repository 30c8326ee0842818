import { Elysia } from 'elysia'
import { authPlugin } from '../../core/auth'
import type { RateLimiter } from '../../core/rate-limit'
import type { AuthService } from '../auth/service'
import { ErrorResponse } from '../system/model'
import { AuditQuery, AuditResponse } from './model'
import type { AuditLog } from './service'

const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 429: ErrorResponse }

/** The audit log, read by admins. Append-only: no route changes or deletes an event. */
export function auditModule(audit: AuditLog, auth: AuthService, limiter: RateLimiter) {
  return new Elysia({ name: 'module:audit', prefix: '/admin/audit', tags: ['Administration'] })
    .use(authPlugin(auth, limiter))
    .get('', ({ query }) => audit.list(query), {
      admin: true,
      query: AuditQuery,
      response: { 200: AuditResponse, ...errors },
      detail: { summary: 'The audit log, newest first, filtered by time, actor, action (group.* for a family) and target; page with nextCursor (admin)' },
    })
}
