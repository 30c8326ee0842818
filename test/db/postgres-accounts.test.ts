import { SQL } from 'bun'
import { describe, expect, test } from 'bun:test'
import { PG_MIGRATIONS } from '../../src/db/migrations/pg'
import { migratePostgres } from '../../src/db/postgres'
import { emptyPostgresDatabase, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../postgres'

describe.skipIf(!TEST_DATABASE_URL)(`accounts moving into a PostgreSQL database that has other stores${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('rows written before the accounts moved are kept; new rows need their user; deleting a user deletes theirs', async () => {
    const database = await emptyPostgresDatabase()
    const sql = new SQL(database.url, { max: 2, idleTimeout: 2 })
    database.track(sql)
    // A database of the version before: the stores that were in PostgreSQL, accounts in SQLite.
    await migratePostgres(sql, PG_MIGRATIONS.filter((migration) => migration.version < 16 && ![1, 5].includes(migration.version)))
    const now = new Date().toISOString()
    await sql`INSERT INTO conversations (id, user_id, title, created_at, updated_at) VALUES ('c-old', 'u-1', 'before the move', ${now}, ${now})`
    await sql`INSERT INTO api_keys (id, user_id, name, prefix, key_hash, created_at) VALUES ('k-old', 'u-1', 'laptop', 'uak_x', 'h-old', ${now})`
    await sql`INSERT INTO rag_collections (user_id, name, embedder, dimensions, created_at) VALUES ('u-1', 'notes', 'test', 4, ${now})`

    expect(await migratePostgres(sql, PG_MIGRATIONS.filter((migration) => migration.version <= 18))).toEqual([1, 5, 16, 17, 18])
    expect(await sql`SELECT id FROM conversations`).toEqual([{ id: 'c-old' }])
    expect(await sql`SELECT id FROM api_keys`).toEqual([{ id: 'k-old' }])
    let refused: unknown
    try {
      await sql`INSERT INTO conversations (id, user_id, title, created_at, updated_at) VALUES ('c-new', 'nobody', 'x', ${now}, ${now})`
    } catch (error) {
      refused = error
    }
    expect(String(refused)).toContain('conversations_user_fk')
    expect(await sql`SELECT name FROM rag_collections`).toEqual([{ name: 'notes' }])

    // The account arrives under its id: its rows are its own again, and go with it.
    await sql`INSERT INTO users (id, email, password_hash, roles, created_at) VALUES ('u-1', 'one@example.com', 'h', '["user"]', ${now})`
    await sql`INSERT INTO agent_tasks (id, user_id, status, task, request, created_at) VALUES ('t-1', 'u-1', 'queued', 'x', '{}', ${now})`
    await sql`DELETE FROM users WHERE id = 'u-1'`
    const left = await sql`SELECT (SELECT count(*) FROM conversations) + (SELECT count(*) FROM api_keys) + (SELECT count(*) FROM agent_tasks) + (SELECT count(*) FROM rag_collections) AS n`
    expect(Number(left[0].n)).toBe(0)
    await sql.close()
  })
})
