/** Security headers every response carries (RFC 7034, OWASP secure headers). */
export const SECURITY_HEADERS: Record<string, string> = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  // An API answers data, never pages: nothing may load from or frame one of its responses.
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'cross-origin-resource-policy': 'same-site',
}

/** The API docs (Swagger UI) are a page: its own scripts, styles and images, nothing from elsewhere. */
export const DOCS_CSP = "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

/** The web app: its own scripts and styles only, no inline script; audio players may play blobs it fetched. */
export const APP_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; media-src 'self' blob:; connect-src 'self'; font-src 'self'; manifest-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

const docsPath = (pathname: string) => pathname === '/openapi' || pathname === '/swagger' || pathname.startsWith('/openapi/')
const appPath = (pathname: string) => pathname === '/app' || pathname.startsWith('/app/')

/** The security headers for a path (the docs UI and the web app get their own Content-Security-Policy). */
export function securityHeaders(pathname: string): Record<string, string> {
  if (appPath(pathname)) return { ...SECURITY_HEADERS, 'content-security-policy': APP_CSP }
  return docsPath(pathname) ? { ...SECURITY_HEADERS, 'content-security-policy': DOCS_CSP } : SECURITY_HEADERS
}

const EXPOSED = 'X-Request-Id, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, Content-Disposition'
const ALLOWED_HEADERS = 'Authorization, Content-Type, X-Request-Id'

/**
 * CORS for browser clients: the origins named in UAGENT_CORS_ORIGINS (none by default).
 * `*` allows any origin, but never with credentials; a listed origin is echoed with credentials.
 */
export class CorsPolicy {
  private readonly any: boolean
  private readonly origins: Set<string>

  constructor(origins: string[]) {
    this.any = origins.includes('*')
    this.origins = new Set(origins.filter((origin) => origin !== '*'))
  }

  get enabled(): boolean {
    return this.any || this.origins.size > 0
  }

  /** Headers for a response to `origin` (empty when it is not allowed or CORS is off). */
  headersFor(origin: string | null): Record<string, string> {
    if (!origin || !this.enabled) return {}
    if (this.origins.has(origin)) {
      return { 'access-control-allow-origin': origin, 'access-control-allow-credentials': 'true', 'access-control-expose-headers': EXPOSED, vary: 'Origin' }
    }
    if (this.any) return { 'access-control-allow-origin': '*', 'access-control-expose-headers': EXPOSED }
    return {}
  }

  /** The answer to a preflight (OPTIONS with Access-Control-Request-Method), or null when it is not one. */
  preflight(request: Request, allowedMethods: string[]): Response | null {
    const origin = request.headers.get('origin')
    if (request.method !== 'OPTIONS' || !origin || !request.headers.has('access-control-request-method')) return null
    const headers: Record<string, string> = { ...SECURITY_HEADERS, 'x-request-id': crypto.randomUUID() }
    const cors = this.headersFor(origin)
    if (Object.keys(cors).length) {
      Object.assign(headers, cors, {
        'access-control-allow-methods': (allowedMethods.length ? allowedMethods : ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).join(', '),
        'access-control-allow-headers': request.headers.get('access-control-request-headers') ?? ALLOWED_HEADERS,
        'access-control-max-age': '600',
      })
      headers.vary = 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers'
    }
    return new Response(null, { status: 204, headers })
  }
}
