import { startServices, type AppOptions } from '../src/app'
import { shutdown } from '../src/shutdown'
import { migratePostgres } from '../src/db/postgres'
import { SQL } from 'bun'
import { ADMIN, serverOf, tempDir } from './helpers'
import { emptyPostgresDatabase } from './postgres'

/**
 * Two servers on one fresh PostgreSQL database, as two replicas are: each started by
 * startServices() with a connection pool of its own, each with its own empty data dir, the same
 * JWT secret and the same first admin. Needs UAGENT_TEST_DATABASE_URL.
 */
export async function twoServers(options: AppOptions = {}, seed?: (postgres: SQL, dataDirA: string) => Promise<void>) {
  const database = await emptyPostgresDatabase()
  const start = async (name: string) => {
    const dataDir = tempDir(`replica-${name}`)
    // A small pool: the test server's PostgreSQL is shared by every test process.
    const postgres = new SQL(database.url, { max: 3 })
    database.track(postgres)
    await migratePostgres(postgres)
    // What a server moved from SQLite starts with: rows in PostgreSQL, files in its data dir.
    if (name === 'a') await seed?.(postgres, dataDir)
    const services = await startServices({
      env: { UAGENT_DATABASE_URL: database.url },
      postgres,
      dataDir,
      adminEmail: ADMIN.email,
      adminPassword: ADMIN.password,
      jwtSecret: 'replica-secret-'.repeat(3),
      log: process.env.HLOG ? (line) => console.error(`[${name}] ${line}`) : () => {},
      ...options,
    })
    return { ...serverOf(services), dataDir }
  }
  const a = await start('a')
  const b = await start('b')
  /** Stops both as the server stops (workers, MCP processes, timers) and closes their connections: a test file does not hold them till the end of the run. */
  const close = async () => {
    for (const server of [a, b]) await shutdown(server.app, server.services, 1000)
  }
  return { a, b, url: database.url, close }
}
