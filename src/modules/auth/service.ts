import type { Database } from 'bun:sqlite'
import { randomUUID } from 'node:crypto'
import { AppError } from '../../core/errors'
import { ACCESS_TOKEN_SECONDS, hashToken, newOpaqueToken, type TokenSigner } from '../../core/tokens'
import { matchTotp, newTotpSecret, otpauthUrl } from './mfa'

/**
 * argon2id at OWASP's recommended floor (19 MiB, 2 passes, 1 lane) rather than Bun's default of
 * 64 MiB: a server taking logins at once holds that much per hash in flight (64 at 64 MiB: 4 GB),
 * and a start that creates the first admin peaked over its memory goal. Hashes made with other
 * parameters (older accounts) still verify: a hash carries its own.
 */
export const PASSWORD_HASHING = { algorithm: 'argon2id', memoryCost: 19_456, timeCost: 2 } as const

export type Role = 'admin' | 'user'

export interface User {
  id: string
  email: string
  roles: string[]
  mfaEnabled: boolean
  createdAt: string
  disabled: boolean
}

interface UserRow {
  id: string
  email: string
  password_hash: string
  roles: string
  mfa_enabled: number
  mfa_secret: string | null
  mfa_pending_secret: string | null
  mfa_last_step: number
  created_at: string
  disabled_at: string | null
}

export interface LoginResult {
  success: true
  accessToken: string
  refreshToken: string
  sessionId: string
  expiresIn: number
  user: Pick<User, 'id' | 'email' | 'roles' | 'mfaEnabled'>
}

/** The caller of an authenticated request. */
export interface Principal {
  user: User
  sessionId: string
  isAdmin: boolean
  /** Set when the caller authenticated with a personal API key (then `sessionId` is `apikey:<id>`). */
  apiKeyId?: string
}

/** Personal API keys (src/modules/apikeys), plugged in so a key works wherever an access token does. */
export interface ApiKeyResolver {
  /** True when the keys live in PostgreSQL: then the three calls below answer with promises. */
  readonly asynchronous: boolean
  authenticate(key: string): Principal | Promise<Principal>
  /** For `apikey:<id>` sessions. */
  isLive(sessionId: string): boolean | Promise<boolean>
  /** Called on every password change of the user. */
  revokeAllForUser(userId: string): number | Promise<number>
}

const THROTTLE_WINDOW_MS = 15 * 60 * 1000
const THROTTLE_FAILURES = 5

function toUser(row: UserRow): User {
  return {
    id: row.id,
    email: row.email,
    roles: JSON.parse(row.roles),
    mfaEnabled: row.mfa_enabled === 1,
    createdAt: row.created_at,
    disabled: row.disabled_at !== null,
  }
}

const normalizeEmail = (email: string) => email.trim().toLowerCase()

/** Accounts, sessions, tokens, MFA and login throttling. Owns the SQL of those tables. */
export class AuthService {
  private readonly userById
  private readonly userByEmail
  private readonly liveSession
  /**
   * Callers of live sessions, by session id. This process is the only writer of users and
   * sessions, so every change that could alter a principal (revocation, MFA state) drops the
   * cache; a revoked session is refused on its very next request, as without the cache.
   */
  private readonly principals = new Map<string, Principal>()
  private apiKeys: ApiKeyResolver | null = null

  constructor(
    private readonly db: Database,
    private readonly signer: TokenSigner,
  ) {
    this.userById = db.query<UserRow, [string]>('SELECT * FROM users WHERE id = ?')
    this.userByEmail = db.query<UserRow, [string]>('SELECT * FROM users WHERE email = ?')
    this.liveSession = db.query<{ user_id: string }, [string]>('SELECT user_id FROM sessions WHERE id = ? AND revoked_at IS NULL')
  }

  /** Lets bearer tokens that start with `uak_` authenticate as personal API keys. */
  acceptApiKeys(resolver: ApiKeyResolver): void {
    this.apiKeys = resolver
  }

  /**
   * Whether authenticate() and isSessionLive() may answer with a promise (API keys in
   * PostgreSQL); on SQLite they answer at once, and the auth macro stays synchronous.
   */
  get asynchronous(): boolean {
    return this.apiKeys?.asynchronous ?? false
  }

  /**
   * Deletes a user's API keys ahead of a password change when they live in PostgreSQL (outside
   * the SQLite transaction that changes the password): a failure then leaves the old password,
   * never a changed password with its old keys still working. On SQLite the keys go inside that
   * transaction (see keysInTransaction).
   */
  private revokeKeysFirst(userId: string): Promise<number> | null {
    return this.apiKeys?.asynchronous ? Promise.resolve(this.apiKeys.revokeAllForUser(userId)) : null
  }

  private keysInTransaction(userId: string): void {
    if (this.apiKeys && !this.apiKeys.asynchronous) this.apiKeys.revokeAllForUser(userId)
  }

  countUsers(): number {
    return this.db.query<{ n: number }, []>('SELECT count(*) AS n FROM users').get()!.n
  }

  /** A page of accounts, oldest first (admin view: never a password hash or MFA secret). */
  listUsers(limit = 1_000_000, offset = 0): { users: User[]; total: number } {
    const users = this.db.query<UserRow, [number, number]>('SELECT * FROM users ORDER BY created_at, email LIMIT ? OFFSET ?').all(limit, offset).map(toUser)
    return { users, total: this.countUsers() }
  }

  /**
   * Work to do before a user is deleted (files, caches, indexes the database cascade does not
   * reach). Each area that stores such things for a user registers one.
   */
  private readonly deletionSteps: ((userId: string) => void)[] = []

  onUserDeleted(step: (userId: string) => void): void {
    this.deletionSteps.push(step)
  }

  private requireUser(id: string): UserRow {
    const row = this.userById.get(id)
    if (!row) throw new AppError('NOT_FOUND', `User ${id} not found`)
    return row
  }

  /** Enabled admins other than `userId`; the last one may not be disabled or deleted. */
  private assertNotLastAdmin(row: UserRow, action: string): void {
    if (!JSON.parse(row.roles).includes('admin') || row.disabled_at !== null) return
    const others = this.db
      .query<{ n: number }, [string]>(`SELECT count(*) AS n FROM users WHERE id != ? AND disabled_at IS NULL AND EXISTS (SELECT 1 FROM json_each(users.roles) WHERE value = 'admin')`)
      .get(row.id)!.n
    if (others === 0) throw new AppError('CONFLICT', `Cannot ${action} the last admin: make another user an admin first`)
  }

  /** Forgets every cached principal of a user, so their tokens are checked against the database again. */
  private forgetPrincipals(userId: string): void {
    for (const [sessionId, principal] of this.principals) if (principal.user.id === userId) this.principals.delete(sessionId)
  }

  /** Revokes every live session of a user; returns how many there were. */
  revokeAllSessions(userId: string): number {
    this.forgetPrincipals(userId)
    return this.db.run('UPDATE sessions SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL', [new Date().toISOString(), userId]).changes
  }

  /** Sets a user's password (admin, or host recovery); signs out every session, deletes the API keys, clears login throttling. */
  async setPassword(id: string, newPassword: string): Promise<number> {
    const row = this.requireUser(id)
    const hash = await Bun.password.hash(newPassword, PASSWORD_HASHING)
    let revoked = 0
    const keysGone = this.revokeKeysFirst(id)
    if (keysGone) await keysGone
    this.db.transaction(() => {
      this.db.run('UPDATE users SET password_hash = ? WHERE id = ?', [hash, id])
      this.db.run('DELETE FROM login_failures WHERE email = ?', [row.email])
      revoked = this.revokeAllSessions(id)
      this.keysInTransaction(id)
    }).immediate()
    return revoked
  }

  /** Clears the login throttling of an account. Returns how many recorded failures were dropped. */
  unlock(id: string): number {
    const row = this.requireUser(id)
    return this.db.run('DELETE FROM login_failures WHERE email = ?', [row.email]).changes
  }

  /** Disables an account: no logins, and every token of it stops working at once. */
  disable(id: string): { user: User; sessionsRevoked: number } {
    const row = this.requireUser(id)
    this.assertNotLastAdmin(row, 'disable')
    let revoked = 0
    this.db.transaction(() => {
      this.db.run('UPDATE users SET disabled_at = coalesce(disabled_at, ?) WHERE id = ?', [new Date().toISOString(), id])
      revoked = this.revokeAllSessions(id)
    }).immediate()
    return { user: this.getUser(id)!, sessionsRevoked: revoked }
  }

  enable(id: string): User {
    this.requireUser(id)
    this.db.run('UPDATE users SET disabled_at = NULL WHERE id = ?', [id])
    this.forgetPrincipals(id)
    return this.getUser(id)!
  }

  /** Deletes a user and everything they own (the registered steps first, then the rows by cascade). */
  deleteUser(id: string): User {
    const row = this.requireUser(id)
    this.assertNotLastAdmin(row, 'delete')
    this.forgetPrincipals(id)
    for (const step of this.deletionSteps) step(id)
    this.db.run('DELETE FROM users WHERE id = ?', [id])
    return toUser(row)
  }

  findUserByEmail(email: string): User | null {
    const row = this.userByEmail.get(normalizeEmail(email))
    return row ? toUser(row) : null
  }

  /** Turns MFA off for a user without a code (host recovery only). */
  resetMfa(id: string): void {
    this.requireUser(id)
    this.db.run('UPDATE users SET mfa_enabled = 0, mfa_secret = NULL, mfa_pending_secret = NULL, mfa_last_step = 0 WHERE id = ?', [id])
    this.forgetPrincipals(id)
  }

  getUser(id: string): User | null {
    const row = this.userById.get(id)
    return row ? toUser(row) : null
  }

  /** The emails of those of `ids` that are accounts (deleted ones are left out). */
  emailsOf(ids: string[]): Map<string, string> {
    const emails = new Map<string, string>()
    for (const id of new Set(ids)) {
      const row = this.userById.get(id)
      if (row) emails.set(id, row.email)
    }
    return emails
  }

  async createUser(email: string, password: string, roles: Role[]): Promise<User> {
    return this.insertUser(email, await Bun.password.hash(password, PASSWORD_HASHING), roles)
  }

  /** For start-up, before the server answers anything. */
  createUserSync(email: string, password: string, roles: Role[]): User {
    return this.insertUser(email, Bun.password.hashSync(password, PASSWORD_HASHING), roles)
  }

  private insertUser(email: string, hash: string, roles: Role[]): User {
    const normalized = normalizeEmail(email)
    if (this.userByEmail.get(normalized)) throw new AppError('CONFLICT', `A user with email ${normalized} already exists`)
    const id = randomUUID()
    const uniqueRoles = [...new Set(roles.length ? roles : ['user'])]
    this.db.run('INSERT INTO users (id, email, password_hash, roles, created_at) VALUES (?, ?, ?, ?, ?)', [
      id,
      normalized,
      hash,
      JSON.stringify(uniqueRoles),
      new Date().toISOString(),
    ])
    return this.getUser(id)!
  }

  async login(email: string, password: string, mfaCode: string | null | undefined, userAgent?: string): Promise<LoginResult> {
    const normalized = normalizeEmail(email)
    this.assertNotThrottled(normalized)
    const row = this.userByEmail.get(normalized)
    // Hash anyway when the user is unknown, so timing does not reveal which emails exist.
    const passwordOk = row
      ? await Bun.password.verify(password, row.password_hash)
      : (await Bun.password.verify(password, DUMMY_HASH), false)
    if (!row || !passwordOk) {
      this.recordFailure(normalized)
      throw new AppError('INVALID_CREDENTIALS', 'Invalid email or password')
    }
    if (row.disabled_at !== null) throw new AppError('FORBIDDEN', 'This account has been disabled by an administrator')
    if (row.mfa_enabled === 1) {
      if (mfaCode === undefined || mfaCode === null || mfaCode === '') {
        throw new AppError('MFA_REQUIRED', 'This account has MFA enabled: send mfaCode with the 6-digit code from your authenticator')
      }
      if (!this.consumeTotp(row, row.mfa_secret!, mfaCode)) {
        this.recordFailure(normalized)
        throw new AppError('INVALID_MFA_CODE', 'Invalid or already used MFA code')
      }
    }
    this.db.run('DELETE FROM login_failures WHERE email = ?', [normalized])
    const sessionId = randomUUID()
    const now = new Date().toISOString()
    this.db.run('INSERT INTO sessions (id, user_id, created_at, last_used_at, user_agent) VALUES (?, ?, ?, ?, ?)', [
      sessionId,
      row.id,
      now,
      now,
      userAgent ?? null,
    ])
    return this.issueTokens(toUser(row), sessionId)
  }

  /** Rotates a refresh token. Presenting one that was already rotated revokes its session. */
  async refresh(refreshToken: string): Promise<LoginResult> {
    const hash = hashToken(refreshToken)
    const stored = this.db
      .query<{ session_id: string; used_at: string | null }, [string]>('SELECT session_id, used_at FROM refresh_tokens WHERE token_hash = ?')
      .get(hash)
    if (!stored) throw new AppError('UNAUTHORIZED', 'Invalid refresh token')
    if (stored.used_at !== null) {
      this.revokeSession(stored.session_id)
      throw new AppError('UNAUTHORIZED', 'Refresh token was already used; the session has been revoked, log in again')
    }
    const session = this.liveSession.get(stored.session_id)
    if (!session) throw new AppError('UNAUTHORIZED', 'Session has been revoked; log in again')
    const user = this.getUser(session.user_id)
    if (!user || user.disabled) throw new AppError('UNAUTHORIZED', 'Session has been revoked; log in again')
    const now = new Date().toISOString()
    this.db.run('UPDATE refresh_tokens SET used_at = ? WHERE token_hash = ?', [now, hash])
    this.db.run('UPDATE sessions SET last_used_at = ? WHERE id = ?', [now, stored.session_id])
    return this.issueTokens(user, stored.session_id)
  }

  /**
   * Changes the caller's password after checking the current one (a wrong one counts towards
   * login throttling, so a stolen access token cannot be used to guess it), signs out every
   * other session of the account and deletes its API keys. Returns how many sessions were signed out.
   */
  async changePassword(userId: string, keepSessionId: string, currentPassword: string, newPassword: string): Promise<number> {
    const row = this.userById.get(userId)!
    this.assertNotThrottled(row.email)
    if (!(await Bun.password.verify(currentPassword, row.password_hash))) {
      this.recordFailure(row.email)
      throw new AppError('INVALID_CREDENTIALS', 'The current password is wrong')
    }
    const hash = await Bun.password.hash(newPassword, PASSWORD_HASHING)
    const others = this.db
      .query<{ id: string }, [string, string]>('SELECT id FROM sessions WHERE user_id = ? AND id != ? AND revoked_at IS NULL')
      .all(userId, keepSessionId)
    // Keys made under the old password stop working with it.
    const keysGone = this.revokeKeysFirst(userId)
    if (keysGone) await keysGone
    this.db.transaction(() => {
      this.db.run('UPDATE users SET password_hash = ? WHERE id = ?', [hash, userId])
      for (const { id } of others) this.revokeSession(id)
      this.keysInTransaction(userId)
    }).immediate()
    return others.length
  }

  isSessionLive(sessionId: string): boolean | Promise<boolean> {
    if (this.apiKeys && sessionId.startsWith('apikey:')) return this.apiKeys.isLive(sessionId)
    return this.liveSession.get(sessionId) !== null
  }

  revokeSession(sessionId: string): void {
    this.principals.delete(sessionId)
    this.db.run('UPDATE sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', [new Date().toISOString(), sessionId])
  }

  /**
   * Resolves a bearer token (access token, or personal API key) to its caller; the session must
   * still be live. A promise only for an API key kept in PostgreSQL (see `asynchronous`).
   */
  authenticate(token: string): Principal | Promise<Principal> {
    if (this.apiKeys && token.startsWith('uak_')) return this.apiKeys.authenticate(token)
    const claims = this.signer.verify(token)
    const cached = this.principals.get(claims.sid)
    if (cached && cached.user.id === claims.sub) return cached
    // The session must still be live, so that logout and reuse detection bite at once.
    const session = this.liveSession.get(claims.sid)
    if (!session || session.user_id !== claims.sub) throw new AppError('UNAUTHORIZED', 'Session has been revoked; log in again')
    const user = this.getUser(claims.sub)
    if (!user) throw new AppError('UNAUTHORIZED', 'User no longer exists')
    if (user.disabled) throw new AppError('UNAUTHORIZED', 'This account has been disabled by an administrator')
    const principal = { user, sessionId: claims.sid, isAdmin: user.roles.includes('admin') }
    if (this.principals.size >= 10_000) this.principals.clear()
    this.principals.set(claims.sid, principal)
    return principal
  }

  setupMfa(userId: string): { secret: string; otpauthUrl: string } {
    const user = this.userById.get(userId)!
    if (user.mfa_enabled === 1) throw new AppError('CONFLICT', 'MFA is already enabled; disable it first to set up a new secret')
    const secret = newTotpSecret()
    this.db.run('UPDATE users SET mfa_pending_secret = ? WHERE id = ?', [secret, userId])
    return { secret, otpauthUrl: otpauthUrl(secret, user.email) }
  }

  enableMfa(userId: string, code: string): void {
    const user = this.userById.get(userId)!
    if (user.mfa_enabled === 1) throw new AppError('CONFLICT', 'MFA is already enabled')
    if (!user.mfa_pending_secret) throw new AppError('VALIDATION_ERROR', 'Call POST /auth/mfa/setup before enabling MFA')
    if (!this.consumeTotp(user, user.mfa_pending_secret, code)) {
      throw new AppError('INVALID_MFA_CODE', 'Invalid MFA code', { status: 400 })
    }
    this.db.run('UPDATE users SET mfa_enabled = 1, mfa_secret = mfa_pending_secret, mfa_pending_secret = NULL WHERE id = ?', [userId])
    this.principals.clear()
  }

  disableMfa(userId: string, code: string): void {
    const user = this.userById.get(userId)!
    if (user.mfa_enabled !== 1) throw new AppError('VALIDATION_ERROR', 'MFA is not enabled')
    if (!this.consumeTotp(user, user.mfa_secret!, code)) {
      throw new AppError('INVALID_MFA_CODE', 'Invalid MFA code', { status: 400 })
    }
    this.db.run('UPDATE users SET mfa_enabled = 0, mfa_secret = NULL, mfa_last_step = 0 WHERE id = ?', [userId])
    this.principals.clear()
  }

  private consumeTotp(user: UserRow, secret: string, code: string): boolean {
    const step = matchTotp(secret, code.trim())
    if (step === null) return false
    // Each code works once: the step must be newer than the last one accepted.
    const updated = this.db.run('UPDATE users SET mfa_last_step = ? WHERE id = ? AND mfa_last_step < ?', [step, user.id, step])
    return updated.changes === 1
  }

  private assertNotThrottled(email: string): void {
    const since = Date.now() - THROTTLE_WINDOW_MS
    const recent = this.db
      .query<{ at: number }, [string, number, number]>('SELECT at FROM login_failures WHERE email = ? AND at > ? ORDER BY at DESC LIMIT ?')
      .all(email, since, THROTTLE_FAILURES)
    if (recent.length < THROTTLE_FAILURES) return
    const oldest = recent[recent.length - 1]!.at
    const retryAfter = Math.max(1, Math.ceil((oldest + THROTTLE_WINDOW_MS - Date.now()) / 1000))
    throw new AppError('TOO_MANY_ATTEMPTS', `Too many failed logins for this account; try again in ${retryAfter} seconds`, {
      headers: { 'retry-after': String(retryAfter) },
    })
  }

  private recordFailure(email: string): void {
    const now = Date.now()
    this.db.run('INSERT INTO login_failures (email, at) VALUES (?, ?)', [email, now])
    this.db.run('DELETE FROM login_failures WHERE at <= ?', [now - THROTTLE_WINDOW_MS])
  }

  private async issueTokens(user: User, sessionId: string): Promise<LoginResult> {
    const refreshToken = newOpaqueToken()
    this.db.run('INSERT INTO refresh_tokens (token_hash, session_id, created_at) VALUES (?, ?, ?)', [
      hashToken(refreshToken),
      sessionId,
      new Date().toISOString(),
    ])
    const accessToken = this.signer.sign({ sub: user.id, sid: sessionId, roles: user.roles })
    return {
      success: true,
      accessToken,
      refreshToken,
      sessionId,
      expiresIn: ACCESS_TOKEN_SECONDS,
      user: { id: user.id, email: user.email, roles: user.roles, mfaEnabled: user.mfaEnabled },
    }
  }
}

const DUMMY_HASH = Bun.password.hashSync('not-a-real-password', PASSWORD_HASHING)
