import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * The JWT signing key: UAGENT_JWT_SECRET when set; otherwise generated once and kept in
 * `<dataDir>/jwt-secret` (mode 0600) so tokens survive restarts. `null` dataDir: an
 * ephemeral key for in-memory servers.
 */
export function jwtSecret(configured: string | undefined, dataDir: string | null): string {
  if (configured) return configured
  if (dataDir === null) return randomBytes(48).toString('base64url')
  const file = join(dataDir, 'jwt-secret')
  if (existsSync(file)) return readFileSync(file, 'utf8').trim()
  mkdirSync(dataDir, { recursive: true })
  const secret = randomBytes(48).toString('base64url')
  writeFileSync(file, secret, { mode: 0o600 })
  chmodSync(file, 0o600)
  return secret
}
