import type { MaybePromise } from '../../db/maybe-promise'

/** A row of `users`, as both backends return it. */
export interface UserRow {
  id: string
  email: string
  password_hash: string
  /** JSON array of role names. */
  roles: string
  mfa_enabled: number
  mfa_secret: string | null
  mfa_pending_secret: string | null
  mfa_last_step: number
  created_at: string
  disabled_at: string | null
}

export interface NewUserRow {
  id: string
  email: string
  password_hash: string
  roles: string
  created_at: string
}

export interface NewSession {
  id: string
  userId: string
  at: string
  userAgent: string | null
}

/**
 * Accounts, sessions, refresh tokens and login failures, whatever the backend. Each method is one
 * atomic step (a write that reads first does so in one statement or one transaction that takes
 * the write lock first), so the service never holds a read across an await. The SQLite adapter
 * answers synchronously (`asynchronous: false`), the PostgreSQL adapter with promises.
 */
export interface AuthStore {
  readonly asynchronous: boolean
  countUsers(): MaybePromise<number>
  /** Oldest first, ties by email. */
  listUsers(limit: number, offset: number): MaybePromise<UserRow[]>
  userById(id: string): MaybePromise<UserRow | null>
  userByEmail(email: string): MaybePromise<UserRow | null>
  /** Users of `ids` that exist, by id. */
  usersByIds(ids: string[]): MaybePromise<UserRow[]>
  /** Enabled admins other than `id`. */
  otherEnabledAdmins(id: string): MaybePromise<number>
  /** Inserts a user unless the email is taken (then false, nothing written). */
  insertUser(row: NewUserRow): MaybePromise<boolean>
  /** Deletes a user; their sessions and refresh tokens (and, by foreign key, everything they own) go too. */
  deleteUser(id: string): MaybePromise<void>

  /**
   * Sets a password hash and revokes sessions of the user in one transaction: every one, or every
   * one but `keepSessionId`. With `clearFailures` the email's login failures are dropped too.
   * `alsoInTransaction` runs inside it (SQLite: the user's API keys, in the same database).
   * Returns how many sessions were revoked.
   */
  setPassword(
    id: string,
    hash: string,
    options: { at: string; keepSessionId?: string; clearFailures?: string; alsoInTransaction?: () => void },
  ): MaybePromise<number>
  /** Marks a user disabled (keeping an earlier time) and revokes every session, in one transaction; how many were revoked. */
  disableUser(id: string, at: string): MaybePromise<number>
  enableUser(id: string): MaybePromise<void>

  setMfaPending(id: string, secret: string): MaybePromise<void>
  /** Turns on MFA with the pending secret. */
  enableMfa(id: string): MaybePromise<void>
  /** Turns MFA off; with `clearPending`, the pending secret goes too (host recovery). */
  disableMfa(id: string, clearPending: boolean): MaybePromise<void>
  /** Records `step` as the last TOTP step used, if it is newer than the last one: true when it was. */
  consumeTotpStep(id: string, step: number): MaybePromise<boolean>

  /** The times (ms) of the newest `limit` failures of an email after `since`, newest first. */
  recentFailures(email: string, since: number, limit: number): MaybePromise<number[]>
  /** Records a failure at `at` and forgets those at or before `forgetBefore`. */
  recordFailure(email: string, at: number, forgetBefore: number): MaybePromise<void>
  /** How many failures were dropped. */
  clearFailures(email: string): MaybePromise<number>

  insertSession(session: NewSession): MaybePromise<void>
  /** The owner of a session that is not revoked; null otherwise. */
  liveSessionUser(sessionId: string): MaybePromise<string | null>
  /** A live session's owner row, in one read (the per-request check on PostgreSQL). */
  liveSessionOwner(sessionId: string): MaybePromise<UserRow | null>
  revokeSession(sessionId: string, at: string): MaybePromise<void>
  /** Revokes every live session of a user; how many there were. */
  revokeAllSessions(userId: string, at: string): MaybePromise<number>

  insertRefreshToken(hash: string, sessionId: string, at: string): MaybePromise<void>
  refreshToken(hash: string): MaybePromise<{ session_id: string; used_at: string | null } | null>
  /**
   * Marks an unused refresh token used and touches its session; false when it was used meanwhile
   * (a concurrent refresh with the same token: the caller treats it as reuse).
   */
  useRefreshToken(hash: string, sessionId: string, at: string): MaybePromise<boolean>
}
