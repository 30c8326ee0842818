import { randomUUID } from 'node:crypto'
import { AppError } from '../../core/errors'
import { ACCESS_TOKEN_SECONDS, hashToken, newOpaqueToken, type TokenSigner } from '../../core/tokens'
import { andThen, type MaybePromise } from '../../db/maybe-promise'
import { matchTotp, newTotpSecret, otpauthUrl } from './mfa'
import { LIVE_CHECK_MS, LiveCache } from './live-cache'
import type { AuthStore, UserRow } from './store'

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

/**
 * A directory that checks passwords (LDAP), plugged in by single sign-on (src/modules/sso) so that
 * POST /auth/login and the web sign-in work for its users.
 */
export interface PasswordDirectory {
  /**
   * Checks `password` for `email` in the directory: null when the directory does not know the
   * email; the (created or updated) local user's id when the password is right. Throws
   * INVALID_CREDENTIALS for a wrong password and DIRECTORY_UNAVAILABLE when it cannot be reached.
   */
  authenticate(email: string, password: string): Promise<string | null>
}

/** Who may sign in with a password kept here (UAGENT_LOCAL_LOGIN, UAGENT_ADMIN_EMAIL). */
export interface LocalLoginPolicy {
  enabled: boolean
  /** The admin who may always sign in with a local password (a way back in when SSO is broken). */
  adminEmail?: string
}

/**
 * The password hash of accounts made by single sign-on: not an argon2 hash, so no password ever
 * matches it (they sign in through their provider, or `uagent login --web`).
 */
export const EXTERNAL_ACCOUNT = '!external'

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

/** Accounts, sessions, tokens, MFA and login throttling, kept in an AuthStore (SQLite or PostgreSQL). */
export class AuthService {
  /**
   * Callers of live sessions and users, as last read. Every change this process makes that could
   * alter a principal (revocation, password, disabled, MFA state) drops the entries it touches, so
   * a revoked session is refused on its very next request. On PostgreSQL entries expire after
   * LIVE_CHECK_MS, so changes made by other servers are seen too; on SQLite they never do.
   */
  private readonly cache: LiveCache<Principal, User>
  /** Session reads under way on PostgreSQL: concurrent requests of one session share one. */
  private readonly pending = new Map<string, Promise<UserRow | null>>()
  private apiKeys: ApiKeyResolver | null = null
  private directory: PasswordDirectory | null = null
  private localLogin: LocalLoginPolicy = { enabled: true }

  constructor(
    private readonly store: AuthStore,
    private readonly signer: TokenSigner,
  ) {
    this.cache = new LiveCache(store.asynchronous ? LIVE_CHECK_MS : null)
  }

  /** Lets bearer tokens that start with `uak_` authenticate as personal API keys. */
  acceptApiKeys(resolver: ApiKeyResolver): void {
    this.apiKeys = resolver
  }

  /** Lets an LDAP directory check the passwords of the emails it knows (see login). */
  useDirectory(directory: PasswordDirectory | null): void {
    this.directory = directory
  }

  /** UAGENT_LOCAL_LOGIN=off: passwords kept here work for the admin of UAGENT_ADMIN_EMAIL only. */
  setLocalLogin(policy: LocalLoginPolicy): void {
    this.localLogin = { enabled: policy.enabled, adminEmail: policy.adminEmail ? normalizeEmail(policy.adminEmail) : undefined }
  }

  /**
   * Whether authenticate() and isSessionLive() may answer with a promise (accounts or API keys
   * in PostgreSQL); on SQLite they answer at once, and the auth macro stays synchronous.
   */
  get asynchronous(): boolean {
    return this.store.asynchronous || (this.apiKeys?.asynchronous ?? false)
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

  private keysInTransaction(userId: string): (() => void) | undefined {
    const keys = this.apiKeys
    return keys && !keys.asynchronous ? () => void keys.revokeAllForUser(userId) : undefined
  }

  countUsers(): MaybePromise<number> {
    return this.store.countUsers()
  }

  /** A page of accounts, oldest first (admin view: never a password hash or MFA secret). */
  listUsers(limit = 1_000_000, offset = 0): MaybePromise<{ users: User[]; total: number }> {
    return andThen(this.store.listUsers(limit, offset), (rows) => andThen(this.store.countUsers(), (total) => ({ users: rows.map(toUser), total })))
  }

  /**
   * Work to do before a user is deleted (files, caches, indexes the database cascade does not
   * reach). Each area that stores such things for a user registers one.
   */
  private readonly deletionSteps: ((userId: string) => void)[] = []

  onUserDeleted(step: (userId: string) => void): void {
    this.deletionSteps.push(step)
  }

  private requireUser(id: string): MaybePromise<UserRow> {
    return andThen(this.store.userById(id), (row) => {
      if (!row) throw new AppError('NOT_FOUND', `User ${id} not found`)
      return row
    })
  }

  /** Enabled admins other than `userId`; the last one may not be disabled or deleted. */
  private async assertNotLastAdmin(row: UserRow, action: string): Promise<void> {
    if (!JSON.parse(row.roles).includes('admin') || row.disabled_at !== null) return
    if ((await this.store.otherEnabledAdmins(row.id)) === 0) throw new AppError('CONFLICT', `Cannot ${action} the last admin: make another user an admin first`)
  }

  /**
   * Runs a write, forgetting what it changes both before (a request meanwhile reads it again)
   * and once it is done (a read that raced the write is not trusted).
   */
  private changing<T>(target: { userId?: string; sessionId?: string }, write: () => MaybePromise<T>): MaybePromise<T> {
    this.cache.forget(target)
    return andThen(write(), (value) => {
      this.cache.forget(target)
      for (const listener of this.changeListeners) listener(target)
      return value
    })
  }

  private readonly changeListeners: ((target: { userId?: string; sessionId?: string }) => void)[] = []

  /**
   * Calls `listener` after each committed change to a session or user (logout, password, roles,
   * disabled, MFA, deleted): the replicas are told (through Redis), so that they drop what they
   * cached at once rather than within LIVE_CHECK_MS.
   */
  onChanged(listener: (target: { userId?: string; sessionId?: string }) => void): void {
    this.changeListeners.push(listener)
  }

  /** Another replica changed a session or user: what this one cached of it is read again. */
  changedElsewhere(target: { userId?: string; sessionId?: string }): void {
    this.cache.forget(target)
  }

  /** Revokes every live session of a user; returns how many there were. */
  revokeAllSessions(userId: string): MaybePromise<number> {
    return this.changing({ userId }, () => this.store.revokeAllSessions(userId, new Date().toISOString()))
  }

  /** Sets a user's password (admin, or host recovery); signs out every session, deletes the API keys, clears login throttling. */
  async setPassword(id: string, newPassword: string): Promise<number> {
    const row = await this.requireUser(id)
    const hash = await Bun.password.hash(newPassword, PASSWORD_HASHING)
    const keysGone = this.revokeKeysFirst(id)
    if (keysGone) await keysGone
    return this.changing({ userId: id }, () =>
      this.store.setPassword(id, hash, { at: new Date().toISOString(), clearFailures: row.email, alsoInTransaction: this.keysInTransaction(id) }),
    )
  }

  /** Clears the login throttling of an account. Returns how many recorded failures were dropped. */
  async unlock(id: string): Promise<number> {
    const row = await this.requireUser(id)
    return this.store.clearFailures(row.email)
  }

  /** Disables an account: no logins, and every token of it stops working at once. */
  async disable(id: string): Promise<{ user: User; sessionsRevoked: number }> {
    const row = await this.requireUser(id)
    await this.assertNotLastAdmin(row, 'disable')
    const revoked = await this.changing({ userId: id }, () => this.store.disableUser(id, new Date().toISOString()))
    return { user: (await this.getUser(id))!, sessionsRevoked: revoked }
  }

  async enable(id: string): Promise<User> {
    await this.requireUser(id)
    await this.changing({ userId: id }, () => this.store.enableUser(id))
    return (await this.getUser(id))!
  }

  /** Deletes a user and everything they own (the registered steps first, then the rows by cascade). */
  async deleteUser(id: string): Promise<User> {
    const row = await this.requireUser(id)
    await this.assertNotLastAdmin(row, 'delete')
    this.cache.forget({ userId: id })
    for (const step of this.deletionSteps) step(id)
    await this.changing({ userId: id }, () => this.store.deleteUser(id))
    return toUser(row)
  }

  findUserByEmail(email: string): MaybePromise<User | null> {
    return andThen(this.store.userByEmail(normalizeEmail(email)), (row) => (row ? toUser(row) : null))
  }

  /** Turns MFA off for a user without a code (host recovery only). */
  async resetMfa(id: string): Promise<void> {
    await this.requireUser(id)
    await this.changing({ userId: id }, () => this.store.disableMfa(id, true))
  }

  /**
   * A user, or null. On PostgreSQL, answered from what this process read within LIVE_CHECK_MS
   * (API keys and chat ask on every request), otherwise read again.
   */
  getUser(id: string): MaybePromise<User | null> {
    if (!this.store.asynchronous) {
      const row = this.store.userById(id) as UserRow | null
      return row ? toUser(row) : null
    }
    const cached = this.cache.user(id)
    if (cached) return cached.user
    const [at, epoch] = [this.cache.now(), this.cache.epoch]
    return andThen(this.store.userById(id), (row) => {
      const user = row ? toUser(row) : null
      this.cache.rememberUser(id, user, at, epoch)
      return user
    })
  }

  /** The emails of those of `ids` that are accounts (deleted ones are left out). */
  emailsOf(ids: string[]): MaybePromise<Map<string, string>> {
    return andThen(this.store.usersByIds([...new Set(ids)]), (rows) => new Map(rows.map((row) => [row.id, row.email])))
  }

  async createUser(email: string, password: string, roles: Role[]): Promise<User> {
    return this.insertUser(email, await Bun.password.hash(password, PASSWORD_HASHING), roles)
  }

  /** For start-up on SQLite, before the server answers anything. */
  createUserSync(email: string, password: string, roles: Role[]): User {
    if (this.store.asynchronous) throw new Error('createUserSync needs the SQLite store: use createUser')
    return this.insertUser(email, Bun.password.hashSync(password, PASSWORD_HASHING), roles) as User
  }

  /** An account made by single sign-on: it has no password here. CONFLICT when the email is taken. */
  createExternalUser(email: string, roles: Role[]): MaybePromise<User> {
    return this.insertUser(email, EXTERNAL_ACCOUNT, roles)
  }

  /** Tells this process (and, through onChanged, the replicas) that a user's row changed outside this service (roles set by SSO). */
  userChanged(userId: string): void {
    this.changing({ userId }, () => undefined)
  }

  /**
   * Signs a user in who proved who they are elsewhere (an SSO provider, an approved device
   * code): a new session and its tokens, as after a password login. FORBIDDEN when disabled here,
   * whatever the provider says.
   */
  async signInAs(userId: string, userAgent?: string): Promise<LoginResult> {
    const row = await this.store.userById(userId)
    if (!row) throw new AppError('UNAUTHORIZED', 'This account no longer exists')
    if (row.disabled_at !== null) throw new AppError('FORBIDDEN', 'This account has been disabled by an administrator')
    const sessionId = randomUUID()
    await this.store.insertSession({ id: sessionId, userId: row.id, at: new Date().toISOString(), userAgent: userAgent ?? null })
    return this.issueTokens(toUser(row), sessionId)
  }

  /** Inserts an account; CONFLICT when the email is taken (checked by the insert itself, so two at once make one). */
  private insertUser(email: string, hash: string, roles: Role[]): MaybePromise<User> {
    const normalized = normalizeEmail(email)
    const row = { id: randomUUID(), email: normalized, password_hash: hash, roles: JSON.stringify([...new Set(roles.length ? roles : ['user'])]), created_at: new Date().toISOString() }
    return andThen(this.store.insertUser(row), (inserted) => {
      if (!inserted) throw new AppError('CONFLICT', `A user with email ${normalized} already exists`)
      return toUser({ ...row, mfa_enabled: 0, mfa_secret: null, mfa_pending_secret: null, mfa_last_step: 0, disabled_at: null })
    })
  }

  async login(email: string, password: string, mfaCode: string | null | undefined, userAgent?: string): Promise<LoginResult> {
    const normalized = normalizeEmail(email)
    await this.assertNotThrottled(normalized)
    const row = (await this.directoryLogin(normalized, password)) ?? (await this.localPasswordLogin(normalized, password))
    if (row.disabled_at !== null) throw new AppError('FORBIDDEN', 'This account has been disabled by an administrator')
    if (row.mfa_enabled === 1) {
      if (mfaCode === undefined || mfaCode === null || mfaCode === '') {
        throw new AppError('MFA_REQUIRED', 'This account has MFA enabled: send mfaCode with the 6-digit code from your authenticator')
      }
      if (!(await this.consumeTotp(row, row.mfa_secret!, mfaCode))) {
        await this.recordFailure(normalized)
        throw new AppError('INVALID_MFA_CODE', 'Invalid or already used MFA code')
      }
    }
    await this.store.clearFailures(normalized)
    const sessionId = randomUUID()
    await this.store.insertSession({ id: sessionId, userId: row.id, at: new Date().toISOString(), userAgent: userAgent ?? null })
    return this.issueTokens(toUser(row), sessionId)
  }

  /**
   * The directory's answer for an email it knows (its user's row), null when it does not know
   * the email. A directory that cannot be reached refuses its own users with 503 but lets a
   * local account (one with a password here) through to the local check.
   */
  private async directoryLogin(email: string, password: string): Promise<UserRow | null> {
    if (!this.directory) return null
    let userId: string | null
    try {
      userId = await this.directory.authenticate(email, password)
    } catch (error) {
      if (error instanceof AppError && error.code === 'INVALID_CREDENTIALS') await this.recordFailure(email)
      if (error instanceof AppError && error.code === 'DIRECTORY_UNAVAILABLE') {
        const local = await this.store.userByEmail(email)
        if (local && local.password_hash !== EXTERNAL_ACCOUNT) return null
      }
      throw error
    }
    return userId === null ? null : this.requireUser(userId)
  }

  private async localPasswordLogin(email: string, password: string): Promise<UserRow> {
    const row = await this.store.userByEmail(email)
    const usable = row !== null && row.password_hash !== EXTERNAL_ACCOUNT
    // Hash anyway when the user is unknown, so timing does not reveal which emails exist.
    const passwordOk = usable ? await Bun.password.verify(password, row.password_hash) : (await Bun.password.verify(password, DUMMY_HASH), false)
    if (!row || !passwordOk) {
      await this.recordFailure(email)
      throw new AppError('INVALID_CREDENTIALS', 'Invalid email or password')
    }
    if (!this.localLogin.enabled && email !== this.localLogin.adminEmail) {
      throw new AppError('FORBIDDEN', 'Password sign-in is off on this server: sign in with single sign-on')
    }
    return row
  }

  /** Rotates a refresh token. Presenting one that was already rotated revokes its session. */
  async refresh(refreshToken: string): Promise<LoginResult> {
    const hash = hashToken(refreshToken)
    const stored = await this.store.refreshToken(hash)
    if (!stored) throw new AppError('UNAUTHORIZED', 'Invalid refresh token')
    const reused = async () => {
      await this.revokeSession(stored.session_id)
      return new AppError('UNAUTHORIZED', 'Refresh token was already used; the session has been revoked, log in again')
    }
    if (stored.used_at !== null) throw await reused()
    const owner = await this.store.liveSessionOwner(stored.session_id)
    if (!owner) throw new AppError('UNAUTHORIZED', 'Session has been revoked; log in again')
    const user = toUser(owner)
    if (user.disabled) throw new AppError('UNAUTHORIZED', 'Session has been revoked; log in again')
    // Used by a concurrent refresh meanwhile: the token was presented twice.
    if (!(await this.store.useRefreshToken(hash, stored.session_id, new Date().toISOString()))) throw await reused()
    return this.issueTokens(user, stored.session_id)
  }

  /**
   * Changes the caller's password after checking the current one (a wrong one counts towards
   * login throttling, so a stolen access token cannot be used to guess it), signs out every
   * other session of the account and deletes its API keys. Returns how many sessions were signed out.
   */
  async changePassword(userId: string, keepSessionId: string, currentPassword: string, newPassword: string): Promise<number> {
    const row = (await this.store.userById(userId))!
    await this.assertNotThrottled(row.email)
    if (row.password_hash === EXTERNAL_ACCOUNT) throw new AppError('VALIDATION_ERROR', 'This account signs in through single sign-on and has no password here to change')
    if (!(await Bun.password.verify(currentPassword, row.password_hash))) {
      await this.recordFailure(row.email)
      throw new AppError('INVALID_CREDENTIALS', 'The current password is wrong')
    }
    const hash = await Bun.password.hash(newPassword, PASSWORD_HASHING)
    // Keys made under the old password stop working with it.
    const keysGone = this.revokeKeysFirst(userId)
    if (keysGone) await keysGone
    return this.changing({ userId }, () =>
      this.store.setPassword(userId, hash, { at: new Date().toISOString(), keepSessionId, alsoInTransaction: this.keysInTransaction(userId) }),
    )
  }

  /** Whether a session (or the API key behind an `apikey:` one) still works; WebSocket messages check this. */
  isSessionLive(sessionId: string): MaybePromise<boolean> {
    if (this.apiKeys && sessionId.startsWith('apikey:')) return this.apiKeys.isLive(sessionId)
    if (this.cache.sessionSeenLive(sessionId)) return true
    return andThen(this.store.liveSessionUser(sessionId), (userId) => userId !== null)
  }

  revokeSession(sessionId: string): MaybePromise<void> {
    return this.changing({ sessionId }, () => this.store.revokeSession(sessionId, new Date().toISOString()))
  }

  /**
   * Resolves a bearer token (access token, or personal API key) to its caller; the session must
   * still be live. A promise only when the accounts or API keys are in PostgreSQL (see
   * `asynchronous`), and there only when what this process read is older than LIVE_CHECK_MS.
   */
  authenticate(token: string): MaybePromise<Principal> {
    if (this.apiKeys && token.startsWith('uak_')) return this.apiKeys.authenticate(token)
    const claims = this.signer.verify(token)
    const cached = this.cache.principal(claims.sid, claims.sub)
    if (cached) return cached
    // The session must still be live, so that logout and reuse detection bite at once.
    const [at, epoch] = [this.cache.now(), this.cache.epoch]
    return andThen(this.sessionOwner(claims.sid), (row) => {
      if (!row || row.id !== claims.sub) throw new AppError('UNAUTHORIZED', 'Session has been revoked; log in again')
      const user = toUser(row)
      if (user.disabled) throw new AppError('UNAUTHORIZED', 'This account has been disabled by an administrator')
      const principal = { user, sessionId: claims.sid, isAdmin: user.roles.includes('admin') }
      this.cache.rememberPrincipal(claims.sid, principal, at, epoch)
      if (this.store.asynchronous) this.cache.rememberUser(user.id, user, at, epoch)
      return principal
    })
  }

  /** A live session's owner; on PostgreSQL, one read shared by the requests that ask at once. */
  private sessionOwner(sessionId: string): MaybePromise<UserRow | null> {
    if (!this.store.asynchronous) return this.store.liveSessionOwner(sessionId)
    const pending = this.pending.get(sessionId)
    if (pending) return pending
    const read = Promise.resolve(this.store.liveSessionOwner(sessionId)).finally(() => this.pending.delete(sessionId))
    this.pending.set(sessionId, read)
    return read
  }

  async setupMfa(userId: string): Promise<{ secret: string; otpauthUrl: string }> {
    const user = (await this.store.userById(userId))!
    if (user.mfa_enabled === 1) throw new AppError('CONFLICT', 'MFA is already enabled; disable it first to set up a new secret')
    const secret = newTotpSecret()
    await this.store.setMfaPending(userId, secret)
    return { secret, otpauthUrl: otpauthUrl(secret, user.email) }
  }

  async enableMfa(userId: string, code: string): Promise<void> {
    const user = (await this.store.userById(userId))!
    if (user.mfa_enabled === 1) throw new AppError('CONFLICT', 'MFA is already enabled')
    if (!user.mfa_pending_secret) throw new AppError('VALIDATION_ERROR', 'Call POST /auth/mfa/setup before enabling MFA')
    if (!(await this.consumeTotp(user, user.mfa_pending_secret, code))) {
      throw new AppError('INVALID_MFA_CODE', 'Invalid MFA code', { status: 400 })
    }
    await this.changing({ userId }, () => this.store.enableMfa(userId))
  }

  async disableMfa(userId: string, code: string): Promise<void> {
    const user = (await this.store.userById(userId))!
    if (user.mfa_enabled !== 1) throw new AppError('VALIDATION_ERROR', 'MFA is not enabled')
    if (!(await this.consumeTotp(user, user.mfa_secret!, code))) {
      throw new AppError('INVALID_MFA_CODE', 'Invalid MFA code', { status: 400 })
    }
    await this.changing({ userId }, () => this.store.disableMfa(userId, false))
  }

  private consumeTotp(user: UserRow, secret: string, code: string): MaybePromise<boolean> {
    const step = matchTotp(secret, code.trim())
    if (step === null) return false
    // Each code works once: the step must be newer than the last one accepted.
    return this.store.consumeTotpStep(user.id, step)
  }

  private async assertNotThrottled(email: string): Promise<void> {
    const recent = await this.store.recentFailures(email, Date.now() - THROTTLE_WINDOW_MS, THROTTLE_FAILURES)
    if (recent.length < THROTTLE_FAILURES) return
    const oldest = recent[recent.length - 1]!
    const retryAfter = Math.max(1, Math.ceil((oldest + THROTTLE_WINDOW_MS - Date.now()) / 1000))
    throw new AppError('TOO_MANY_ATTEMPTS', `Too many failed logins for this account; try again in ${retryAfter} seconds`, {
      headers: { 'retry-after': String(retryAfter) },
    })
  }

  private recordFailure(email: string): MaybePromise<void> {
    const now = Date.now()
    return this.store.recordFailure(email, now, now - THROTTLE_WINDOW_MS)
  }

  private async issueTokens(user: User, sessionId: string): Promise<LoginResult> {
    const refreshToken = newOpaqueToken()
    await this.store.insertRefreshToken(hashToken(refreshToken), sessionId, new Date().toISOString())
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
