import { SQL } from 'bun'
import type { Database } from 'bun:sqlite'
import { afterAll, beforeAll, describe } from 'bun:test'
import { randomBytes, randomUUID } from 'node:crypto'
import net from 'node:net'
import { openDatabase } from '../src/db'
import { migratePostgres, type Postgres } from '../src/db/postgres'

/**
 * The PostgreSQL server tests may use: a URL whose role may CREATE DATABASE
 * (UAGENT_TEST_DATABASE_URL, set by .ci/run). Unset: every PostgreSQL test is skipped, and its
 * name says why.
 */
export const TEST_DATABASE_URL = process.env.UAGENT_TEST_DATABASE_URL?.trim() || undefined
export const POSTGRES_SKIPPED = 'skipped: UAGENT_TEST_DATABASE_URL is not set'

const made: { name: string; pools: Postgres[] }[] = []

/** The URL of `database` on the test server. */
export function databaseUrl(database: string): string {
  const url = new URL(TEST_DATABASE_URL!)
  url.pathname = `/${database}`
  return url.toString()
}

/**
 * A new, empty PostgreSQL database on the test server (`uagent_t_<random>`), dropped after the
 * last test file (test/setup.ts). Not migrated: see freshPostgres for that.
 */
export async function emptyPostgresDatabase(template?: string): Promise<{ name: string; url: string; track(pool: Postgres): void }> {
  if (!TEST_DATABASE_URL) throw new Error('UAGENT_TEST_DATABASE_URL is not set')
  const name = `uagent_t_${randomBytes(6).toString('hex')}`
  const admin = new SQL(TEST_DATABASE_URL, { max: 1 })
  try {
    await admin.unsafe(template ? `CREATE DATABASE ${name} TEMPLATE "${template.replaceAll('"', '""')}"` : `CREATE DATABASE ${name}`)
  } finally {
    await admin.close()
  }
  const entry = { name, pools: [] as Postgres[] }
  made.push(entry)
  return { name, url: databaseUrl(name), track: (pool) => void entry.pools.push(pool) }
}

/**
 * A template database on the test server that has the `vector` extension (pgvector), made by a
 * superuser (.ci/run: the test role may not CREATE EXTENSION vector, which is not trusted):
 * UAGENT_TEST_PGVECTOR_TEMPLATE. Unset (or no PostgreSQL): the pgvector tests are skipped, saying why.
 */
export const TEST_PGVECTOR_TEMPLATE = (TEST_DATABASE_URL && process.env.UAGENT_TEST_PGVECTOR_TEMPLATE?.trim()) || undefined
export const PGVECTOR_SKIPPED = TEST_DATABASE_URL
  ? 'skipped: UAGENT_TEST_PGVECTOR_TEMPLATE (a database with CREATE EXTENSION vector done by a superuser, see .ci/run) is not set'
  : POSTGRES_SKIPPED

/**
 * A fresh database copied from UAGENT_TEST_PGVECTOR_TEMPLATE (so it has pgvector), migrated and
 * connected, with its URL (for servers of its own).
 */
export async function freshPgvectorPostgres(): Promise<{ sql: Postgres; url: string }> {
  if (!TEST_PGVECTOR_TEMPLATE) throw new Error(PGVECTOR_SKIPPED)
  const database = await emptyPostgresDatabase(TEST_PGVECTOR_TEMPLATE)
  const sql = new SQL(database.url, { max: 10, connectionTimeout: 10, idleTimeout: 2 })
  database.track(sql)
  await migratePostgres(sql)
  return { sql, url: database.url }
}

/**
 * A fresh PostgreSQL database with every PostgreSQL migration applied, connected. Its pool lets
 * idle connections go after 2 s (the server's own keeps them a minute): the test server is shared
 * by every file of a run, and by other runs, and has 100 connections in all.
 */
export async function freshPostgres(): Promise<Postgres> {
  const database = await emptyPostgresDatabase()
  const sql = new SQL(database.url, { max: 10, connectionTimeout: 10, idleTimeout: 2 })
  database.track(sql)
  await migratePostgres(sql)
  return sql
}

/**
 * DROP DATABASE … WITH (FORCE). PostgreSQL 15 refuses it (42501) when an autovacuum worker has just
 * started on the database: FORCE signals every other backend first, and the worker counts as one
 * the test role may not signal. A plain DROP then does what it always does with autovacuum (cancels
 * it and waits); both are tried in turn for a few seconds. A CI run failed its final hook on this once.
 */
async function dropDatabase(admin: InstanceType<typeof SQL>, name: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name}${attempt % 2 ? ' WITH (FORCE)' : ''}`)
      return
    } catch (error) {
      if (attempt >= 20) throw error
      await Bun.sleep(250)
    }
  }
}

/** Drops every database this test process made (their pools are closed first). */
export async function dropPostgresDatabases(): Promise<void> {
  if (!made.length || !TEST_DATABASE_URL) return
  const databases = made.splice(0)
  for (const { pools } of databases) for (const pool of pools) await pool.close({ timeout: 1 }).catch(() => {})
  // Four at a time: one DROP DATABASE waits for a checkpoint (about 2 s on a busy machine), and
  // drops under way together share one; one after the other, a run's drops outlasted the hook's 30 s.
  const admin = new SQL(TEST_DATABASE_URL, { max: 4 })
  try {
    let next = 0
    const worker = async () => {
      while (next < databases.length) await dropDatabase(admin, databases[next++]!.name)
    }
    await Promise.all([worker(), worker(), worker(), worker()])
  } finally {
    await admin.close()
  }
}

/** What a store's behaviour tests get: the backend's name, and a SQLite database or a PostgreSQL connection. */
export type TestBackend = { kind: 'sqlite'; db: Database } | { kind: 'postgres'; sql: Postgres; db: Database }

/**
 * Runs the same behaviour tests on both backends: `describe("<title> (SQLite)")` on a migrated
 * in-memory SQLite database, and `describe("<title> (PostgreSQL)")` on a fresh PostgreSQL
 * database for this file (skipped, saying why, without UAGENT_TEST_DATABASE_URL). The PostgreSQL
 * backend has an in-memory SQLite database too, for the stores that still live there.
 * `backend()` is read inside tests (or hooks), once the backend is ready.
 */
export function describeBackends(title: string, body: (backend: () => TestBackend) => void): void {
  describe(`${title} (SQLite)`, () => {
    let current: TestBackend | undefined
    beforeAll(() => {
      current = { kind: 'sqlite', db: openDatabase(':memory:') }
    })
    afterAll(() => current?.db.close())
    body(() => current!)
  })
  if (!TEST_DATABASE_URL) {
    describe.skip(`${title} (PostgreSQL: ${POSTGRES_SKIPPED})`, () => body(() => {
      throw new Error(POSTGRES_SKIPPED)
    }))
    return
  }
  describe(`${title} (PostgreSQL)`, () => {
    let current: TestBackend | undefined
    beforeAll(async () => {
      current = { kind: 'postgres', sql: await freshPostgres(), db: openDatabase(':memory:') }
    })
    // The PostgreSQL server is shared by every test file of the run: connections go back at once.
    afterAll(async () => {
      current?.db.close()
      if (current?.kind === 'postgres') await current.sql.close()
    })
    body(() => current!)
  })
}

/**
 * A user for a store's behaviour tests (`<id>@example.com`): in the backend's SQLite database,
 * and in PostgreSQL too on that backend, whose tables name users by foreign key as SQLite's do.
 */
export async function insertTestUser(backend: TestBackend, roles: string[] = ['user']): Promise<string> {
  const id = randomUUID()
  const row = [id, `${id}@example.com`, 'x', JSON.stringify(roles), new Date().toISOString()] as const
  backend.db.run('INSERT INTO users (id, email, password_hash, roles, created_at) VALUES (?, ?, ?, ?, ?)', [...row])
  if (backend.kind === 'postgres') await backend.sql`INSERT INTO users (id, email, password_hash, roles, created_at) VALUES (${row[0]}, ${row[1]}, ${row[2]}, ${row[3]}, ${row[4]})`
  return id
}

/** Deletes a test user as deleting an account does: what they own goes by the foreign keys' cascade, on both backends. */
export async function deleteTestUser(backend: TestBackend, id: string): Promise<void> {
  backend.db.run('DELETE FROM users WHERE id = ?', [id])
  if (backend.kind === 'postgres') await backend.sql`DELETE FROM users WHERE id = ${id}`
}

/**
 * A TCP relay in front of the test PostgreSQL that can be cut (every connection dropped, new ones
 * refused), hung (every connection dropped, new ones accepted and never answered: a host gone
 * silent, which clients see only at their connect timeout) and restored.
 */
export async function relay(target: URL) {
  const sockets = new Set<net.Socket>()
  let server: net.Server | null = null
  let port = 0
  let hung = false
  const listen = () =>
    new Promise<void>((resolve) => {
      server = net.createServer((client) => {
        if (hung) {
          sockets.add(client)
          client.on('error', () => {})
          client.on('close', () => sockets.delete(client))
          return
        }
        const upstream = net.connect(Number(target.port || 5432), target.hostname)
        for (const socket of [client, upstream]) {
          sockets.add(socket)
          socket.on('error', () => {})
          socket.on('close', () => {
            sockets.delete(socket)
            client.destroy()
            upstream.destroy()
          })
        }
        client.pipe(upstream)
        upstream.pipe(client)
      })
      server.listen(port, '127.0.0.1', () => {
        port = (server!.address() as net.AddressInfo).port
        resolve()
      })
    })
  await listen()
  return {
    get port() {
      return port
    },
    async cut() {
      await new Promise<void>((resolve) => {
        server!.close(() => resolve())
        for (const socket of sockets) socket.destroy()
      })
    },
    hang() {
      hung = true
      for (const socket of sockets) socket.destroy()
    },
    async restore() {
      if (!hung) return listen()
      hung = false
      for (const socket of sockets) socket.destroy()
    },
    close() {
      server?.close()
      for (const socket of sockets) socket.destroy()
    },
  }
}
