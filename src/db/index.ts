import { Database } from 'bun:sqlite'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import * as sqliteVec from 'sqlite-vec'
import { MIGRATIONS, type Migration } from './migrations'

export type { Database }

/**
 * Opens (or creates) the server's database: WAL mode, foreign keys on, sqlite-vec loaded,
 * and every migration not yet applied run in order, each in its own transaction.
 * `path` ':memory:' gives a private in-memory database (tests, embedding).
 */
export function openDatabase(path: string, migrations: Migration[] = MIGRATIONS): Database {
  if (path !== ':memory:' && !existsSync(path)) {
    // The database holds password hashes and MFA secrets: a new one is readable by its owner
    // alone (SQLite gives the -wal and -shm files the same mode). An existing file keeps the
    // mode its operator chose.
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
    writeFileSync(path, '', { mode: 0o600 })
  }
  const db = new Database(path, { create: true, strict: true })
  db.run('PRAGMA journal_mode = WAL')
  db.run('PRAGMA synchronous = NORMAL')
  db.run('PRAGMA foreign_keys = ON')
  db.run('PRAGMA busy_timeout = 5000')
  sqliteVec.load(db)
  migrate(db, migrations)
  return db
}

export function migrate(db: Database, migrations: Migration[]): void {
  db.run('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)')
  const applied = new Set(db.query<{ version: number }, []>('SELECT version FROM schema_migrations').all().map((row) => row.version))
  const sorted = [...migrations].sort((a, b) => a.version - b.version)
  for (const migration of sorted) {
    if (applied.has(migration.version)) continue
    db.transaction(() => {
      db.run(migration.sql)
      db.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [
        migration.version,
        migration.name,
        new Date().toISOString(),
      ])
    })()
  }
}
