import { SQL } from 'bun'
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { ConfigError, loadConfig } from '../../src/config'
import { StartupError } from '../../src/core/startup'
import { migratePostgres, openPostgres } from '../../src/db/postgres'
import { PG_MIGRATIONS } from '../../src/db/migrations/pg'
import { ADMIN, tempDir } from '../helpers'
import { emptyPostgresDatabase, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../postgres'

const ENTRY = join(import.meta.dir, '../../src/index.ts')

/** The environment without any UAGENT_ variable of this process. */
function cleanEnv(): Record<string, string> {
  const clean: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('UAGENT_') && value !== undefined) clean[key] = value
  return clean
}

/** Starts the server (bun run start) and reads its output until it listens, or ends. */
async function startServer(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = Bun.spawn(['bun', ENTRY], { env: { ...cleanEnv(), PORT: '0', UAGENT_ADMIN_EMAIL: ADMIN.email, UAGENT_ADMIN_PASSWORD: ADMIN.password, ...env }, stdout: 'pipe', stderr: 'pipe' })
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader()
  let stdout = ''
  const timer = setTimeout(() => proc.kill(), 20_000)
  while (!stdout.includes('listening on')) {
    const { value, done } = await reader.read()
    if (done) break
    stdout += new TextDecoder().decode(value)
  }
  const listening = stdout.includes('listening on')
  if (listening) proc.kill()
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()])
  clearTimeout(timer)
  return { code: listening ? null : code, stdout, stderr }
}

describe('UAGENT_DATABASE_URL', () => {
  test('a PostgreSQL URL is taken; anything else is a configuration error that does not echo it', () => {
    expect(loadConfig({}).databaseUrl).toBeUndefined()
    expect(loadConfig({ UAGENT_DATABASE_URL: 'postgres://u:p@db:5432/ua' }).databaseUrl).toBe('postgres://u:p@db:5432/ua')
    expect(loadConfig({ UAGENT_DATABASE_URL: 'postgresql://db/ua' }).databaseUrl).toBe('postgresql://db/ua')
    for (const bad of ['mysql://u:secret@db/ua', 'db:5432', 'postgres://']) {
      let error: unknown
      try {
        loadConfig({ UAGENT_DATABASE_URL: bad })
      } catch (caught) {
        error = caught
      }
      expect(error).toBeInstanceOf(ConfigError)
      expect((error as Error).message).toStartWith('UAGENT_DATABASE_URL: expected a PostgreSQL URL')
      expect((error as Error).message).not.toContain('secret')
    }
  })

  test('PostgreSQL unreachable: one line naming UAGENT_DATABASE_URL, without the password', async () => {
    let error: unknown
    try {
      await openPostgres('postgres://someone:hunter22@127.0.0.1:1/nowhere')
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(StartupError)
    const message = (error as Error).message
    expect(message).toContain('UAGENT_DATABASE_URL')
    expect(message).toContain('127.0.0.1:1')
    expect(message).not.toContain('hunter22')
    expect(message).not.toContain('\n')
  })

  test('the server does not start when PostgreSQL is unreachable: one line on stderr, exit 1', async () => {
    const result = await startServer({ UAGENT_DATA_DIR: tempDir('pg-down'), UAGENT_DATABASE_URL: 'postgres://someone:hunter22@127.0.0.1:1/nowhere' })
    expect(result.code).toBe(1)
    expect(result.stdout).not.toContain('listening on')
    const lines = result.stderr.trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain('UAGENT_DATABASE_URL')
    expect(lines[0]).not.toContain('hunter22')
  })
})

describe.skipIf(!TEST_DATABASE_URL)(`PostgreSQL migrations${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('four servers opening one empty database at the same moment migrate it once', async () => {
    const database = await emptyPostgresDatabase()
    // Connected first, so that the four migrations really start together.
    const pools = [1, 2, 3, 4].map(() => new SQL(database.url, { max: 1 }))
    for (const pool of pools) database.track(pool)
    await Promise.all(pools.map((pool) => pool`SELECT 1`))
    const applied = await Promise.all(pools.map((pool) => migratePostgres(pool)))
    // One of them applied every migration; the others found them applied.
    expect(applied.map((versions) => versions.length).sort()).toEqual([0, 0, 0, PG_MIGRATIONS.length])
    const rows: { version: number; n: string }[] = await pools[0]!`SELECT version, count(*) AS n FROM schema_migrations GROUP BY version ORDER BY version`
    expect(rows.map((row) => [Number(row.version), Number(row.n)])).toEqual(PG_MIGRATIONS.map((migration) => [migration.version, 1]).sort((a, b) => a[0]! - b[0]!))
    // A fifth, later, finds nothing to do and the tables work.
    const later = await openPostgres(database.url)
    database.track(later)
    expect((await later`SELECT count(*) AS n FROM conversations`)[0].n).toBe('0')
  })

  test('a database from a newer version of the server is refused, untouched', async () => {
    const database = await emptyPostgresDatabase()
    const first = await openPostgres(database.url)
    database.track(first)
    await first`INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', '2030-01-01')`
    let error: unknown
    try {
      database.track(await openPostgres(database.url))
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(StartupError)
    expect((error as Error).message).toContain('schema version 999')
  })

  test('the server starts on PostgreSQL and says which stores are there', async () => {
    const database = await emptyPostgresDatabase()
    const result = await startServer({ UAGENT_DATA_DIR: tempDir('pg-up'), UAGENT_DATABASE_URL: database.url })
    expect(result.stdout).toContain('listening on')
    expect(result.stderr).toContain('PostgreSQL (UAGENT_DATABASE_URL) holds every store')
    const check = new SQL(database.url, { max: 1 })
    database.track(check)
    expect((await check`SELECT count(*) AS n FROM schema_migrations`)[0].n).toBe(String(PG_MIGRATIONS.length))
  })
})
