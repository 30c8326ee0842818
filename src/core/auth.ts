import { Elysia } from 'elysia'
import type { AuthService, Principal } from '../modules/auth/service'
import { AppError } from './errors'
import { type RateLimiter, rateLimitHeaders } from './rate-limit'

export type { Principal }

function bearerToken(header: string | undefined): string {
  if (!header) throw new AppError('UNAUTHORIZED', 'Missing bearer token: send Authorization: Bearer <accessToken>')
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
  async function resolvePrincipal(headers: Record<string, string | undefined>, set: { headers: Record<string, unknown> }) {
    const principal = await auth.authenticate(bearerToken(headers.authorization))
    Object.assign(set.headers, rateLimitHeaders(limiter.hit(`user:${principal.user.id}`)))
    return principal
  }
  return new Elysia({ name: 'auth' }).macro({
    auth: {
      async resolve({ headers, set }) {
        return { principal: await resolvePrincipal(headers, set) }
      },
    },
    admin: {
      async resolve({ headers, set }) {
        const principal = await resolvePrincipal(headers, set)
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
