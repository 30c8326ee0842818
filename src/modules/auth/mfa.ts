import { Secret, TOTP } from 'otpauth'

const ISSUER = 'Universal Agent'

export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32
}

function totp(secret: string, label: string): TOTP {
  return new TOTP({ issuer: ISSUER, label, algorithm: 'SHA1', digits: 6, period: 30, secret: Secret.fromBase32(secret) })
}

export function otpauthUrl(secret: string, email: string): string {
  return totp(secret, email).toString()
}

/**
 * Checks a 6-digit code within ±1 step. Returns the time step it matched, or null.
 * Callers reject a step at or below the last one used, so each code works once.
 */
export function matchTotp(secret: string, code: string, now = Date.now()): number | null {
  if (!/^\d{6}$/.test(code)) return null
  const delta = totp(secret, 'check').validate({ token: code, timestamp: now, window: 1 })
  if (delta === null) return null
  return Math.floor(now / 1000 / 30) + delta
}
