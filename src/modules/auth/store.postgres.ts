import type { Postgres } from '../../db/postgres'
import type { AuthStore, NewSession, NewUserRow, UserRow } from './store'

const USER_COLUMNS = 'id, email, password_hash, roles, mfa_enabled, mfa_secret, mfa_pending_secret, mfa_last_step, created_at, disabled_at'

const toRow = (row: UserRow): UserRow => ({ ...row, mfa_enabled: Number(row.mfa_enabled), mfa_last_step: Number(row.mfa_last_step) })

/** Accounts and sessions in PostgreSQL (UAGENT_DATABASE_URL): shared by every replica on the database. */
export class PostgresAuthStore implements AuthStore {
  readonly asynchronous = true

  constructor(private readonly sql: Postgres) {}

  async countUsers(): Promise<number> {
    const [row]: { n: string }[] = await this.sql`SELECT count(*) AS n FROM users`
    return Number(row!.n)
  }

  async listUsers(limit: number, offset: number): Promise<UserRow[]> {
    const rows: UserRow[] = await this.sql.unsafe(`SELECT ${USER_COLUMNS} FROM users ORDER BY created_at, email LIMIT $1 OFFSET $2`, [limit, offset])
    return rows.map(toRow)
  }

  async userById(id: string): Promise<UserRow | null> {
    const rows: UserRow[] = await this.sql.unsafe(`SELECT ${USER_COLUMNS} FROM users WHERE id = $1`, [id])
    return rows[0] ? toRow(rows[0]) : null
  }

  async userByEmail(email: string): Promise<UserRow | null> {
    const rows: UserRow[] = await this.sql.unsafe(`SELECT ${USER_COLUMNS} FROM users WHERE email = $1`, [email])
    return rows[0] ? toRow(rows[0]) : null
  }

  async usersByIds(ids: string[]): Promise<UserRow[]> {
    if (!ids.length) return []
    const rows: UserRow[] = await this.sql.unsafe(`SELECT ${USER_COLUMNS} FROM users WHERE id = ANY($1::text[])`, [ids])
    return rows.map(toRow)
  }

  async otherEnabledAdmins(id: string): Promise<number> {
    const [row]: { n: string }[] = await this.sql`
      SELECT count(*) AS n FROM users
      WHERE id != ${id} AND disabled_at IS NULL AND roles::jsonb @> '["admin"]'`
    return Number(row!.n)
  }

  async insertUser(row: NewUserRow): Promise<boolean> {
    // Two servers creating the first admin at the same moment: one row, the other inserts nothing.
    const result = await this.sql`
      INSERT INTO users (id, email, password_hash, roles, created_at)
      VALUES (${row.id}, ${row.email}, ${row.password_hash}, ${row.roles}, ${row.created_at})
      ON CONFLICT (email) DO NOTHING`
    return result.count === 1
  }

  async deleteUser(id: string): Promise<void> {
    await this.sql`DELETE FROM users WHERE id = ${id}`
  }

  async setPassword(id: string, hash: string, options: { at: string; keepSessionId?: string; clearFailures?: string }): Promise<number> {
    return this.sql.begin(async (tx) => {
      await tx`UPDATE users SET password_hash = ${hash} WHERE id = ${id}`
      if (options.clearFailures !== undefined) await tx`DELETE FROM login_failures WHERE email = ${options.clearFailures}`
      const revoked =
        options.keepSessionId === undefined
          ? await tx`UPDATE sessions SET revoked_at = ${options.at} WHERE user_id = ${id} AND revoked_at IS NULL`
          : await tx`UPDATE sessions SET revoked_at = ${options.at} WHERE user_id = ${id} AND id != ${options.keepSessionId} AND revoked_at IS NULL`
      return revoked.count
    })
  }

  async disableUser(id: string, at: string): Promise<number> {
    return this.sql.begin(async (tx) => {
      await tx`UPDATE users SET disabled_at = coalesce(disabled_at, ${at}) WHERE id = ${id}`
      return (await tx`UPDATE sessions SET revoked_at = ${at} WHERE user_id = ${id} AND revoked_at IS NULL`).count
    })
  }

  async enableUser(id: string): Promise<void> {
    await this.sql`UPDATE users SET disabled_at = NULL WHERE id = ${id}`
  }

  async setMfaPending(id: string, secret: string): Promise<void> {
    await this.sql`UPDATE users SET mfa_pending_secret = ${secret} WHERE id = ${id}`
  }

  async enableMfa(id: string): Promise<void> {
    await this.sql`UPDATE users SET mfa_enabled = 1, mfa_secret = mfa_pending_secret, mfa_pending_secret = NULL WHERE id = ${id}`
  }

  async disableMfa(id: string, clearPending: boolean): Promise<void> {
    if (clearPending) await this.sql`UPDATE users SET mfa_enabled = 0, mfa_secret = NULL, mfa_pending_secret = NULL, mfa_last_step = 0 WHERE id = ${id}`
    else await this.sql`UPDATE users SET mfa_enabled = 0, mfa_secret = NULL, mfa_last_step = 0 WHERE id = ${id}`
  }

  async consumeTotpStep(id: string, step: number): Promise<boolean> {
    return (await this.sql`UPDATE users SET mfa_last_step = ${step} WHERE id = ${id} AND mfa_last_step < ${step}`).count === 1
  }

  async recentFailures(email: string, since: number, limit: number): Promise<number[]> {
    const rows: { at: string }[] = await this.sql`SELECT at FROM login_failures WHERE email = ${email} AND at > ${since} ORDER BY at DESC LIMIT ${limit}`
    return rows.map((row) => Number(row.at))
  }

  async recordFailure(email: string, at: number, forgetBefore: number): Promise<void> {
    await this.sql`INSERT INTO login_failures (email, at) VALUES (${email}, ${at})`
    await this.sql`DELETE FROM login_failures WHERE at <= ${forgetBefore}`
  }

  async clearFailures(email: string): Promise<number> {
    return (await this.sql`DELETE FROM login_failures WHERE email = ${email}`).count
  }

  async insertSession(session: NewSession): Promise<void> {
    await this.sql`
      INSERT INTO sessions (id, user_id, created_at, last_used_at, user_agent)
      VALUES (${session.id}, ${session.userId}, ${session.at}, ${session.at}, ${session.userAgent})`
  }

  async liveSessionUser(sessionId: string): Promise<string | null> {
    const rows: { user_id: string }[] = await this.sql`SELECT user_id FROM sessions WHERE id = ${sessionId} AND revoked_at IS NULL`
    return rows[0]?.user_id ?? null
  }

  async liveSessionOwner(sessionId: string): Promise<UserRow | null> {
    const rows: UserRow[] = await this.sql.unsafe(
      `SELECT ${USER_COLUMNS.split(', ').map((column) => `u.${column}`).join(', ')} FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = $1 AND s.revoked_at IS NULL`,
      [sessionId],
    )
    return rows[0] ? toRow(rows[0]) : null
  }

  async revokeSession(sessionId: string, at: string): Promise<void> {
    await this.sql`UPDATE sessions SET revoked_at = ${at} WHERE id = ${sessionId} AND revoked_at IS NULL`
  }

  async revokeAllSessions(userId: string, at: string): Promise<number> {
    return (await this.sql`UPDATE sessions SET revoked_at = ${at} WHERE user_id = ${userId} AND revoked_at IS NULL`).count
  }

  async insertRefreshToken(hash: string, sessionId: string, at: string): Promise<void> {
    await this.sql`INSERT INTO refresh_tokens (token_hash, session_id, created_at) VALUES (${hash}, ${sessionId}, ${at})`
  }

  async refreshToken(hash: string): Promise<{ session_id: string; used_at: string | null } | null> {
    const rows: { session_id: string; used_at: string | null }[] = await this.sql`SELECT session_id, used_at FROM refresh_tokens WHERE token_hash = ${hash}`
    return rows[0] ?? null
  }

  async useRefreshToken(hash: string, sessionId: string, at: string): Promise<boolean> {
    return this.sql.begin(async (tx) => {
      const used = (await tx`UPDATE refresh_tokens SET used_at = ${at} WHERE token_hash = ${hash} AND used_at IS NULL`).count === 1
      if (used) await tx`UPDATE sessions SET last_used_at = ${at} WHERE id = ${sessionId}`
      return used
    })
  }
}
