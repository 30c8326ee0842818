import { Elysia } from 'elysia'
import { authPlugin } from '../../core/auth'
import { AppError } from '../../core/errors'
import type { RateLimiter } from '../../core/rate-limit'
import { LoginResponse } from '../auth/model'
import type { RequestAudit } from '../audit/context'
import type { AuthService } from '../auth/service'
import { cookieValue, secure, signedInCookies } from '../web/session'
import {
  DeviceDecisionResponse,
  DeviceRequestView,
  DeviceStartRequest,
  DeviceStartResponse,
  DeviceTokenRequest,
  errors,
  OidcCallbackQuery,
  OidcLoginQuery,
  ProvidersResponse,
  UserCodeParams,
} from './model'
import { SignInError } from './oidc'
import type { SsoService } from './service'

const STATE_COOKIE = 'uagent_oidc_state'
const STATE_COOKIE_PATH = '/auth/oidc'

/**
 * Lax, not Strict: the provider's redirect back is a cross-site navigation, and the cookie must
 * come with it. It holds only the state, which binds the callback to this browser.
 */
function stateCookie(request: Request, value: string, maxAge: number): string {
  return `${STATE_COOKIE}=${value}; Path=${STATE_COOKIE_PATH}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure(request) ? '; Secure' : ''}`
}

/** How a redirect is documented in /openapi/json: no body, a Location header. */
const redirectResponse = (description: string) => ({
  302: { description, headers: { Location: { description: 'Where the browser goes next', schema: { type: 'string' as const } } } },
})

/** Back to the web app with a message its sign-in page shows. */
const withError = (message: string) => `/app?sso_error=${encodeURIComponent(message)}`

function redirect(location: string, cookies: string[] = []): Response {
  const headers = new Headers({ location, 'cache-control': 'no-store' })
  for (const cookie of cookies) headers.append('set-cookie', cookie)
  return new Response(null, { status: 302, headers })
}


/** Single sign-on routes: the providers, OpenID Connect sign-in, and the CLI's device codes. */
export function ssoModule(sso: SsoService, auth: AuthService, limiter: RateLimiter, audit: RequestAudit, log: (line: string) => void) {
  return new Elysia({ name: 'module:sso', prefix: '/auth', tags: ['Authentication'] })
    .use(authPlugin(auth, limiter))
    .get('/providers', () => sso.providers(), {
      response: { 200: ProvidersResponse, ...errors },
      detail: { summary: 'How people sign in here: password form, OpenID Connect provider, LDAP (public)', security: [] },
    })
    .get(
      '/oidc/login',
      async ({ request, query }) => {
        if (!sso.oidc) return redirect(withError('Single sign-on with OpenID Connect is not configured on this server'))
        try {
          const { url, state } = await sso.oidc.start(`${sso.baseUrl(request)}/auth/oidc/callback`, query.returnTo ?? '/app')
          return redirect(url, [stateCookie(request, state, 600)])
        } catch (error) {
          if (error instanceof SignInError) return redirect(withError(error.message))
          const requestId = audit.context(request, null).requestId
          log(`OpenID Connect sign-in could not start (request ${requestId}): ${(error as Error).stack ?? error}`)
          return redirect(withError(`The sign-in could not start (request ${requestId}): try again, or tell an administrator`))
        }
      },
      {
        query: OidcLoginQuery,
        response: errors,
        detail: { summary: 'Start an OpenID Connect sign-in: 302 to the provider (authorization code, PKCE S256, state, nonce)', security: [], responses: redirectResponse('To the provider (or to /app?sso_error=<message> when it cannot be reached)') },
      },
    )
    .get(
      '/oidc/callback',
      async ({ request }) => {
        const clear = stateCookie(request, '', 0)
        const context = audit.context(request, null)
        if (!sso.oidc) return redirect(withError('Single sign-on with OpenID Connect is not configured on this server'), [clear])
        const incoming = new URL(request.url)
        const callbackUrl = new URL(`${sso.baseUrl(request)}/auth/oidc/callback${incoming.search}`)
        let email: string | null = null
        try {
          const identity = await sso.oidc.finish(callbackUrl, cookieValue(request, STATE_COOKIE))
          email = identity.email
          const missing = sso.missingGroupsClaim(identity, identity.scopes)
          if (missing) log(missing)
          const userId = await sso.linkUser({ provider: 'oidc', ...identity }, context)
          const { refreshToken, user } = await auth.signInAs(userId, request.headers.get('user-agent') ?? undefined)
          audit.record(request, { user }, { action: 'auth.login', target: user.id, details: { via: 'oidc', issuer: identity.issuer, groups: identity.groups } })
          return redirect(identity.returnTo, [clear, ...signedInCookies(request, refreshToken)])
        } catch (error) {
          if (!(error instanceof SignInError || error instanceof AppError)) {
            // Not the person's doing (the database, a bug): logged with the request id, which the message gives.
            log(`OpenID Connect sign-in failed (request ${context.requestId}): ${(error as Error).stack ?? error}`)
            return redirect(withError(`The sign-in failed on the server (request ${context.requestId}): try again, or tell an administrator`), [clear])
          }
          const reason = error instanceof SignInError ? error.reason : error.code
          audit.record(request, null, { action: 'auth.login_failed', target: email, details: { via: 'oidc', reason, message: error.message } })
          return redirect(withError(error.message), [clear])
        }
      },
      {
        query: OidcCallbackQuery,
        response: errors,
        detail: {
          responses: redirectResponse('To /app signed in (session cookie set), or to /app?sso_error=<message>'),
          summary: 'The provider sends the browser back here: the ID token is checked, the user found or created, the browser signed in (as POST /auth/web/login) and sent to /app; errors go to /app as a message',
          security: [],
        },
      },
    )
    .post('/device', ({ body, request }) => sso.devices.start(sso.baseUrl(request), body?.clientName ?? null), {
      body: DeviceStartRequest,
      response: { 200: DeviceStartResponse, ...errors },
      detail: { summary: 'Start a sign-in of the CLI through the browser (device code): the person approves userCode at verificationUrl (public)', security: [] },
    })
    .post(
      '/device/token',
      async ({ body, request }) => {
        const userId = await sso.devices.poll(body.deviceCode)
        const session = await auth.signInAs(userId, request.headers.get('user-agent') ?? undefined)
        audit.record(request, session, { action: 'auth.login', target: session.user.id, details: { via: 'device_code' } })
        return session
      },
      {
        body: DeviceTokenRequest,
        response: { 200: LoginResponse, ...errors },
        detail: {
          summary: 'Poll a device code: 400 AUTHORIZATION_PENDING (or SLOW_DOWN, EXPIRED_TOKEN, ACCESS_DENIED) until approved, then the tokens, once (public)',
          security: [],
        },
      },
    )
    .get('/device/:userCode', ({ params }) => sso.devices.lookup(params.userCode), {
      auth: true,
      params: UserCodeParams,
      response: { 200: DeviceRequestView, ...errors },
      detail: { summary: 'A device code waiting for approval, for the approval page' },
    })
    .post(
      '/device/:userCode/approve',
      async ({ params, principal, request: http }) => {
        // A session signs the CLI in, not an API key (a key is not a person at a browser).
        if (principal.apiKeyId) throw new AppError('FORBIDDEN', 'Approve a device code from a signed-in session, not with an API key')
        const request = await sso.devices.decide(params.userCode, true, principal.user.id)
        audit.record(http, principal, { action: 'auth.device_approved', target: request.userCode, details: { clientName: request.clientName } })
        return { success: true, message: 'Approved: the command line is signed in as you', request }
      },
      {
        auth: true,
        params: UserCodeParams,
        response: { 200: DeviceDecisionResponse, ...errors },
        detail: { summary: 'Approve a device code: the CLI polling it is signed in as the caller' },
      },
    )
    .post(
      '/device/:userCode/deny',
      async ({ params, principal }) => ({ success: true, message: 'Denied: the command line is not signed in', request: await sso.devices.decide(params.userCode, false, principal.user.id) }),
      {
        auth: true,
        params: UserCodeParams,
        response: { 200: DeviceDecisionResponse, ...errors },
        detail: { summary: 'Deny a device code: the CLI polling it gets ACCESS_DENIED' },
      },
    )
}
