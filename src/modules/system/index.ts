import { Elysia } from 'elysia'
import { authPlugin } from '../../core/auth'
import type { RateLimiter } from '../../core/rate-limit'
import { CorsPolicy, SECURITY_HEADERS } from '../../core/headers'
import type { AuthService } from '../auth/service'
import { ErrorResponse, HealthResponse, SystemInfoResponse } from './model'
import type { SystemService } from './service'

/**
 * `GET /health`, mounted ahead of the HTTP core's hooks: monitors and load balancers poll it
 * hard, so it answers its cached document with its own X-Request-Id and skips the hook chain
 * (rate limiting exempts it anyway, it reads no body and cannot fail). Its schema is documented
 * but not re-validated on every response.
 */
function withCors(headers: Headers, cors: Record<string, string>): Headers {
  for (const [name, value] of Object.entries(cors)) headers.set(name, value)
  return headers
}

export function healthModule(system: SystemService, corsOrigins: string[] = []) {
  const cors = new CorsPolicy(corsOrigins)
  // One Headers made up front and copied per response: cheaper than a fresh object of eight
  // headers converted for every poll (~0.2 µs a request).
  const template = new Headers({ ...SECURITY_HEADERS, 'content-type': 'application/json' })
  const headers = () => {
    const copy = new Headers(template)
    copy.set('x-request-id', crypto.randomUUID())
    return copy
  }
  return new Elysia({ name: 'module:health', tags: ['System'] }).get(
    '/health',
    system.checksRemote
      ? async ({ request }: { request: Request }) => new Response(await system.healthJsonChecked(), { headers: withCors(headers(), cors.headersFor(request.headers.get('origin'))) })
      : cors.enabled
        ? ({ request }: { request: Request }) => new Response(system.healthJson(), { headers: withCors(headers(), cors.headersFor(request.headers.get('origin'))) })
        : () => new Response(system.healthJson(), { headers: headers() }),
    {
      detail: {
        summary: 'Liveness, subsystem connections and enabled features (public)',
        security: [],
        responses: { 200: { description: 'HealthResponse', content: { 'application/json': { schema: HealthResponse as object } } } },
      },
    },
  )
}

export function systemModule(system: SystemService, auth: AuthService, limiter: RateLimiter) {
  return new Elysia({ name: 'module:system', tags: ['System'] })
    .use(authPlugin(auth, limiter))
    .get('/system/info', () => system.info(), {
      auth: true,
      response: { 200: SystemInfoResponse, 401: ErrorResponse },
      detail: { summary: 'Version, runtime and declared limits' },
    })
}
