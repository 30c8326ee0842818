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
 * The caller is checked in the transform stage, before the body, query and params are
 * validated: a request without a valid token is 401 (or 403) whatever else is wrong with it,
 * and a rejected input from a known caller still carries its X-RateLimit-* headers.
 * The per-user rate limit is counted here, once the caller is known.
 */
export function authPlugin(auth: AuthService, limiter: RateLimiter) {
  // Principals found in the transform stage, handed to the handler by resolve.
  const principals = new WeakMap<Request, Principal>()
  // Hooks destructure what they use (Elysia builds only that part of the context), read the one
  // header from `request` (`headers` would copy them all) and stay synchronous (no promise per request).
  function authenticate({ request, set }: { request: Request; set: { headers: Record<string, unknown> } }, adminOnly: boolean) {
    const principal = auth.authenticate(bearerToken(request.headers.get('authorization')))
    Object.assign(set.headers, rateLimitHeaders(limiter.hit(`user:${principal.user.id}`)))
    if (adminOnly && !principal.isAdmin) throw new AppError('FORBIDDEN', 'This operation requires the admin role')
    principals.set(request, principal)
  }
  return new Elysia({ name: 'auth' }).macro({
    auth: {
      transform: ({ request, set }) => authenticate({ request, set }, false),
      resolve: ({ request }) => ({ principal: principals.get(request)! }),
    },
    admin: {
      transform: ({ request, set }) => authenticate({ request, set }, true),
      resolve: ({ request }) => ({ principal: principals.get(request)! }),
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
