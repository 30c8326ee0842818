import { Database } from 'bun:sqlite'
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { StartupError } from '../core/startup'
import * as sqliteVec from 'sqlite-vec'
import { ANALYTICS_MIGRATIONS, MIGRATIONS, type Migration, type MigrationContext } from './migrations'

export type { Database }

/**
 * Opens (or creates) the server's database: WAL mode, foreign keys on, sqlite-vec loaded,
 * and every migration not yet applied run in order, each in its own transaction.
 * `path` ':memory:' gives a private in-memory database (tests, embedding).
 */
export function openDatabase(path: string, migrations: Migration[] = MIGRATIONS, options: { vectors?: boolean } = {}): Database {
  if (path !== ':memory:' && !existsSync(path)) {
    // The database holds password hashes and MFA secrets: a new one is readable by its owner
    // alone (SQLite gives the -wal and -shm files the same mode). An existing file keeps the
    // mode its operator chose.
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
    writeFileSync(path, '', { mode: 0o600 })
  }
  const db = new Database(path, { create: true, strict: true })
  // First: a server starting beside another (which may be migrating the file) waits its turn.
  db.run('PRAGMA busy_timeout = 5000')
  if (path !== ':memory:') {
    try {
      assertSound(db, path, migrations)
    } catch (error) {
      db.close(false)
      throw error
    }
  }
  try {
    enableWal(db)
    db.run('PRAGMA synchronous = NORMAL')
    db.run('PRAGMA foreign_keys = ON')
    db.run('PRAGMA busy_timeout = 5000')
    if (options.vectors !== false) sqliteVec.load(db)
    migrate(db, migrations)
  } catch (error) {
    db.close(false)
    if (isDamage(error)) throw damaged(path, (error as Error).message)
    throw error
  }
  return db
}

/**
 * Switches the file to WAL. The switch needs the file to itself, and SQLite answers SQLITE_BUSY at
 * once (without the busy handler) while another connection — a server starting beside this one —
 * holds a lock: it is tried again for up to 5 s.
 */
function enableWal(db: Database): void {
  const deadline = Date.now() + 5000
  for (;;) {
    try {
      db.run('PRAGMA journal_mode = WAL')
      return
    } catch (error) {
      if ((error as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() > deadline) throw error
      Bun.sleepSync(10)
    }
  }
}

const DAMAGE_CODES = new Set(['SQLITE_CORRUPT', 'SQLITE_NOTADB', 'SQLITE_CORRUPT_VTAB', 'SQLITE_CORRUPT_SEQUENCE', 'SQLITE_CORRUPT_INDEX'])

/** Whether an error is SQLite saying the file is damaged (or not a database at all). */
export function isDamage(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code
  return typeof code === 'string' && (DAMAGE_CODES.has(code) || code.startsWith('SQLITE_CORRUPT'))
}

export function damaged(path: string, detail: string): StartupError {
  return new StartupError(
    `The database ${path} is damaged (SQLite: ${detail}). It has been left exactly as it is. ` +
      `Restore the data dir from a backup with: uagent admin restore BACKUP.tar.gz --data-dir ${dirname(path)}`,
  )
}

/** The newest schema version a database says it has (0 for a new one). */
export function schemaVersion(db: Database): number {
  const table = db.query<{ n: number }, []>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get()!.n
  if (!table) return 0
  return db.query<{ v: number | null }, []>('SELECT max(version) AS v FROM schema_migrations').get()!.v ?? 0
}

/**
 * Checks an existing database before anything is written to it: it is a database, its file is
 * as long as its header says (a truncated copy is not), and its schema is not from a newer
 * version of the server. Reads only.
 */
function assertSound(db: Database, path: string, migrations: Migration[]): void {
  let pages: number
  let pageSize: number
  let version: number
  try {
    db.query('SELECT count(*) FROM sqlite_master').get()
    pages = db.query<{ n: number }, []>('SELECT page_count AS n FROM pragma_page_count').get()!.n
    pageSize = db.query<{ n: number }, []>('SELECT page_size AS n FROM pragma_page_size').get()!.n
    version = schemaVersion(db)
  } catch (error) {
    if (isDamage(error)) throw damaged(path, (error as Error).message)
    const code = (error as { code?: string }).code ?? ''
    if (code.startsWith('SQLITE_CANTOPEN') || code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_PERM')) {
      throw new StartupError(`The database ${path} cannot be opened for writing (SQLite: ${(error as Error).message}): give the user running the server read and write access to it and to its folder.`)
    }
    throw error
  }
  const size = statSync(path).size
  // The WAL may hold pages not yet copied into the main file; only a main file shorter than its
  // header's page count with no WAL beside it is a truncated file.
  if (size > 0 && size < pages * pageSize && !existsSync(`${path}-wal`)) {
    throw damaged(path, `the file is ${size} bytes but its header says ${pages} pages of ${pageSize} bytes: it was cut short`)
  }
  const known = Math.max(0, ...migrations.map((migration) => migration.version))
  if (version > known) {
    throw new StartupError(
      `The database ${path} was written by a newer version of Universal Agent (schema version ${version}; this version knows up to ${known}). ` +
        'Nothing was changed. Run that newer version, or restore a backup made by this one (uagent admin restore).',
    )
  }
}

/** The file of the request records beside a server database file. */
export function analyticsPathFor(databasePath: string): string {
  return join(dirname(databasePath), 'analytics.db')
}

/**
 * Opens (or creates) the request records' own database, analytics.db: the recorder's thread
 * writes there through a connection of its own, so that its commits never contend with the
 * requests' writes to the server's database (see migration 014). `path` ':memory:' gives a
 * private in-memory one.
 */
export function openAnalyticsDatabase(path: string): Database {
  return openDatabase(path, ANALYTICS_MIGRATIONS, { vectors: false })
}

const MIGRATION_CONTEXT: MigrationContext = { analyticsPath: analyticsPathFor, openAnalytics: openAnalyticsDatabase }

export function migrate(db: Database, migrations: Migration[]): void {
  db.run('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)')
  const applied = new Set(db.query<{ version: number }, []>('SELECT version FROM schema_migrations').all().map((row) => row.version))
  const sorted = [...migrations].sort((a, b) => a.version - b.version)
  for (const migration of sorted) {
    if (applied.has(migration.version)) continue
    migration.before?.(db, MIGRATION_CONTEXT)
    db.transaction(() => {
      // Another process (a second server started at the same moment) may have applied it meanwhile.
      if (db.query('SELECT 1 FROM schema_migrations WHERE version = ?').get(migration.version)) return
      db.run(migration.sql)
      db.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [
        migration.version,
        migration.name,
        new Date().toISOString(),
      ])
    }).immediate()
  }
}
