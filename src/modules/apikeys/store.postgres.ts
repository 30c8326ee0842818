import type { Postgres } from '../../db/postgres'
import type { ApiKeyStore, KeyRow } from './store'

const COLUMNS = 'id, user_id, name, prefix, created_at, last_used_at, expires_at'

/** API keys in PostgreSQL (UAGENT_DATABASE_URL). */
export class PostgresApiKeyStore implements ApiKeyStore {
  readonly asynchronous = true

  constructor(private readonly sql: Postgres) {}

  async count(userId: string): Promise<number> {
    const [row]: { n: string }[] = await this.sql`SELECT count(*) AS n FROM api_keys WHERE user_id = ${userId}`
    return Number(row!.n)
  }

  async insert(row: KeyRow, keyHash: string): Promise<void> {
    await this.sql`
      INSERT INTO api_keys (id, user_id, name, prefix, key_hash, created_at, last_used_at, expires_at)
      VALUES (${row.id}, ${row.user_id}, ${row.name}, ${row.prefix}, ${keyHash}, ${row.created_at}, ${row.last_used_at}, ${row.expires_at})`
  }

  async list(userId: string): Promise<KeyRow[]> {
    return [...(await this.sql`SELECT id, user_id, name, prefix, created_at, last_used_at, expires_at FROM api_keys WHERE user_id = ${userId} ORDER BY created_at DESC, seq DESC`)]
  }

  async remove(userId: string, id: string): Promise<KeyRow | null> {
    const rows: KeyRow[] = await this.sql.unsafe(`DELETE FROM api_keys WHERE id = $1 AND user_id = $2 RETURNING ${COLUMNS}`, [id, userId])
    return rows[0] ?? null
  }

  async removeAllOf(userId: string): Promise<number> {
    return (await this.sql`DELETE FROM api_keys WHERE user_id = ${userId}`).count
  }

  async byHash(keyHash: string): Promise<KeyRow | null> {
    const rows: KeyRow[] = await this.sql`SELECT id, user_id, name, prefix, created_at, last_used_at, expires_at FROM api_keys WHERE key_hash = ${keyHash}`
    return rows[0] ?? null
  }

  async byId(id: string): Promise<KeyRow | null> {
    const rows: KeyRow[] = await this.sql`SELECT id, user_id, name, prefix, created_at, last_used_at, expires_at FROM api_keys WHERE id = ${id}`
    return rows[0] ?? null
  }

  async touch(id: string, at: string): Promise<void> {
    await this.sql`UPDATE api_keys SET last_used_at = ${at} WHERE id = ${id}`
  }
}
