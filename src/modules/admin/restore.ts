import { Database } from 'bun:sqlite'
import { createHash } from 'node:crypto'
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { createGunzip } from 'node:zlib'
import { createReadStream } from 'node:fs'
import * as sqliteVec from 'sqlite-vec'
import { schemaVersion } from '../../db'
import { MIGRATIONS } from '../../db/migrations'
import { findPgTool, libpqEnvFromUrl, runPgTool } from '../../db/pg-tools'
import { readTar } from './archive'
import { DATA_FOLDERS, type Manifest } from './snapshot'

export class RestoreError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'RestoreError'
  }
}

export interface RestoreResult {
  dataDir: string
  /** Where the data dir that was there before now is (renamed, never deleted); null when there was none. */
  previous: string | null
  manifest: Manifest
  /** Whether the archive's PostgreSQL dump was restored into the database (pg_restore). */
  postgres: boolean
}

export interface RestoreOptions {
  force?: boolean
  /** The PostgreSQL database a backup's postgres.dump is restored into (UAGENT_DATABASE_URL). */
  databaseUrl?: string
  /** The pg_restore program (default: pg_restore on PATH). */
  pgRestore?: string
}

const ALLOWED_TOP = new Set(['manifest.json', 'uagent.db', 'analytics.db', 'jwt-secret', 'postgres.dump'])

function safePath(path: string): boolean {
  if (!path || path.startsWith('/') || path.includes('\\') || path.includes('\0')) return false
  const parts = path.split('/')
  if (parts.some((part) => part === '' || part === '.' || part === '..')) return false
  return parts.length === 1 ? ALLOWED_TOP.has(path) : DATA_FOLDERS.includes(parts[0]!)
}

/** PRAGMA integrity_check, as a RestoreError naming `what` and its first problems. */
function assertIntact(db: Database, what: string): void {
  const problems = db.query<{ integrity_check: string }, []>('PRAGMA integrity_check').all().map((row) => row.integrity_check)
  if (problems.join() !== 'ok') throw new RestoreError(`${what} fails PRAGMA integrity_check: ${problems.slice(0, 3).join('; ')}`)
}

/** Whether a live server uses the data dir (its server.pid names a running process). */
export function liveServerPid(dataDir: string): number | null {
  const file = join(dataDir, 'server.pid')
  if (!existsSync(file)) return null
  const pid = Number(readFileSync(file, 'utf8').trim())
  if (!Number.isInteger(pid) || pid <= 0) return null
  try {
    process.kill(pid, 0)
    return pid
  } catch {
    return null
  }
}

/**
 * Restores a backup archive into `dataDir` on a stopped server: unpacks it beside the data dir,
 * checks every file against the manifest's sizes and SHA-256 checksums, runs PRAGMA
 * integrity_check on the database, refuses a schema newer than this version knows, then renames
 * the current data dir aside (never deleting it) and moves the restored one into its place.
 * Nothing is touched until every check has passed.
 */
export async function restoreBackup(archive: string, dataDirOption: string, options: RestoreOptions = {}): Promise<RestoreResult> {
  const dataDir = resolve(dataDirOption)
  if (!existsSync(archive)) throw new RestoreError(`no archive at ${archive}`)
  const pid = liveServerPid(dataDir)
  if (pid !== null && !options.force) throw new RestoreError(`a server (pid ${pid}) is running on ${dataDir}: stop it first`)
  const stamp = new Date().toISOString().replace(/[:.]/g, '-')
  const staging = join(dirname(dataDir), `.${basename(dataDir)}.restoring-${stamp}`)
  mkdirSync(staging, { recursive: true, mode: 0o700 })
  try {
    const hashes = new Map<string, { size: number; sha256: string }>()
    let manifestText = ''
    try {
      await readTar(createReadStream(archive).pipe(createGunzip()), (entry) => {
        if (entry.type === 'directory') return null
        if (entry.type !== 'file' || !safePath(entry.path)) throw new RestoreError(`the archive holds an unexpected entry "${entry.path}": it is not a Universal Agent backup`)
        if (entry.path === 'manifest.json') {
          const parts: Uint8Array[] = []
          return { write: (chunk) => void parts.push(chunk), end: () => void (manifestText = Buffer.concat(parts).toString('utf8')) }
        }
        const target = join(staging, entry.path)
        mkdirSync(dirname(target), { recursive: true, mode: 0o700 })
        const fd = openSync(target, 'w', 0o600)
        const hash = createHash('sha256')
        let size = 0
        return {
          write(chunk) {
            hash.update(chunk)
            size += chunk.length
            writeSync(fd, chunk)
          },
          end() {
            closeSync(fd)
            hashes.set(entry.path, { size, sha256: hash.digest('hex') })
          },
        }
      })
    } catch (error) {
      if (error instanceof RestoreError) throw error
      throw new RestoreError(`the archive cannot be read (${(error as Error).message}): it is damaged or not a .tar.gz backup`)
    }
    if (!manifestText) throw new RestoreError('the archive has no manifest.json: it is not a Universal Agent backup')
    let manifest: Manifest
    try {
      manifest = JSON.parse(manifestText) as Manifest
    } catch {
      throw new RestoreError('the manifest of the archive is not valid JSON: the archive is damaged')
    }
    if (manifest.format !== 'universal-agent-backup' || !Array.isArray(manifest.files)) throw new RestoreError('the manifest is not a Universal Agent backup manifest')
    for (const file of manifest.files) {
      const found = hashes.get(file.path)
      if (!found) throw new RestoreError(`${file.path} is listed in the manifest but missing from the archive`)
      if (found.size !== file.size || found.sha256 !== file.sha256) throw new RestoreError(`${file.path} does not match its checksum in the manifest: the archive was changed or damaged`)
    }
    for (const path of hashes.keys()) if (!manifest.files.some((file) => file.path === path)) throw new RestoreError(`${path} is in the archive but not in its manifest`)
    if (!hashes.has('uagent.db')) throw new RestoreError('the archive holds no database')

    const known = Math.max(...MIGRATIONS.map((migration) => migration.version))
    const db = new Database(join(staging, 'uagent.db'), { readonly: true })
    try {
      sqliteVec.load(db)
      const version = schemaVersion(db)
      if (version > known) {
        throw new RestoreError(`the backup's database has schema version ${version}, newer than this version of Universal Agent knows (${known}): restore it with the version that made it (${manifest.serverVersion})`)
      }
      assertIntact(db, "the backup's database")
    } catch (error) {
      if (error instanceof RestoreError) throw error
      throw new RestoreError(`the backup's database cannot be checked (${(error as Error).message})`)
    } finally {
      db.close()
    }
    // The request records (backups made before they had a file of their own hold them in uagent.db).
    if (hashes.has('analytics.db')) {
      const records = new Database(join(staging, 'analytics.db'), { readonly: true })
      try {
        assertIntact(records, "the backup's analytics.db")
      } catch (error) {
        if (error instanceof RestoreError) throw error
        throw new RestoreError(`the backup's analytics.db cannot be checked (${(error as Error).message})`)
      } finally {
        records.close()
      }
    }
    if (hashes.has('jwt-secret')) chmodSync(join(staging, 'jwt-secret'), 0o600)

    // The PostgreSQL part, last of all the checks and before the data dir is swapped: pg_restore
    // in one transaction (--single-transaction), so that a failure leaves the database as it was.
    const dump = hashes.has('postgres.dump')
    if (dump) {
      if (!options.databaseUrl) {
        throw new RestoreError('the backup holds a PostgreSQL dump (postgres.dump): name the database to restore it into with --database-url or UAGENT_DATABASE_URL')
      }
      const pgRestore = findPgTool(options.pgRestore ?? 'pg_restore')
      if (!pgRestore) throw new RestoreError("the backup holds a PostgreSQL dump and pg_restore is not installed: install PostgreSQL's client programs (Debian: apt-get install postgresql-client)")
      let env: Record<string, string>
      try {
        env = libpqEnvFromUrl(options.databaseUrl)
      } catch {
        throw new RestoreError('the database URL is not a postgres:// URL')
      }
      try {
        await runPgTool(pgRestore, ['--clean', '--if-exists', '--no-owner', '--single-transaction', '--exit-on-error', '--no-password', `--dbname=${env.PGDATABASE ?? ''}`, join(staging, 'postgres.dump')], env)
      } catch (error) {
        throw new RestoreError(`pg_restore could not restore the PostgreSQL dump (${(error as Error).message}); the database was left as it was`)
      }
      // (It lives in PostgreSQL now, not in the data dir.)
      rmSync(join(staging, 'postgres.dump'), { force: true })
    }

    let previous: string | null = null
    if (existsSync(dataDir)) {
      previous = `${dataDir}.before-restore-${stamp}`
      renameSync(dataDir, previous)
    }
    renameSync(staging, dataDir)
    return { dataDir, previous, manifest, postgres: dump }
  } finally {
    rmSync(staging, { recursive: true, force: true })
  }
}
