import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { StartupError } from './startup'

/**
 * The JWT signing key: UAGENT_JWT_SECRET when set; otherwise generated once and kept in
 * `<dataDir>/jwt-secret` (mode 0600) so tokens survive restarts. `null` dataDir: an
 * ephemeral key for in-memory servers. A key file that cannot be read, or is empty, stops the
 * start; so does a missing one beside an existing database (its sessions were signed with the
 * lost key: a new one would be generated silently and every user signed out, which needs a decision).
 */
export function jwtSecret(configured: string | undefined, dataDir: string | null, options: { databaseExists?: boolean } = {}): string {
  if (configured) return configured
  if (dataDir === null) return randomBytes(48).toString('base64url')
  const file = join(dataDir, 'jwt-secret')
  if (existsSync(file)) {
    let secret: string
    try {
      secret = readFileSync(file, 'utf8').trim()
    } catch (error) {
      throw new StartupError(
        `The JWT key file ${file} cannot be read (${(error as { code?: string }).code ?? (error as Error).message}): give the user running the server read access to it, ` +
          'or restore it from a backup (uagent admin restore). Setting UAGENT_JWT_SECRET uses another key instead; tokens signed with the old one stop working.',
      )
    }
    if (!secret) {
      throw new StartupError(`The JWT key file ${file} is empty: restore it from a backup (uagent admin restore), or set UAGENT_JWT_SECRET.`)
    }
    return secret
  }
  if (options.databaseExists) {
    throw new StartupError(
      `The JWT key file ${file} is missing, but the database beside it exists: restore the key from a backup of this data dir (uagent admin restore), ` +
        `or set UAGENT_JWT_SECRET. To start with a new key instead (every user must log in again), create one: openssl rand -base64 48 > ${file} && chmod 600 ${file}`,
    )
  }
  mkdirSync(dataDir, { recursive: true })
  const secret = randomBytes(48).toString('base64url')
  writeFileSync(file, secret, { mode: 0o600 })
  chmodSync(file, 0o600)
  return secret
}
