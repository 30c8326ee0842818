import { startServices, type AppOptions } from '../src/app'
import { ADMIN, serverOf, tempDir } from './helpers'
import { emptyPostgresDatabase } from './postgres'

/**
 * Two servers on one fresh PostgreSQL database, as two replicas are: each started by
 * startServices() from UAGENT_DATABASE_URL, each with its own empty data dir, the same JWT secret
 * and the same first admin. Needs UAGENT_TEST_DATABASE_URL.
 */
export async function twoServers(options: AppOptions = {}) {
  const database = await emptyPostgresDatabase()
  const start = async (name: string) => {
    const dataDir = tempDir(`replica-${name}`)
    const services = await startServices({
      env: { UAGENT_DATABASE_URL: database.url },
      dataDir,
      adminEmail: ADMIN.email,
      adminPassword: ADMIN.password,
      jwtSecret: 'replica-secret-'.repeat(3),
      log: process.env.HLOG ? (line) => console.error(`[${name}] ${line}`) : () => {},
      ...options,
    })
    database.track(services.postgres!)
    return { ...serverOf(services), dataDir }
  }
  const a = await start('a')
  const b = await start('b')
  return { a, b, url: database.url }
}
