import type { Postgres } from '../../db/postgres'
import type { DeviceCodeRow, IdentityRow, OidcLoginRow, Provider, SsoStore } from './store'

const deviceRow = (row: DeviceCodeRow): DeviceCodeRow => ({ ...row, interval_seconds: Number(row.interval_seconds), expires_at: Number(row.expires_at), last_poll_at: Number(row.last_poll_at) })

/** Single sign-on's rows in PostgreSQL (UAGENT_DATABASE_URL), shared by every replica. */
export class PostgresSsoStore implements SsoStore {
  constructor(private readonly sql: Postgres) {}

  async identity(provider: Provider, subject: string): Promise<IdentityRow | null> {
    const rows: IdentityRow[] = await this.sql`SELECT * FROM external_identities WHERE provider = ${provider} AND subject = ${subject}`
    return rows[0] ?? null
  }

  async linkIdentity(row: IdentityRow): Promise<void> {
    await this.sql`
      INSERT INTO external_identities (provider, subject, user_id, issuer, email, created_at, last_login_at)
      VALUES (${row.provider}, ${row.subject}, ${row.user_id}, ${row.issuer}, ${row.email}, ${row.created_at}, ${row.last_login_at})
      ON CONFLICT (provider, subject) DO UPDATE SET user_id = excluded.user_id, issuer = excluded.issuer, email = excluded.email, last_login_at = excluded.last_login_at`
  }

  async setRoles(userId: string, roles: string): Promise<void> {
    await this.sql`UPDATE users SET roles = ${roles} WHERE id = ${userId}`
  }

  async insertDeviceCode(row: DeviceCodeRow): Promise<void> {
    await this.sql`
      INSERT INTO device_codes (device_code_hash, user_code, status, user_id, client_name, interval_seconds, created_at, expires_at, last_poll_at)
      VALUES (${row.device_code_hash}, ${row.user_code}, ${row.status}, ${row.user_id}, ${row.client_name}, ${row.interval_seconds}, ${row.created_at}, ${row.expires_at}, ${row.last_poll_at})`
  }

  async deviceCodeByHash(hash: string): Promise<DeviceCodeRow | null> {
    const rows: DeviceCodeRow[] = await this.sql`SELECT * FROM device_codes WHERE device_code_hash = ${hash}`
    return rows[0] ? deviceRow(rows[0]) : null
  }

  async deviceCodeByUserCode(userCode: string): Promise<DeviceCodeRow | null> {
    const rows: DeviceCodeRow[] = await this.sql`SELECT * FROM device_codes WHERE user_code = ${userCode}`
    return rows[0] ? deviceRow(rows[0]) : null
  }

  async notePoll(hash: string, at: number, notBefore: number): Promise<boolean> {
    return (await this.sql`UPDATE device_codes SET last_poll_at = ${at} WHERE device_code_hash = ${hash} AND last_poll_at <= ${notBefore}`).count === 1
  }

  async decideDeviceCode(userCode: string, status: 'approved' | 'denied', userId: string, now: number): Promise<boolean> {
    const result = await this.sql`UPDATE device_codes SET status = ${status}, user_id = ${userId} WHERE user_code = ${userCode} AND status = 'pending' AND expires_at > ${now}`
    return result.count === 1
  }

  async useDeviceCode(hash: string, now: number): Promise<string | null> {
    const rows: { user_id: string }[] = await this.sql`
      UPDATE device_codes SET status = 'used' WHERE device_code_hash = ${hash} AND status = 'approved' AND expires_at > ${now} RETURNING user_id`
    return rows[0]?.user_id ?? null
  }

  async insertOidcLogin(row: OidcLoginRow): Promise<void> {
    await this.sql`INSERT INTO oidc_logins (state, nonce, code_verifier, return_to, expires_at) VALUES (${row.state}, ${row.nonce}, ${row.code_verifier}, ${row.return_to}, ${row.expires_at})`
  }

  async takeOidcLogin(state: string, now: number): Promise<OidcLoginRow | null> {
    const rows: OidcLoginRow[] = await this.sql`DELETE FROM oidc_logins WHERE state = ${state} RETURNING *`
    const row = rows[0]
    return row && Number(row.expires_at) > now ? { ...row, expires_at: Number(row.expires_at) } : null
  }

  async deleteExpired(before: number): Promise<void> {
    await this.sql`DELETE FROM device_codes WHERE expires_at < ${before}`
    await this.sql`DELETE FROM oidc_logins WHERE expires_at < ${before}`
  }
}
