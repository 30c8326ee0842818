import { Elysia } from 'elysia'
import { AppError } from './errors'
import { type RateDecision, type RateLimiter, rateLimitHeaders } from './rate-limit'

/**
 * What the auth macro needs to know of a caller. The auth module's Principal (its user, session
 * and API key) is one; core names only this shape, so it never imports from the modules above it.
 */
export interface Caller {
  user: { id: string }
  isAdmin: boolean
}

/** Turns a bearer token into its caller, or throws an AppError (401). The auth module's AuthService is one. */
export interface TokenAuthenticator<P extends Caller = Caller> {
  /** A promise only when `asynchronous` (credentials kept in PostgreSQL). */
  authenticate(token: string): P | Promise<P>
  /** Whether authenticate may answer with a promise; read once, when the auth plugin is built. */
  readonly asynchronous?: boolean
}

/** The token of an `Authorization: Bearer <token>` header; 401 when it is missing or malformed. */
export function bearerToken(header: string | null): string {
  if (!header) throw new AppError('UNAUTHORIZED', 'Missing bearer token: send Authorization: Bearer <accessToken>')
  // The common exact form without a regular expression; anything else goes through the full match.
  if (header.startsWith('Bearer ') && header.indexOf(' ', 7) === -1 && header.length > 7) return header.slice(7)
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header)
  if (!match) throw new AppError('UNAUTHORIZED', 'Malformed Authorization header: expected "Bearer <accessToken>"')
  return match[1]!
}

// Principals found in the transform stage, handed to the handler by resolve (and read by the
// request recorder, which also sees the caller of a request refused with 403). Kept on the request
// itself under a symbol of this module's own (no other code can name it): a WeakMap took a
// hash-table entry per request, set and looked up at a cache miss's cost, and freed only by the
// garbage collector.
const PRINCIPAL = Symbol('principal')
type WithPrincipal = Request & { [PRINCIPAL]?: Caller }

/** The authenticated caller of a request, once the auth macro has checked its token. */
export function principalOf<P extends Caller = Caller>(request: Request): P | undefined {
  return (request as WithPrincipal)[PRINCIPAL] as P | undefined
}

/**
 * Checks a request's bearer token (401), counts it against the caller's rate limit (429) and,
 * with `adminOnly`, requires the admin role (403). The caller is then principalOf(request).
 */
export function authenticateRequest<P extends Caller>(
  auth: TokenAuthenticator<P>,
  limiter: RateLimiter,
  { request, set }: { request: Request; set: { headers: Record<string, unknown> } },
  adminOnly: boolean,
): P | Promise<P> {
  // Reads the one header from `request` (`headers` would copy them all) and stays synchronous
  // unless the authenticator answers later (an API key in PostgreSQL).
  const found = auth.authenticate(bearerToken(request.headers.get('authorization')))
  const counted = (principal: P, decision: RateDecision): P => {
    Object.assign(set.headers, rateLimitHeaders(decision))
    if (adminOnly && !principal.isAdmin) throw new AppError('FORBIDDEN', 'This operation requires the admin role')
    return principal
  }
  const admit = (principal: P): P | Promise<P> => {
    ;(request as WithPrincipal)[PRINCIPAL] = principal
    // The rate limit answers later only when replicas share it (Redis).
    const decision = limiter.hit(`user:${principal.user.id}`)
    return decision instanceof Promise ? decision.then((counts) => counted(principal, counts)) : counted(principal, decision)
  }
  return found instanceof Promise ? found.then(admit) : admit(found)
}

/**
 * Bearer authentication as a named plugin. Routes opt in with `{ auth: true }` (any user)
 * or `{ admin: true }` (403 FORBIDDEN for non-admins) and receive `principal`.
 * The caller is checked in the transform stage, before the body, query and params are
 * validated: a request without a valid token is 401 (or 403) whatever else is wrong with it,
 * and a rejected input from a known caller still carries its X-RateLimit-* headers.
 * The per-user rate limit is counted here, once the caller is known.
 */
export function authPlugin<P extends Caller>(auth: TokenAuthenticator<P>, limiter: RateLimiter) {
  // Hooks destructure what they use: Elysia builds only that part of the context.
  const authenticate = (context: { request: Request; set: { headers: Record<string, unknown> } }, adminOnly: boolean) => {
    authenticateRequest(auth, limiter, context, adminOnly)
  }
  // An authenticator that answers later (credentials in PostgreSQL), or a rate limit shared by
  // replicas (Redis), gets awaited transforms.
  if (auth.asynchronous || limiter.asynchronous) {
    return new Elysia({ name: 'auth' }).macro({
      auth: {
        transform: async ({ request, set }) => {
          await authenticateRequest(auth, limiter, { request, set }, false)
        },
        resolve: ({ request }) => ({ principal: principalOf<P>(request)! }),
      },
      admin: {
        transform: async ({ request, set }) => {
          await authenticateRequest(auth, limiter, { request, set }, true)
        },
        resolve: ({ request }) => ({ principal: principalOf<P>(request)! }),
      },
    })
  }
  // The transforms are written as blocks on purpose: Elysia reads a hook's source to guess whether
  // it is async, and takes one whose arrow returns a call (`=> authenticate(…)`) for async. It then
  // awaits it, so every authenticated request's handler returned a pending promise (a microtask
  // more, and Bun waiting on it), though authentication is synchronous.
  return new Elysia({ name: 'auth' }).macro({
    auth: {
      transform: ({ request, set }) => {
        authenticate({ request, set }, false)
      },
      resolve: ({ request }) => ({ principal: principalOf<P>(request)! }),
    },
    admin: {
      transform: ({ request, set }) => {
        authenticate({ request, set }, true)
      },
      resolve: ({ request }) => ({ principal: principalOf<P>(request)! }),
    },
  })
}

/**
 * The user a request acts for: the caller, or — for admins only — the `userId` they name.
 * Anyone else naming another user's id gets 403.
 */
export function actingUserId(principal: Caller, userId: string | null | undefined): string {
  if (!userId || userId === principal.user.id) return principal.user.id
  if (!principal.isAdmin) throw new AppError('FORBIDDEN', 'Only an admin may act for another userId')
  return userId
}
