// A scratch PostgreSQL database for a bench run: made on the server of UAGENT_TEST_DATABASE_URL
// (or UAGENT_DATABASE_URL; its role needs CREATEDB), migrated, and dropped afterwards.
import { SQL } from 'bun'
import { randomBytes } from 'node:crypto'
import { openPostgres, type Postgres } from '../src/db/postgres'

export const BENCH_DATABASE_URL = process.env.UAGENT_TEST_DATABASE_URL?.trim() || process.env.UAGENT_DATABASE_URL?.trim() || undefined
export const BENCH_DATABASE_SKIPPED = 'skipped: set UAGENT_TEST_DATABASE_URL (a role that may CREATE DATABASE) to run it on PostgreSQL'

/** A new, migrated database (with the user `bench`), or null without a URL. `drop()` closes it and drops it (BENCH_KEEP_DATABASE=1: keeps it, and says its name, to be looked into). */
export async function scratchPostgres(): Promise<{ sql: Postgres; drop(): Promise<void> } | null> {
  if (!BENCH_DATABASE_URL) return null
  const name = `uagent_bench_${randomBytes(5).toString('hex')}`
  const admin = new SQL(BENCH_DATABASE_URL, { max: 1 })
  await admin.unsafe(`CREATE DATABASE ${name}`)
  const url = new URL(BENCH_DATABASE_URL)
  url.pathname = `/${name}`
  const sql = await openPostgres(url.toString())
  // The benches' collections belong to user `bench`: collections name their owner by foreign key.
  await sql`INSERT INTO users (id, email, password_hash, roles, created_at) VALUES ('bench', 'bench@example.com', 'x', '["user"]', ${new Date().toISOString()})`
  return {
    sql,
    async drop() {
      await sql.close({ timeout: 1 }).catch(() => {})
      if (process.env.BENCH_KEEP_DATABASE === '1') {
        console.log(`kept the scratch database ${name} (BENCH_KEEP_DATABASE=1): drop it when done`)
        return admin.close()
      }
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await admin.close()
    },
  }
}
