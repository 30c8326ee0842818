import type { Database } from 'bun:sqlite'
import type { ApiKeyStore, KeyRow } from './store'

/** API keys in the server's SQLite database: every call answers at once. */
export class SqliteApiKeyStore implements ApiKeyStore {
  readonly asynchronous = false
  private readonly byHashQuery
  private readonly byIdQuery
  private readonly touchQuery

  constructor(private readonly db: Database) {
    this.byHashQuery = db.query<KeyRow, [string]>('SELECT * FROM api_keys WHERE key_hash = ?')
    this.byIdQuery = db.query<KeyRow, [string]>('SELECT * FROM api_keys WHERE id = ?')
    this.touchQuery = db.query<unknown, [string, string]>('UPDATE api_keys SET last_used_at = ? WHERE id = ?')
  }

  count(userId: string): number {
    return this.db.query<{ n: number }, [string]>('SELECT count(*) AS n FROM api_keys WHERE user_id = ?').get(userId)!.n
  }

  insert(row: KeyRow, keyHash: string): void {
    this.db.run(
      'INSERT INTO api_keys (id, user_id, name, prefix, key_hash, created_at, last_used_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      [row.id, row.user_id, row.name, row.prefix, keyHash, row.created_at, row.last_used_at, row.expires_at],
    )
  }

  list(userId: string): KeyRow[] {
    return this.db.query<KeyRow, [string]>('SELECT * FROM api_keys WHERE user_id = ? ORDER BY created_at DESC, rowid DESC').all(userId)
  }

  remove(userId: string, id: string): KeyRow | null {
    const row = this.db.query<KeyRow, [string, string]>('SELECT * FROM api_keys WHERE id = ? AND user_id = ?').get(id, userId)
    if (row) this.db.run('DELETE FROM api_keys WHERE id = ?', [id])
    return row
  }

  removeAllOf(userId: string): number {
    return this.db.run('DELETE FROM api_keys WHERE user_id = ?', [userId]).changes
  }

  byHash(keyHash: string): KeyRow | null {
    return this.byHashQuery.get(keyHash)
  }

  byId(id: string): KeyRow | null {
    return this.byIdQuery.get(id)
  }

  touch(id: string, at: string): void {
    this.touchQuery.run(at, id)
  }
}
