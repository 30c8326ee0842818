import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'

export interface Credentials {
  url: string
  email: string
  accessToken: string
  refreshToken: string
  sessionId: string
  savedAt: string
}

/** `$XDG_CONFIG_HOME/uagent/credentials.json`, or `~/.config/uagent/credentials.json`. */
export function credentialsPath(env: Record<string, string | undefined> = process.env): string {
  const base = env.XDG_CONFIG_HOME || join(homedir(), '.config')
  return join(base, 'uagent', 'credentials.json')
}

export function loadCredentials(path = credentialsPath()): Credentials | null {
  if (!existsSync(path)) return null
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as Credentials
    return typeof parsed.accessToken === 'string' && typeof parsed.url === 'string' ? parsed : null
  } catch {
    return null
  }
}

/** Writes the file readable by its owner only (0600, in a 0700 folder). */
export function saveCredentials(credentials: Credentials, path = credentialsPath()): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  writeFileSync(path, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 })
  chmodSync(path, 0o600)
}

export function removeCredentials(path = credentialsPath()): boolean {
  if (!existsSync(path)) return false
  rmSync(path)
  return true
}
