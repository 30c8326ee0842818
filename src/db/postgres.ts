import { SQL } from 'bun'
import { DEFAULT_DATABASE_POOL } from '../config'
import { DATABASE_KNOWN_DOWN } from '../core/database'
import { StartupError } from '../core/startup'
import { PG_MIGRATIONS, type PostgresMigration } from './migrations/pg'

/** A pool of connections to the server's PostgreSQL database (Bun's built-in client). */
export type Postgres = SQL

/**
 * The advisory lock every server takes while it migrates: two servers started at the same moment
 * on an empty database migrate it once (the second waits, then finds every version applied).
 */
export const MIGRATION_LOCK = 756_167_001

/**
 * The connection options of a pool (host, port, user, password, database, TLS), for another
 * pool to the same database: a worker thread's (the recorder's writer) cannot share this one.
 */
export function postgresConnection(sql: Postgres): { hostname?: string; port?: number; username?: string; password?: string; database?: string; tls?: unknown } {
  const { hostname, port, username, password, database, tls } = (sql as unknown as { options: Record<string, unknown> }).options
  return {
    hostname: hostname as string | undefined,
    port: port as number | undefined,
    username: username as string | undefined,
    password: typeof password === 'string' ? password : undefined,
    database: database as string | undefined,
    ...(tls ? { tls } : {}),
  }
}

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password) parsed.password = '***'
    return parsed.toString()
  } catch {
    return 'the configured URL'
  }
}

/**
 * Connects to PostgreSQL (a pool of up to `poolSize` connections, UAGENT_DATABASE_POOL) and
 * applies every migration not yet applied. Unreachable (or refusing the login): a StartupError of
 * one line naming UAGENT_DATABASE_URL.
 */
export async function openPostgres(url: string, migrations: PostgresMigration[] = PG_MIGRATIONS, poolSize = DEFAULT_DATABASE_POOL): Promise<Postgres> {
  const sql = new SQL(url, { max: poolSize, connectionTimeout: 10, idleTimeout: 60 })
  try {
    await sql`SELECT 1`
  } catch (error) {
    await sql.close().catch(() => {})
    const reason = (error as Error).message.replace(/\s+/g, ' ').trim()
    throw new StartupError(
      `PostgreSQL at UAGENT_DATABASE_URL (${redactUrl(url)}) cannot be reached: ${reason}. Start it, or correct UAGENT_DATABASE_URL (unset it to keep the data in SQLite).`,
    )
  }
  try {
    await migratePostgres(sql, migrations)
  } catch (error) {
    await sql.close().catch(() => {})
    throw error
  }
  return sql
}

/** Applies, in order and under the migration lock, every migration the database has not seen, all in one transaction. */
export async function migratePostgres(sql: Postgres, migrations: PostgresMigration[] = PG_MIGRATIONS): Promise<number[]> {
  const known = Math.max(0, ...migrations.map((migration) => migration.version))
  return sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`
    await tx.unsafe('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)')
    const rows: { version: number }[] = await tx`SELECT version FROM schema_migrations`
    const applied = new Set(rows.map((row) => Number(row.version)))
    const newest = Math.max(0, ...applied)
    if (newest > known) {
      throw new StartupError(
        `The PostgreSQL database at UAGENT_DATABASE_URL was written by a newer version of Universal Agent (schema version ${newest}; this version knows up to ${known}). Nothing was changed.`,
      )
    }
    const done: number[] = []
    for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
      if (applied.has(migration.version)) continue
      await tx.unsafe(migration.sql)
      await tx`INSERT INTO schema_migrations (version, name, applied_at) VALUES (${migration.version}, ${migration.name}, ${new Date().toISOString()})`
      done.push(migration.version)
    }
    return done
  })
}

/** The versions a PostgreSQL database has applied, oldest first. */
export async function postgresSchemaVersions(sql: Postgres): Promise<number[]> {
  const rows: { version: number }[] = await sql`SELECT version FROM schema_migrations ORDER BY version`
  return rows.map((row) => Number(row.version))
}

/**
 * Whether PostgreSQL answers, for /health: a failed request (lostWith) or a failed ping marks it
 * unreachable; a ping every `intervalMs` finds it back, and the server recovers without a restart
 * (Bun's pool opens new connections on the next query).
 */
export class PostgresMonitor {
  private lost: string | null = null
  private checking = false
  private readonly timer: ReturnType<typeof setInterval>

  constructor(
    private readonly sql: Postgres,
    private readonly log: (line: string) => void,
    intervalMs = 2000,
  ) {
    this.timer = setInterval(() => void this.check(), intervalMs)
    ;(this.timer as { unref?: () => void }).unref?.()
  }

  /** Null while PostgreSQL answers; otherwise why it does not. */
  get problem(): string | null {
    return this.lost
  }

  /**
   * A request failed for want of PostgreSQL. From now on queries through the gated pool fail at
   * once (see gatedPostgres) until a ping answers: one is sent now, so that a connection that
   * merely dropped (PostgreSQL restarted) closes the gate within a round trip.
   */
  lostWith(error: unknown): void {
    if (this.lost !== null) return
    this.lost = (error as Error)?.message?.replace(/\s+/g, ' ').trim() || String(error)
    this.log(`PostgreSQL (UAGENT_DATABASE_URL) cannot be reached: ${this.lost}; requests that need it get 503 DATABASE_UNAVAILABLE until it answers again`)
    void this.check()
  }

  /** Pings PostgreSQL once (a ping already under way counts). */
  async check(): Promise<boolean> {
    if (this.checking) return this.lost === null
    this.checking = true
    try {
      await this.sql`SELECT 1`
      if (this.lost !== null) this.log('PostgreSQL (UAGENT_DATABASE_URL) answers again')
      this.lost = null
    } catch (error) {
      this.lostWith(error)
    } finally {
      this.checking = false
    }
    return this.lost === null
  }

  close(): void {
    clearInterval(this.timer)
  }
}

/** What a query through a gated pool fails with while PostgreSQL is known to be unreachable. */
export class DatabaseKnownDown extends Error {
  readonly code = DATABASE_KNOWN_DOWN

  constructor(problem: string) {
    super(`PostgreSQL is unreachable (${problem})`)
  }
}

/** The pool's methods that run statements (the others build fragments or read settings). */
const RUNS_STATEMENTS = new Set<PropertyKey>(['unsafe', 'begin', 'transaction', 'reserve', 'file'])

const isTemplate = (value: unknown) => Array.isArray(value) && 'raw' in value

/**
 * A statement refused while PostgreSQL is known lost: a promise that fails with DatabaseKnownDown
 * when awaited, marked handled so that one never awaited (a fragment inside another statement) is
 * not an unhandled rejection.
 */
function refusal(why: string): Promise<never> {
  const refused = Promise.reject(new DatabaseKnownDown(why))
  refused.catch(() => {})
  return refused
}

/**
 * The pool every store uses: while `problem()` says PostgreSQL is unreachable (the monitor saw a
 * request or a ping fail), a statement fails at once with DatabaseKnownDown (503
 * DATABASE_UNAVAILABLE), instead of each waiting for a connection that cannot come (up to the
 * 10 s connect timeout when the host does not answer at all). The monitor pings with the pool
 * itself, ungated, and opens the gate again as soon as PostgreSQL answers.
 */
export function gatedPostgres(sql: Postgres, problem: () => string | null): Postgres {
  const refused = () => {
    const why = problem()
    return why === null ? null : refusal(why)
  }
  return new Proxy(sql, {
    apply(target, thisArg, args: unknown[]) {
      // sql`…` runs a statement; sql(values) builds a fragment for one.
      if (isTemplate(args[0])) {
        const denied = refused()
        if (denied) return denied
      }
      return Reflect.apply(target as unknown as (...parts: unknown[]) => unknown, thisArg, args)
    },
    get(target, property) {
      const value = Reflect.get(target, property, target)
      if (typeof value !== 'function') return value
      if (!RUNS_STATEMENTS.has(property)) return value.bind(target)
      return (...args: unknown[]) => refused() ?? value.apply(target, args)
    },
  })
}
