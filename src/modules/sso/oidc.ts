import * as client from 'openid-client'
import type { SsoStore } from './store'

/** A browser sign-in may take this long at the provider. */
const LOGIN_TTL_MS = 10 * 60 * 1000

export interface OidcSettings {
  issuer: string
  clientId: string
  clientSecret?: string
  groupsClaim: string
  /** The scopes to ask for; null: `openid email profile`, plus `groups` when discovery lists it. */
  scopes?: string[] | null
}

/** What a sign-in asks for when no scopes are configured. */
const DEFAULT_SCOPES = ['openid', 'email', 'profile']

/** What the provider vouched for, once the ID token passed every check. */
export interface OidcIdentity {
  issuer: string
  subject: string
  email: string | null
  emailVerified: boolean
  groups: string[]
  /** Whether the ID token or userinfo had the groups claim at all (an empty list is still an answer). */
  groupsClaimPresent: boolean
}

/** A sign-in that failed for a reason the person should read (never a stack or a token). */
export class SignInError extends Error {
  constructor(
    message: string,
    /** For the audit log: a short machine-readable reason. */
    readonly reason: string,
  ) {
    super(message)
    this.name = 'SignInError'
  }
}

/**
 * OpenID Connect with openid-client (the certified library does discovery, PKCE, and every
 * ID-token check: JWKS signature, iss, aud, exp, nonce). The state, nonce and PKCE verifier of a
 * sign-in under way are kept in the database (any replica finishes it, once); the browser holds
 * only the state, in a cookie, which binds the callback to the browser that started it.
 */
export class OidcClient {
  private configuration: Promise<client.Configuration> | null = null

  constructor(
    private readonly settings: OidcSettings,
    private readonly store: SsoStore,
    private readonly now: () => number = Date.now,
  ) {}

  /** Discovery, once; a failure is forgotten so that the next sign-in tries again. */
  private discover(): Promise<client.Configuration> {
    this.configuration ??= (async () => {
      const issuer = new URL(this.settings.issuer)
      const auth = this.settings.clientSecret ? client.ClientSecretPost(this.settings.clientSecret) : client.None()
      return client.discovery(issuer, this.settings.clientId, this.settings.clientSecret ? { client_secret: this.settings.clientSecret } : undefined, auth, {
        // A provider on plain http (a test, a lab): openid-client refuses it unless told.
        ...(issuer.protocol === 'http:' ? { execute: [client.allowInsecureRequests] } : {}),
        timeout: 10,
      })
    })().catch((error) => {
      this.configuration = null
      throw new SignInError(`The sign-in provider could not be reached (${this.settings.issuer}): ${describe(error)}`, 'provider_unreachable')
    })
    return this.configuration
  }

  /** The provider's authorization URL for a new sign-in, and the state the browser keeps. */
  async start(redirectUri: string, returnTo: string): Promise<{ url: string; state: string }> {
    const configuration = await this.discover()
    const state = client.randomState()
    const nonce = client.randomNonce()
    const verifier = client.randomPKCECodeVerifier()
    const now = this.now()
    await this.store.deleteExpired(now)
    await this.store.insertOidcLogin({ state, nonce, code_verifier: verifier, return_to: returnTo, expires_at: now + LOGIN_TTL_MS })
    const url = client.buildAuthorizationUrl(configuration, {
      redirect_uri: redirectUri,
      scope: this.scopes(configuration).join(' '),
      response_type: 'code',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    })
    return { url: url.href, state }
  }

  /**
   * The scopes a sign-in asks for: the configured ones, else the defaults plus `groups` when the
   * provider lists it (Dex, Okta and oidc-provider release the groups claim only for that scope).
   */
  scopes(configuration: client.Configuration): string[] {
    if (this.settings.scopes) return this.settings.scopes
    const supported = configuration.serverMetadata().scopes_supported
    return Array.isArray(supported) && supported.includes('groups') ? [...DEFAULT_SCOPES, 'groups'] : DEFAULT_SCOPES
  }

  /**
   * Finishes a sign-in from the provider's redirect (`callbackUrl`, with the public URL's origin)
   * and the state cookie. Each state works once, and only in the browser that holds it.
   */
  async finish(callbackUrl: URL, cookieState: string | null): Promise<OidcIdentity & { returnTo: string; scopes: string[] }> {
    const params = callbackUrl.searchParams
    if (params.get('error')) {
      throw new SignInError(`The provider refused the sign-in: ${params.get('error_description') || params.get('error')}`, `provider_error:${params.get('error')}`)
    }
    const state = params.get('state')
    if (!state || !params.get('code')) throw new SignInError('The sign-in answer has no code or state: start again', 'malformed_callback')
    if (!cookieState || cookieState !== state) {
      throw new SignInError('This sign-in was not started in this browser, or it was already used: start again', 'state_mismatch')
    }
    const login = await this.store.takeOidcLogin(state, this.now())
    if (!login) throw new SignInError('This sign-in expired or was already used: start again', 'state_unknown')
    const configuration = await this.discover()
    let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>
    try {
      tokens = await client.authorizationCodeGrant(configuration, callbackUrl, {
        pkceCodeVerifier: login.code_verifier,
        expectedState: state,
        expectedNonce: login.nonce,
        idTokenExpected: true,
      })
    } catch (error) {
      throw new SignInError(`The provider's answer was refused: ${describe(error)}`, 'token_rejected')
    }
    const idToken = tokens.claims()!
    let claims: Record<string, unknown> = { ...idToken }
    // Some providers put email or groups in userinfo only.
    if ((claims.email === undefined || claims[this.settings.groupsClaim] === undefined) && tokens.access_token) {
      try {
        claims = { ...(await client.fetchUserInfo(configuration, tokens.access_token, idToken.sub)), ...claims }
      } catch {
        // Userinfo is optional: the ID token's claims stand.
      }
    }
    return {
      returnTo: login.return_to,
      scopes: this.scopes(configuration),
      issuer: idToken.iss,
      subject: idToken.sub,
      email: typeof claims.email === 'string' ? claims.email : null,
      emailVerified: claims.email_verified === true || claims.email_verified === 'true',
      groups: groupsOf(claims[this.settings.groupsClaim]),
      groupsClaimPresent: claims[this.settings.groupsClaim] !== undefined,
    }
  }
}

/** A groups claim: an array of names, or one name; Keycloak's full paths (`/team/sub`) kept as they are. */
function groupsOf(value: unknown): string[] {
  const names = Array.isArray(value) ? value : typeof value === 'string' ? [value] : []
  return [...new Set(names.filter((name): name is string => typeof name === 'string' && name.trim() !== '').map((name) => name.trim().slice(0, 64)))]
}

function describe(error: unknown): string {
  if (error && typeof error === 'object') {
    const e = error as { error_description?: unknown; error?: unknown; message?: unknown; cause?: unknown }
    if (typeof e.error_description === 'string') return e.error_description
    if (typeof e.error === 'string') return e.error
    if (typeof e.message === 'string') {
      const cause = e.cause && typeof e.cause === 'object' && typeof (e.cause as { message?: unknown }).message === 'string' ? ` (${(e.cause as { message: string }).message})` : ''
      return `${e.message}${cause}`.slice(0, 300)
    }
  }
  return 'unknown error'
}
