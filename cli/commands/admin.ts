import type { Command } from 'commander'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { basename, join, resolve } from 'node:path'
import { openDatabase } from '../../src/db'
import { TokenSigner } from '../../src/core/tokens'
import { StartupError } from '../../src/core/startup'
import { ApiKeyService } from '../../src/modules/apikeys/service'
import { SqliteApiKeyStore } from '../../src/modules/apikeys/store.sqlite'
import { PostgresApiKeyStore } from '../../src/modules/apikeys/store.postgres'
import { openPostgres, type Postgres } from '../../src/db/postgres'
import { AuthService } from '../../src/modules/auth/service'
import { PostgresAuthStore } from '../../src/modules/auth/store.postgres'
import { SqliteAuthStore } from '../../src/modules/auth/store.sqlite'
import { createWriteStream } from 'node:fs'
import { restoreBackup, RestoreError } from '../../src/modules/admin/restore'
import { type AuditEventInput, auditRow } from '../../src/modules/audit/service'
import { SqliteAuditStore } from '../../src/modules/audit/store.sqlite'
import { PostgresAuditStore } from '../../src/modules/audit/store.postgres'
import { ApiClient, CliError, EXIT } from '../client'
import { dim, emit, example, globals, table } from '../output'
import { ask } from '../prompt'
import { integer } from '../parse'
import { InvalidArgumentError } from 'commander'
import { registerMigrateToPostgres } from './admin-postgres'

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

const AGE_UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }

/** An audit time option: an age such as 24h becomes the ISO time that long ago; anything else goes to the server as it is. */
function since(value: string): string {
  const age = /^\s*(\d{1,6})\s*([mhdw])\s*$/i.exec(value)
  if (age) return new Date(Date.now() - Number(age[1]) * AGE_UNITS[age[2]!.toLowerCase()]!).toISOString()
  if (!value.trim()) throw new InvalidArgumentError('expected a time or an age such as 24h')
  return value.trim()
}

/**
 * Writes an audit event for an operation done on the host (no actor: whoever has the host). A
 * failure is said on stderr and does not undo the operation.
 */
async function recordHostEvent(target: { dataDir: string; databaseUrl?: string }, event: AuditEventInput): Promise<void> {
  try {
    if (target.databaseUrl) {
      const postgres = await openPostgres(target.databaseUrl)
      try {
        await new PostgresAuditStore(postgres).insertMany([auditRow(event)])
      } finally {
        await postgres.close()
      }
      return
    }
    // Opened as the server opens it (migrated), so the event lands whatever the data's schema version was.
    const db = openDatabase(join(target.dataDir, 'uagent.db'))
    try {
      new SqliteAuditStore(db).insertMany([auditRow(event)])
    } finally {
      db.close()
    }
  } catch (error) {
    process.stderr.write(`warning: the audit event ${event.action} could not be written: ${(error as Error).message}\n`)
  }
}

/** Host operations: they work on the data dir itself, without a running server (host access is the trust). */
export function registerAdmin(program: Command): void {
  const admin = program.command('admin').description('Backups of a running server, and host operations on the data dir (no server needed): restore, account recovery')
  example(
    admin
      .command('backup')
      .description('Take a consistent backup of the running server (database, key file, plugins, audio, manifest) and save the .tar.gz (admin)')
      .option('-o, --output <file>', 'where to save it (default: the name the server gives, in this folder)')
      .action(async (options: { output?: string }, command: Command) => {
        const response = await new ApiClient(globals(command)).fetch('/admin/backup', { method: 'POST' })
        const suggested = /filename="([^"]+)"/.exec(response.headers.get('content-disposition') ?? '')?.[1] ?? 'uagent-backup.tar.gz'
        const file = resolve(options.output ?? suggested)
        const out = createWriteStream(file, { mode: 0o600 })
        let size = 0
        for await (const chunk of response.body!) {
          size += chunk.length
          if (!out.write(chunk)) await new Promise((done) => out.once('drain', done))
        }
        await new Promise<void>((done, fail) => out.end((error?: Error | null) => (error ? fail(error) : done())))
        const body = { success: true, file, size }
        emit(command, body, () => console.log(`Backup saved to ${file} (${size} bytes). Restore it with: uagent admin restore ${file} --data-dir DIR (and --database-url for a server on PostgreSQL)`))
      }),
    'uagent admin backup -o nightly.tar.gz',
  )
  example(
    admin
      .command('backups')
      .description("List the scheduled backups kept in the server's data dir (admin)")
      .action(async (_options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('GET', '/admin/backups')
        emit(command, body, () => {
          console.log(table(['NAME', 'SIZE', 'CREATED'], body.backups.map((b: { name: string; size: number; createdAt: string }) => [b.name, b.size, b.createdAt])))
          console.log(dim(body.schedule.intervalSeconds ? `every ${body.schedule.intervalSeconds} s, newest ${body.schedule.keep} kept` : 'no scheduled backups (UAGENT_BACKUP_INTERVAL)'))
        })
      }),
    'uagent admin backups',
  )
  example(
    admin
      .command('audit')
      .description('The audit log, newest first (admin): sign-ins, accounts, keys, groups, shares, plugins, MCP servers, backups')
      .option('--action <action>', 'one action (group.created) or a family (group.*)')
      .option('--since <time>', 'from this time: ISO 8601 (2026-01-31, 2026-01-31T12:00Z) or an age (30m, 24h, 7d)', since)
      .option('--until <time>', 'up to this time (same forms)', since)
      .option('--actor <user>', "the actor's email or user id")
      .option('--target <target>', 'what the action was done to (a user id, group id, plugin name…)')
      .option('--limit <n>', 'events per page (1-500, default 50)', integer)
      .option('--cursor <cursor>', 'the next page: nextCursor of the previous one')
      .action(async (options: { action?: string; since?: string; until?: string; actor?: string; target?: string; limit?: number; cursor?: string }, command: Command) => {
        const query = new URLSearchParams()
        for (const name of ['action', 'since', 'until', 'actor', 'target', 'limit', 'cursor'] as const) if (options[name] !== undefined) query.set(name, String(options[name]))
        const body = await new ApiClient(globals(command)).json('GET', query.size ? `/admin/audit?${query}` : '/admin/audit')
        emit(command, body, () => {
          if (!body.events.length) return console.log(dim('No events.'))
          console.log(
            table(
              ['AT', 'ACTION', 'ACTOR', 'TARGET', 'IP', 'DETAILS'],
              body.events.map((e: { at: string; action: string; actor: { email: string } | null; target: string | null; ip: string | null; details: Record<string, unknown> }) => [
                e.at.replace('T', ' ').replace(/\.\d+Z$/, 'Z'),
                e.action,
                e.actor?.email ?? '-',
                e.target ?? '',
                e.ip ?? '',
                Object.keys(e.details).length ? JSON.stringify(e.details) : '',
              ]),
              80,
            ),
          )
          if (body.nextCursor) console.log(dim(`More: uagent admin audit --cursor ${body.nextCursor}${query.size ? ' (with the same filters)' : ''}`))
        })
      }),
    'uagent admin audit --action "group.*" --since 7d',
    'uagent admin audit --actor ann@example.com --limit 100',
  )
  example(
    admin
      .command('restore <file>')
      .description(
        'Restore a backup into the data dir of a stopped server: checks the checksums, the database (integrity_check) and its schema version, restores its PostgreSQL dump if it has one (pg_restore), keeps the current data dir aside (renamed), then swaps the restored one in',
      )
      .option('--data-dir <dir>', 'the data directory (UAGENT_DATA_DIR, default ./data)')
      .option('--force', 'restore even though server.pid names a running process')
      .option('--database-url <url>', "the PostgreSQL database a backup's pg_dump is restored into with pg_restore --clean (default UAGENT_DATABASE_URL)")
      .action(async (file: string, options: { dataDir?: string; force?: boolean; databaseUrl?: string }, command: Command) => {
        let result
        const databaseUrl = options.databaseUrl?.trim() || process.env.UAGENT_DATABASE_URL?.trim() || undefined
        try {
          result = await restoreBackup(resolve(file), dataDirOf(options.dataDir), { force: options.force, databaseUrl })
        } catch (error) {
          if (error instanceof RestoreError) throw new CliError('RESTORE_REFUSED', `${error.message}; nothing was changed`, EXIT.apiError)
          throw error
        }
        const body = { success: true, dataDir: result.dataDir, previous: result.previous, createdAt: result.manifest.createdAt, serverVersion: result.manifest.serverVersion, schemaVersion: result.manifest.schemaVersion, files: result.manifest.files.length, postgres: result.postgres }
        await recordHostEvent(
          { dataDir: result.dataDir, ...(databaseUrl ? { databaseUrl } : {}) },
          { action: 'backup.restored', target: basename(file), details: { via: 'uagent admin restore', createdAt: body.createdAt, serverVersion: body.serverVersion, files: body.files, postgres: body.postgres } },
        )
        emit(command, body, () => {
          console.log(`Restored the backup of ${result.manifest.createdAt} (server ${result.manifest.serverVersion}, ${result.manifest.files.length} files, checksums and integrity_check passed) into ${result.dataDir}.`)
          if (result.postgres) console.log('Its PostgreSQL dump was restored into the database with pg_restore --clean --if-exists, in one transaction.')
          else if (databaseUrl) console.log('The backup holds no PostgreSQL dump (it was made by a server on SQLite): the PostgreSQL database was not changed.')
          if (result.previous) console.log(`The data dir that was there is kept at ${result.previous}.`)
          console.log('Start the server to use it.')
        })
      }),
    'uagent admin restore nightly.tar.gz --data-dir /var/lib/uagent',
  )
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
        // Accounts and API keys kept in PostgreSQL (UAGENT_DATABASE_URL) are changed there: the
        // data dir (a replica's may be empty) is not needed then.
        const databaseUrl = process.env.UAGENT_DATABASE_URL?.trim()
        const db = databaseUrl ? null : openExistingDatabase(dataDir)
        let postgres: Postgres | null = null
        try {
          if (databaseUrl) {
            try {
              postgres = await openPostgres(databaseUrl)
            } catch (error) {
              throw new CliError('DATABASE', (error as Error).message, EXIT.apiError)
            }
          }
          const auth = new AuthService(postgres ? new PostgresAuthStore(postgres) : new SqliteAuthStore(db!), new TokenSigner(randomBytes(48).toString('base64url')))
          // So that the new password also ends the account's API keys, as every password change does.
          auth.acceptApiKeys(new ApiKeyService(postgres ? new PostgresApiKeyStore(postgres) : new SqliteApiKeyStore(db!), auth))
          const user = await auth.findUserByEmail(email)
          if (!user) throw new CliError('NOT_FOUND', `no account with email ${email.trim().toLowerCase()} in ${postgres ? 'the PostgreSQL database (UAGENT_DATABASE_URL)' : dataDir}`, EXIT.apiError)
          const { password, generated } = await newPassword(options.password)
          const sessionsRevoked = await auth.setPassword(user.id, password)
          const wasDisabled = user.disabled
          if (wasDisabled) await auth.enable(user.id)
          if (options.disableMfa) await auth.resetMfa(user.id)
          const body = { success: true, email: user.email, sessionsRevoked, enabled: wasDisabled, mfaDisabled: options.disableMfa === true, ...(generated ? { password } : {}) }
          await recordHostEvent(
            { dataDir, ...(databaseUrl ? { databaseUrl } : {}) },
            { action: 'user.password_reset', target: user.id, details: { email: user.email, via: 'uagent admin reset-password', sessionsRevoked, enabled: wasDisabled, mfaDisabled: options.disableMfa === true } },
          )
          emit(command, body, () => {
            console.log(`Password of ${user.email} reset; ${sessionsRevoked} session${sessionsRevoked === 1 ? '' : 's'} signed out; login throttling cleared.`)
            if (wasDisabled) console.log('The account was disabled and is enabled again.')
            if (options.disableMfa) console.log('MFA is off for the account.')
            if (generated) console.log(`New password (shown once): ${password}`)
            console.log(
              postgres
                ? 'Running servers on this database take the new password at once and refuse the old sessions within a second.'
                : 'A running server picks this up at once for logins; restart it if it cached the old sessions.',
            )
          })
        } finally {
          db?.close()
          await postgres?.close()
        }
      }),
    'uagent admin reset-password admin@example.com --data-dir /var/lib/uagent',
    'UAGENT_DATA_DIR=./data uagent admin reset-password admin@example.com --password "$NEW" --disable-mfa',
  )
  registerMigrateToPostgres(admin)
}
