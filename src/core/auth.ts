import { Elysia } from 'elysia'
import type { AuthService, Principal } from '../modules/auth/service'
import { AppError } from './errors'
import { type RateLimiter, rateLimitHeaders } from './rate-limit'

export type { Principal }

function bearerToken(header: string | null): string {
  if (!header) throw new AppError('UNAUTHORIZED', 'Missing bearer token: send Authorization: Bearer <accessToken>')
  // The common exact form without a regular expression; anything else goes through the full match.
  if (header.startsWith('Bearer ') && header.indexOf(' ', 7) === -1 && header.length > 7) return header.slice(7)
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header)
  if (!match) throw new AppError('UNAUTHORIZED', 'Malformed Authorization header: expected "Bearer <accessToken>"')
  return match[1]!
}

/**
 * Bearer authentication as a named plugin. Routes opt in with `{ auth: true }` (any user)
 * or `{ admin: true }` (403 FORBIDDEN for non-admins) and receive `principal`.
 * The per-user rate limit is counted here, once the caller is known.
 */
export function authPlugin(auth: AuthService, limiter: RateLimiter) {
  // Synchronous, and reading the one header from `request`: destructuring `headers` would make
  // Elysia copy every request header into an object, and an async resolve costs a promise per request.
  function resolvePrincipal(request: Request, set: { headers: Record<string, unknown> }) {
    const principal = auth.authenticate(bearerToken(request.headers.get('authorization')))
    Object.assign(set.headers, rateLimitHeaders(limiter.hit(`user:${principal.user.id}`)))
    return principal
  }
  return new Elysia({ name: 'auth' }).macro({
    auth: {
      resolve({ request, set }) {
        return { principal: resolvePrincipal(request, set) }
      },
    },
    admin: {
      resolve({ request, set }) {
        const principal = resolvePrincipal(request, set)
        if (!principal.isAdmin) throw new AppError('FORBIDDEN', 'This operation requires the admin role')
        return { principal }
      },
    },
  })
}

/**
 * The user a request acts for: the caller, or — for admins only — the `userId` they name.
 * Anyone else naming another user's id gets 403.
 */
export function actingUserId(principal: Principal, userId: string | null | undefined): string {
  if (!userId || userId === principal.user.id) return principal.user.id
  if (!principal.isAdmin) throw new AppError('FORBIDDEN', 'Only an admin may act for another userId')
  return userId
}
