import { Elysia } from 'elysia'
import { authPlugin } from '../../core/auth'
import { AppError } from '../../core/errors'
import type { RateLimiter } from '../../core/rate-limit'
import type { AuthService } from '../auth/service'
import type { RequestAudit } from '../audit/context'
import { CsrfHeaders, errors, WebLoginRequest, WebLogoutResponse, WebSessionResponse } from './model'

export const SESSION_COOKIE = 'uagent_refresh'
export const CSRF_HEADER_VALUE = 'uagent-web'
const COOKIE_PATH = '/auth/web'
const COOKIE_MAX_AGE = 30 * 24 * 3600

export function secure(request: Request): boolean {
  return request.url.startsWith('https:') || request.headers.get('x-forwarded-proto') === 'https'
}

function sessionCookie(request: Request, value: string, maxAge: number): string {
  return `${SESSION_COOKIE}=${value}; Path=${COOKIE_PATH}; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${secure(request) ? '; Secure' : ''}`
}

/**
 * A cookie page scripts may read that says only "a session cookie was set": the page asks for a
 * refresh at load only when it is there, so a first visit makes no request bound to fail.
 */
export const HINT_COOKIE = 'uagent_signed_in'
function hintCookie(request: Request, maxAge: number): string {
  return `${HINT_COOKIE}=${maxAge ? '1' : ''}; Path=/; Max-Age=${maxAge}; SameSite=Strict${secure(request) ? '; Secure' : ''}`
}

/** The cookies of a signed-in browser (POST /auth/web/login sets them; so does the OpenID Connect callback). */
export function signedInCookies(request: Request, refreshToken: string): string[] {
  return [sessionCookie(request, refreshToken, COOKIE_MAX_AGE), hintCookie(request, COOKIE_MAX_AGE)]
}

export function cookieValue(request: Request, name: string): string | null {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const [key, ...rest] = part.trim().split('=')
    if (key === name) return rest.join('=') || null
  }
  return null
}

/**
 * A cookie travels with any request the browser makes, so each cookie request must prove it
 * comes from our own page: a custom header (a cross-site form cannot set one, and a cross-site
 * fetch with one needs a CORS preflight we never grant) and an Origin naming this very server.
 */
export function assertSameOrigin(request: Request): void {
  if (request.headers.get('x-requested-with') !== CSRF_HEADER_VALUE) {
    throw new AppError('FORBIDDEN', `Cookie requests must carry the header X-Requested-With: ${CSRF_HEADER_VALUE}`)
  }
  const origin = request.headers.get('origin')
  const host = request.headers.get('host') ?? new URL(request.url).host
  let originHost: string | null = null
  try {
    originHost = origin ? new URL(origin).host : null
  } catch {
    originHost = null
  }
  if (originHost !== host) throw new AppError('FORBIDDEN', 'Cookie requests must come from this server\'s own page (the Origin header does not match)')
  const site = request.headers.get('sec-fetch-site')
  if (site !== null && site !== 'same-origin') throw new AppError('FORBIDDEN', 'Cookie requests must come from this server\'s own page (Sec-Fetch-Site)')
}

/**
 * Sessions of the browser app: the refresh token lives in an HttpOnly, SameSite=Strict cookie
 * scoped to /auth/web, the access token is returned to the page (kept in memory). The bearer
 * routes of /auth are untouched.
 */
export function webSessionModule(auth: AuthService, limiter: RateLimiter, audit: RequestAudit) {
  return new Elysia({ name: 'module:web-session', prefix: '/auth/web', tags: ['Authentication'] })
    .use(authPlugin(auth, limiter))
    .post(
      '/login',
      async ({ body, request, set }) => {
        assertSameOrigin(request)
        const { refreshToken, ...session } = await audit.login(request, body.email, 'web', () => auth.login(body.email, body.password, body.mfaCode, request.headers.get('user-agent') ?? undefined))
        set.headers['set-cookie'] = signedInCookies(request, refreshToken) as unknown as string
        set.headers['cache-control'] = 'no-store'
        return session
      },
      {
        body: WebLoginRequest,
        headers: CsrfHeaders,
        response: { 200: WebSessionResponse, ...errors },
        detail: {
          summary: 'Web app sign-in: as POST /auth/login, but the refresh token is set as an HttpOnly, SameSite=Strict cookie (needs X-Requested-With: uagent-web and a same-origin Origin)',
          security: [],
        },
      },
    )
    .post(
      '/refresh',
      async ({ request, set }) => {
        assertSameOrigin(request)
        const token = cookieValue(request, SESSION_COOKIE)
        if (!token) throw new AppError('UNAUTHORIZED', 'No web session: sign in')
        const { refreshToken, ...session } = await auth.refresh(token)
        set.headers['set-cookie'] = [sessionCookie(request, refreshToken, COOKIE_MAX_AGE), hintCookie(request, COOKIE_MAX_AGE)] as unknown as string
        set.headers['cache-control'] = 'no-store'
        return session
      },
      {
        headers: CsrfHeaders,
        response: { 200: WebSessionResponse, ...errors },
        detail: {
          summary: 'Web app: a new access token from the session cookie (the cookie\'s refresh token is rotated; needs X-Requested-With: uagent-web and a same-origin Origin)',
          security: [],
        },
      },
    )
    .post(
      '/logout',
      async ({ principal, request, set }) => {
        if (principal.apiKeyId) throw new AppError('VALIDATION_ERROR', 'An API key has no web session to sign out of')
        await auth.revokeSession(principal.sessionId)
        audit.record(request, principal, { action: 'auth.logout', target: principal.user.id, details: { via: 'web', sessionId: principal.sessionId } })
        set.headers['set-cookie'] = [sessionCookie(request, '', 0), hintCookie(request, 0)] as unknown as string
        return { success: true, message: 'Signed out: the session is revoked and its cookie cleared' }
      },
      {
        auth: true,
        response: { 200: WebLogoutResponse, ...errors },
        detail: { summary: 'Web app sign-out: revokes the current session and clears its cookie' },
      },
    )
}
