import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { AppError } from './errors'

export const ACCESS_TOKEN_SECONDS = 15 * 60

export interface AccessClaims {
  sub: string
  sid: string
  roles: string[]
}

const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url')

const invalid = () => new AppError('UNAUTHORIZED', 'Invalid access token')

/**
 * HS256 access tokens (RFC 7519) with node:crypto's HMAC. Verification sits on every
 * authenticated request: a synchronous HMAC costs ~2 µs where WebCrypto-based libraries
 * (jose, and @elysiajs/jwt on top of it) cost ~100 µs, and the contract needs an expired
 * token (TOKEN_EXPIRED) told apart from an invalid one, which @elysiajs/jwt cannot do.
 * Only `alg: HS256` is accepted; `none` and every other algorithm are rejected.
 */
export class TokenSigner {
  private readonly key: Buffer
  /** Tokens whose signature already checked out, with their expiry (ms): a hit skips HMAC and JSON parsing. */
  private readonly verified = new Map<string, { claims: AccessClaims; expiresAt: number }>()

  constructor(secret: string) {
    this.key = Buffer.from(secret, 'utf8')
  }

  private mac(data: string): Buffer {
    return createHmac('sha256', this.key).update(data).digest()
  }

  sign(claims: AccessClaims, now = Date.now()): string {
    const iat = Math.floor(now / 1000)
    const payload = { sid: claims.sid, roles: claims.roles, sub: claims.sub, iat, exp: iat + ACCESS_TOKEN_SECONDS }
    const body = `${HEADER}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`
    return `${body}.${this.mac(body).toString('base64url')}`
  }

  /** Verifies algorithm, signature and expiry; throws 401 TOKEN_EXPIRED or UNAUTHORIZED. */
  verify(token: string, now = Date.now()): AccessClaims {
    const known = this.verified.get(token)
    if (known) {
      if (known.expiresAt <= now) throw new AppError('TOKEN_EXPIRED', 'Access token has expired; refresh it with POST /auth/refresh')
      return known.claims
    }
    const parts = token.split('.')
    if (parts.length !== 3) throw invalid()
    const [header, payload, signature] = parts as [string, string, string]
    let decodedHeader: { alg?: unknown }
    let claims: { sub?: unknown; sid?: unknown; roles?: unknown; exp?: unknown; nbf?: unknown }
    try {
      decodedHeader = JSON.parse(Buffer.from(header, 'base64url').toString('utf8'))
      claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
    } catch {
      throw invalid()
    }
    if (decodedHeader?.alg !== 'HS256') throw invalid()
    const expected = this.mac(`${header}.${payload}`)
    const given = Buffer.from(signature, 'base64url')
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid()
    if (typeof claims.sub !== 'string' || typeof claims.sid !== 'string' || !Array.isArray(claims.roles) || typeof claims.exp !== 'number') {
      throw invalid()
    }
    const seconds = now / 1000
    if (typeof claims.nbf === 'number' && claims.nbf > seconds + 30) throw invalid()
    if (claims.exp <= seconds) throw new AppError('TOKEN_EXPIRED', 'Access token has expired; refresh it with POST /auth/refresh')
    const verified = { sub: claims.sub, sid: claims.sid, roles: claims.roles.map(String) }
    if (this.verified.size >= 10_000) this.verified.clear()
    this.verified.set(token, { claims: verified, expiresAt: claims.exp * 1000 })
    return verified
  }
}

/** An opaque random token (refresh tokens) and the hash it is stored under. */
export function newOpaqueToken(): string {
  return randomBytes(32).toString('base64url')
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}
