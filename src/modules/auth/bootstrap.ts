import { randomBytes } from 'node:crypto'
import type { Config } from '../../config'
import { AppError } from '../../core/errors'
import type { AuthService } from './service'

export const DEFAULT_ADMIN_EMAIL = 'admin@uagent.local'

/**
 * With no user in the database, creates the first admin from UAGENT_ADMIN_EMAIL /
 * UAGENT_ADMIN_PASSWORD, or with a random password that is printed this once. On SQLite at
 * once (synchronously); on PostgreSQL with a promise (startServices awaits it).
 */
export function ensureFirstAdmin(auth: AuthService, config: Config, log: (line: string) => void): void | Promise<void> {
  const email = config.adminEmail ?? DEFAULT_ADMIN_EMAIL
  const password = config.adminPassword ?? randomBytes(12).toString('base64url')
  const created = () => {
    if (!config.adminPassword) {
      log(`First admin created: ${email} / ${password}  (shown once; change it with 'uagent password' or POST /auth/password)`)
    }
  }
  const count = auth.countUsers()
  if (!(count instanceof Promise)) {
    if (count > 0) return
    // Argon2id takes 19 MiB while it hashes: the garbage of start-up is collected first, so that a
    // first start stays within the resident memory of any other (bun run bench http measures it).
    Bun.gc(true)
    auth.createUserSync(email, password, ['admin'])
    return created()
  }
  return (async () => {
    if ((await count) > 0) return
    try {
      await auth.createUser(email, password, ['admin'])
      created()
    } catch (error) {
      // Another server on the same database created it at the same moment: one admin, made by it.
      if (!(error instanceof AppError && error.code === 'CONFLICT')) throw error
    }
  })()
}
