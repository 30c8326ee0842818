import type { Database } from 'bun:sqlite'

/**
 * With the accounts in PostgreSQL, the tables a server still keeps in its SQLite database (RAG
 * collections) name their owner by a foreign key to SQLite's `users` table. This keeps a key row
 * there for each user the server has admitted (their id; the email column holds the id too, so a
 * deleted and re-created email never collides; no password, never used to log in), so those rows
 * can be written; it goes when the user is deleted, and their SQLite rows with it by cascade.
 */
export class LocalAccountRows {
  private readonly known = new Set<string>()
  private readonly insert

  constructor(private readonly db: Database) {
    this.insert = db.query<unknown, [string, string, string, string]>("INSERT OR IGNORE INTO users (id, email, password_hash, roles, created_at) VALUES (?, ?, '', ?, ?)")
  }

  /** Makes sure the user has their key row (a write only the first time this process sees them). */
  ensure(user: { id: string; roles: string[]; createdAt: string }): void {
    if (this.known.has(user.id)) return
    this.insert.run(user.id, user.id, JSON.stringify(user.roles), user.createdAt)
    this.known.add(user.id)
  }

  forget(userId: string): void {
    this.known.delete(userId)
    this.db.run('DELETE FROM users WHERE id = ?', [userId])
  }
}
