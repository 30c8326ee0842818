import { Elysia } from 'elysia'
import { authPlugin } from '../../core/auth'
import type { RateLimiter } from '../../core/rate-limit'
import type { AuthService } from '../auth/service'
import { ErrorResponse, HealthResponse, SystemInfoResponse } from './model'
import type { SystemService } from './service'

export function systemModule(system: SystemService, auth: AuthService, limiter: RateLimiter) {
  return new Elysia({ name: 'module:system', tags: ['System'] })
    .use(authPlugin(auth, limiter))
    .get('/health', () => system.health(), {
      response: { 200: HealthResponse },
      detail: { summary: 'Liveness, subsystem connections and enabled features (public)', security: [] },
    })
    .get('/system/info', () => system.info(), {
      auth: true,
      response: { 200: SystemInfoResponse, 401: ErrorResponse },
      detail: { summary: 'Version, runtime and declared limits' },
    })
}
