import type { Command } from 'commander'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { openDatabase } from '../../src/db'
import { TokenSigner } from '../../src/core/tokens'
import { StartupError } from '../../src/core/startup'
import { AuthService } from '../../src/modules/auth/service'
import { CliError, EXIT } from '../client'
import { emit, example } from '../output'
import { ask } from '../prompt'

/** The data dir a host operation works on: --data-dir, else UAGENT_DATA_DIR, else ./data (as the server). */
export function dataDirOf(option: string | undefined): string {
  return resolve(option ?? (process.env.UAGENT_DATA_DIR?.trim() || './data'))
}

/** Opens the server's database in place, refusing to create one where there is none. */
export function openExistingDatabase(dataDir: string) {
  const file = join(dataDir, 'uagent.db')
  if (!existsSync(file)) throw new CliError('NOT_FOUND', `no database at ${file}: point --data-dir (or UAGENT_DATA_DIR) at the server's data directory`, EXIT.usage)
  try {
    return openDatabase(file)
  } catch (error) {
    if (error instanceof StartupError) throw new CliError('DATABASE', error.message, EXIT.apiError)
    throw new CliError('DATABASE', `cannot open ${file}: ${(error as Error).message}`, EXIT.apiError)
  }
}

async function newPassword(given: string | undefined): Promise<{ password: string; generated: boolean }> {
  if (given !== undefined) {
    if (given.length < 8) throw new CliError('USAGE', '--password must be at least 8 characters', EXIT.usage)
    return { password: given, generated: false }
  }
  if (process.stdin.isTTY) {
    const password = await ask('New password (8+ characters): ', true)
    if (password.length < 8) throw new CliError('USAGE', 'the password must be at least 8 characters', EXIT.usage)
    if ((await ask('New password again: ', true)) !== password) throw new CliError('USAGE', 'the two passwords differ', EXIT.usage)
    return { password, generated: false }
  }
  return { password: randomBytes(12).toString('base64url'), generated: true }
}

/** Host operations: they work on the data dir itself, without a running server (host access is the trust). */
export function registerAdmin(program: Command): void {
  const admin = program.command('admin').description('Host operations on the data dir (no server needed): account recovery')
  example(
    admin
      .command('reset-password <email>')
      .description(
        "Recover an account (e.g. the locked-out last admin) on this machine: set a new password, clear login throttling, sign out every session, re-enable it",
      )
      .option('--data-dir <dir>', 'the data directory (UAGENT_DATA_DIR, default ./data)')
      .option('--password <password>', 'the new password (asked for on a terminal; generated and printed otherwise)')
      .option('--disable-mfa', 'also turn MFA off (the authenticator was lost)')
      .action(async (email: string, options: { dataDir?: string; password?: string; disableMfa?: boolean }, command: Command) => {
        const dataDir = dataDirOf(options.dataDir)
        const db = openExistingDatabase(dataDir)
        try {
          const auth = new AuthService(db, new TokenSigner(randomBytes(48).toString('base64url')))
          const user = auth.findUserByEmail(email)
          if (!user) throw new CliError('NOT_FOUND', `no account with email ${email.trim().toLowerCase()} in ${dataDir}`, EXIT.apiError)
          const { password, generated } = await newPassword(options.password)
          const sessionsRevoked = await auth.setPassword(user.id, password)
          const wasDisabled = user.disabled
          if (wasDisabled) auth.enable(user.id)
          if (options.disableMfa) auth.resetMfa(user.id)
          const body = { success: true, email: user.email, sessionsRevoked, enabled: wasDisabled, mfaDisabled: options.disableMfa === true, ...(generated ? { password } : {}) }
          emit(command, body, () => {
            console.log(`Password of ${user.email} reset; ${sessionsRevoked} session${sessionsRevoked === 1 ? '' : 's'} signed out; login throttling cleared.`)
            if (wasDisabled) console.log('The account was disabled and is enabled again.')
            if (options.disableMfa) console.log('MFA is off for the account.')
            if (generated) console.log(`New password (shown once): ${password}`)
            console.log('A running server picks this up at once for logins; restart it if it cached the old sessions.')
          })
        } finally {
          db.close()
        }
      }),
    'uagent admin reset-password admin@example.com --data-dir /var/lib/uagent',
    'UAGENT_DATA_DIR=./data uagent admin reset-password admin@example.com --password "$NEW" --disable-mfa',
  )
}
