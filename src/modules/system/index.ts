import { Elysia } from 'elysia'
import { authPlugin } from '../../core/auth'
import type { RateLimiter } from '../../core/rate-limit'
import type { AuthService } from '../auth/service'
import { ErrorResponse, HealthResponse, SystemInfoResponse } from './model'
import type { SystemService } from './service'

export function systemModule(system: SystemService, auth: AuthService, limiter: RateLimiter) {
  return new Elysia({ name: 'module:system', tags: ['System'] })
    .use(authPlugin(auth, limiter))
    // The schema is documented but not checked at run time on /health: validating the
    // response costs about 3 µs, a third of this probe's whole server-side budget.
    .get('/health', () => system.health(), {
      detail: {
        summary: 'Liveness, subsystem connections and enabled features (public)',
        security: [],
        responses: { 200: { description: 'HealthResponse', content: { 'application/json': { schema: HealthResponse as object } } } },
      },
    })
    .get('/system/info', () => system.info(), {
      auth: true,
      response: { 200: SystemInfoResponse, 401: ErrorResponse },
      detail: { summary: 'Version, runtime and declared limits' },
    })
}
