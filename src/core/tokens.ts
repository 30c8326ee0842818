import { errors as joseErrors, jwtVerify, SignJWT } from 'jose'
import { createHash, randomBytes } from 'node:crypto'
import { AppError } from './errors'

export const ACCESS_TOKEN_SECONDS = 15 * 60

export interface AccessClaims {
  sub: string
  sid: string
  roles: string[]
}

/**
 * HS256 access tokens. jose is used directly (it is what @elysiajs/jwt wraps) because the
 * contract needs an expired token told apart from an invalid one, and the plugin's
 * verify() answers `false` for both.
 */
export class TokenSigner {
  private readonly key: Uint8Array

  constructor(secret: string) {
    this.key = new TextEncoder().encode(secret)
  }

  sign(claims: AccessClaims): Promise<string> {
    return new SignJWT({ sid: claims.sid, roles: claims.roles })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(claims.sub)
      .setIssuedAt()
      .setExpirationTime(`${ACCESS_TOKEN_SECONDS}s`)
      .sign(this.key)
  }

  /** Verifies signature, algorithm and expiry; throws 401 TOKEN_EXPIRED or UNAUTHORIZED. */
  async verify(token: string): Promise<AccessClaims> {
    try {
      const { payload } = await jwtVerify(token, this.key, { algorithms: ['HS256'] })
      if (typeof payload.sub !== 'string' || typeof payload.sid !== 'string' || !Array.isArray(payload.roles)) {
        throw new AppError('UNAUTHORIZED', 'Invalid access token')
      }
      return { sub: payload.sub, sid: payload.sid, roles: payload.roles.map(String) }
    } catch (error) {
      if (error instanceof AppError) throw error
      if (error instanceof joseErrors.JWTExpired) throw new AppError('TOKEN_EXPIRED', 'Access token has expired; refresh it with POST /auth/refresh')
      throw new AppError('UNAUTHORIZED', 'Invalid access token')
    }
  }
}

/** An opaque random token (refresh tokens) and the hash it is stored under. */
export function newOpaqueToken(): string {
  return randomBytes(32).toString('base64url')
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}
