import type { Database } from 'bun:sqlite'
import type { DeviceCodeRow, IdentityRow, OidcLoginRow, Provider, SsoStore } from './store'

/** Single sign-on's rows in the server's SQLite database. */
export class SqliteSsoStore implements SsoStore {
  constructor(private readonly db: Database) {}

  identity(provider: Provider, subject: string): IdentityRow | null {
    return this.db.query<IdentityRow, [string, string]>('SELECT * FROM external_identities WHERE provider = ? AND subject = ?').get(provider, subject)
  }

  linkIdentity(row: IdentityRow): void {
    this.db.run(
      `INSERT INTO external_identities (provider, subject, user_id, issuer, email, created_at, last_login_at) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (provider, subject) DO UPDATE SET user_id = excluded.user_id, issuer = excluded.issuer, email = excluded.email, last_login_at = excluded.last_login_at`,
      [row.provider, row.subject, row.user_id, row.issuer, row.email, row.created_at, row.last_login_at],
    )
  }

  setRoles(userId: string, roles: string): void {
    this.db.run('UPDATE users SET roles = ? WHERE id = ?', [roles, userId])
  }

  insertDeviceCode(row: DeviceCodeRow): void {
    this.db.run(
      `INSERT INTO device_codes (device_code_hash, user_code, status, user_id, client_name, interval_seconds, created_at, expires_at, last_poll_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [row.device_code_hash, row.user_code, row.status, row.user_id, row.client_name, row.interval_seconds, row.created_at, row.expires_at, row.last_poll_at],
    )
  }

  deviceCodeByHash(hash: string): DeviceCodeRow | null {
    return this.db.query<DeviceCodeRow, [string]>('SELECT * FROM device_codes WHERE device_code_hash = ?').get(hash)
  }

  deviceCodeByUserCode(userCode: string): DeviceCodeRow | null {
    return this.db.query<DeviceCodeRow, [string]>('SELECT * FROM device_codes WHERE user_code = ?').get(userCode)
  }

  notePoll(hash: string, at: number, notBefore: number): boolean {
    return this.db.run('UPDATE device_codes SET last_poll_at = ? WHERE device_code_hash = ? AND last_poll_at <= ?', [at, hash, notBefore]).changes === 1
  }

  decideDeviceCode(userCode: string, status: 'approved' | 'denied', userId: string, now: number): boolean {
    return this.db.run("UPDATE device_codes SET status = ?, user_id = ? WHERE user_code = ? AND status = 'pending' AND expires_at > ?", [status, userId, userCode, now]).changes === 1
  }

  useDeviceCode(hash: string, now: number): string | null {
    const row = this.db
      .query<{ user_id: string }, [string, number]>("UPDATE device_codes SET status = 'used' WHERE device_code_hash = ? AND status = 'approved' AND expires_at > ? RETURNING user_id")
      .get(hash, now)
    return row?.user_id ?? null
  }

  insertOidcLogin(row: OidcLoginRow): void {
    this.db.run('INSERT INTO oidc_logins (state, nonce, code_verifier, return_to, expires_at) VALUES (?, ?, ?, ?, ?)', [row.state, row.nonce, row.code_verifier, row.return_to, row.expires_at])
  }

  takeOidcLogin(state: string, now: number): OidcLoginRow | null {
    const row = this.db.query<OidcLoginRow, [string]>('DELETE FROM oidc_logins WHERE state = ? RETURNING *').get(state)
    return row && row.expires_at > now ? row : null
  }

  deleteExpired(before: number): void {
    this.db.run('DELETE FROM device_codes WHERE expires_at < ?', [before])
    this.db.run('DELETE FROM oidc_logins WHERE expires_at < ?', [before])
  }
}
