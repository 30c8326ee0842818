import type { Database } from 'bun:sqlite'
import type { AuthStore, NewSession, NewUserRow, UserRow } from './store'

/** Accounts and sessions in the server's SQLite database: every call answers at once. */
export class SqliteAuthStore implements AuthStore {
  readonly asynchronous = false
  private readonly userByIdQuery
  private readonly userByEmailQuery
  private readonly liveSessionQuery

  constructor(private readonly db: Database) {
    this.userByIdQuery = db.query<UserRow, [string]>('SELECT * FROM users WHERE id = ?')
    this.userByEmailQuery = db.query<UserRow, [string]>('SELECT * FROM users WHERE email = ?')
    this.liveSessionQuery = db.query<{ user_id: string }, [string]>('SELECT user_id FROM sessions WHERE id = ? AND revoked_at IS NULL')
  }

  countUsers(): number {
    return this.db.query<{ n: number }, []>('SELECT count(*) AS n FROM users').get()!.n
  }

  listUsers(limit: number, offset: number): UserRow[] {
    return this.db.query<UserRow, [number, number]>('SELECT * FROM users ORDER BY created_at, email LIMIT ? OFFSET ?').all(limit, offset)
  }

  userById(id: string): UserRow | null {
    return this.userByIdQuery.get(id)
  }

  userByEmail(email: string): UserRow | null {
    return this.userByEmailQuery.get(email)
  }

  usersByIds(ids: string[]): UserRow[] {
    const rows: UserRow[] = []
    for (const id of ids) {
      const row = this.userByIdQuery.get(id)
      if (row) rows.push(row)
    }
    return rows
  }

  otherEnabledAdmins(id: string): number {
    return this.db
      .query<{ n: number }, [string]>(`SELECT count(*) AS n FROM users WHERE id != ? AND disabled_at IS NULL AND EXISTS (SELECT 1 FROM json_each(users.roles) WHERE value = 'admin')`)
      .get(id)!.n
  }

  insertUser(row: NewUserRow): boolean {
    if (this.userByEmailQuery.get(row.email)) return false
    this.db.run('INSERT INTO users (id, email, password_hash, roles, created_at) VALUES (?, ?, ?, ?, ?)', [row.id, row.email, row.password_hash, row.roles, row.created_at])
    return true
  }

  deleteUser(id: string): void {
    this.db.run('DELETE FROM users WHERE id = ?', [id])
  }

  setPassword(id: string, hash: string, options: { at: string; keepSessionId?: string; clearFailures?: string; alsoInTransaction?: () => void }): number {
    let revoked = 0
    this.db
      .transaction(() => {
        this.db.run('UPDATE users SET password_hash = ? WHERE id = ?', [hash, id])
        if (options.clearFailures !== undefined) this.db.run('DELETE FROM login_failures WHERE email = ?', [options.clearFailures])
        revoked =
          options.keepSessionId === undefined
            ? this.revokeAllSessions(id, options.at)
            : this.db.run('UPDATE sessions SET revoked_at = ? WHERE user_id = ? AND id != ? AND revoked_at IS NULL', [options.at, id, options.keepSessionId]).changes
        options.alsoInTransaction?.()
      })
      .immediate()
    return revoked
  }

  disableUser(id: string, at: string): number {
    let revoked = 0
    this.db
      .transaction(() => {
        this.db.run('UPDATE users SET disabled_at = coalesce(disabled_at, ?) WHERE id = ?', [at, id])
        revoked = this.revokeAllSessions(id, at)
      })
      .immediate()
    return revoked
  }

  enableUser(id: string): void {
    this.db.run('UPDATE users SET disabled_at = NULL WHERE id = ?', [id])
  }

  setMfaPending(id: string, secret: string): void {
    this.db.run('UPDATE users SET mfa_pending_secret = ? WHERE id = ?', [secret, id])
  }

  enableMfa(id: string): void {
    this.db.run('UPDATE users SET mfa_enabled = 1, mfa_secret = mfa_pending_secret, mfa_pending_secret = NULL WHERE id = ?', [id])
  }

  disableMfa(id: string, clearPending: boolean): void {
    this.db.run(
      clearPending
        ? 'UPDATE users SET mfa_enabled = 0, mfa_secret = NULL, mfa_pending_secret = NULL, mfa_last_step = 0 WHERE id = ?'
        : 'UPDATE users SET mfa_enabled = 0, mfa_secret = NULL, mfa_last_step = 0 WHERE id = ?',
      [id],
    )
  }

  consumeTotpStep(id: string, step: number): boolean {
    return this.db.run('UPDATE users SET mfa_last_step = ? WHERE id = ? AND mfa_last_step < ?', [step, id, step]).changes === 1
  }

  recentFailures(email: string, since: number, limit: number): number[] {
    return this.db
      .query<{ at: number }, [string, number, number]>('SELECT at FROM login_failures WHERE email = ? AND at > ? ORDER BY at DESC LIMIT ?')
      .all(email, since, limit)
      .map((row) => row.at)
  }

  recordFailure(email: string, at: number, forgetBefore: number): void {
    this.db.run('INSERT INTO login_failures (email, at) VALUES (?, ?)', [email, at])
    this.db.run('DELETE FROM login_failures WHERE at <= ?', [forgetBefore])
  }

  clearFailures(email: string): number {
    return this.db.run('DELETE FROM login_failures WHERE email = ?', [email]).changes
  }

  insertSession(session: NewSession): void {
    this.db.run('INSERT INTO sessions (id, user_id, created_at, last_used_at, user_agent) VALUES (?, ?, ?, ?, ?)', [
      session.id,
      session.userId,
      session.at,
      session.at,
      session.userAgent,
    ])
  }

  liveSessionUser(sessionId: string): string | null {
    return this.liveSessionQuery.get(sessionId)?.user_id ?? null
  }

  liveSessionOwner(sessionId: string): UserRow | null {
    const userId = this.liveSessionUser(sessionId)
    return userId === null ? null : this.userByIdQuery.get(userId)
  }

  revokeSession(sessionId: string, at: string): void {
    this.db.run('UPDATE sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', [at, sessionId])
  }

  revokeAllSessions(userId: string, at: string): number {
    return this.db.run('UPDATE sessions SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL', [at, userId]).changes
  }

  insertRefreshToken(hash: string, sessionId: string, at: string): void {
    this.db.run('INSERT INTO refresh_tokens (token_hash, session_id, created_at) VALUES (?, ?, ?)', [hash, sessionId, at])
  }

  refreshToken(hash: string): { session_id: string; used_at: string | null } | null {
    return this.db.query<{ session_id: string; used_at: string | null }, [string]>('SELECT session_id, used_at FROM refresh_tokens WHERE token_hash = ?').get(hash)
  }

  useRefreshToken(hash: string, sessionId: string, at: string): boolean {
    let used = false
    this.db
      .transaction(() => {
        used = this.db.run('UPDATE refresh_tokens SET used_at = ? WHERE token_hash = ? AND used_at IS NULL', [at, hash]).changes === 1
        if (used) this.db.run('UPDATE sessions SET last_used_at = ? WHERE id = ?', [at, sessionId])
      })
      .immediate()
    return used
  }
}
