import { randomBytes, randomUUID } from 'node:crypto'
import { AppError, notFound } from '../../core/errors'
import { hashToken } from '../../core/tokens'
import type { ApiKeyResolver, Principal, User } from '../auth/service'
import { andThen, type MaybePromise } from '../../db/maybe-promise'
import type { ApiKeyStore, KeyRow } from './store'

/** Every personal API key starts with this, so a bearer token is told apart from a JWT at a glance. */
export const API_KEY_PREFIX = 'uak_'
/** 24 random bytes: 192 bits, written as 32 base64url characters. */
const KEY_BYTES = 24
/** Characters of the key shown in listings (the marker and 8 random characters: 48 of its 192 bits). */
const SHOWN_LENGTH = API_KEY_PREFIX.length + 8
/** lastUsedAt is written at most this often per key, so a busy key does not turn every request into a write. */
const LAST_USED_PRECISION_MS = 60_000
export const MAX_KEYS_PER_USER = 100
/** Sessions of callers that authenticated with a key are named `apikey:<key id>`. */
export const KEY_SESSION_PREFIX = 'apikey:'

export interface ApiKeyView {
  id: string
  name: string
  prefix: string
  createdAt: string
  lastUsedAt: string | null
  expiresAt: string | null
}

const toView = (row: KeyRow): ApiKeyView => ({
  id: row.id,
  name: row.name,
  prefix: row.prefix,
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at,
  expiresAt: row.expires_at,
})

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800, y: 31_536_000 }
/** Longest lifetime a key may be given: 10 years. */
export const MAX_EXPIRES_IN = 10 * UNITS.y!

/** `expiresIn` as seconds: an integer of seconds, or a duration such as "90d", "12h", "30m". */
export function expirySeconds(expiresIn: number | string): number {
  const match = typeof expiresIn === 'number' ? null : /^\s*(\d{1,10})\s*([smhdwy]?)\s*$/i.exec(expiresIn)
  const seconds = typeof expiresIn === 'number' ? expiresIn : match ? Number(match[1]) * UNITS[(match[2] || 's').toLowerCase()]! : NaN
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > MAX_EXPIRES_IN) {
    throw new AppError('VALIDATION_ERROR', `body.expiresIn: must be seconds from 1 to ${MAX_EXPIRES_IN}, or a duration like "90d", "12h", "30m"`)
  }
  return seconds
}

/**
 * Personal API keys: long-lived bearer credentials for tools that cannot log in. A key is
 * `uak_` and 192 random bits, shown once at creation; only its SHA-256 is stored (a slow
 * password hash buys nothing for a secret of that much entropy, and would cost every request).
 * Every request looks the key and its owner up again, so a deleted key, an expired one, or one
 * whose owner changed password or was removed is refused on its very next use.
 */
export class ApiKeyService implements ApiKeyResolver {
  constructor(
    private readonly store: ApiKeyStore,
    private readonly users: { getUser(id: string): MaybePromise<User | null> },
  ) {}

  /** Whether authenticate, isLive and revokeAllForUser answer with promises (PostgreSQL). */
  get asynchronous(): boolean {
    return this.store.asynchronous
  }

  /** Makes a key for `userId`; the returned `key` is the only time the secret is ever shown. */
  async create(userId: string, name: string, expiresIn?: number | string | null): Promise<ApiKeyView & { key: string }> {
    const count = await this.store.count(userId)
    if (count >= MAX_KEYS_PER_USER) {
      throw new AppError('CONFLICT', `You already have ${MAX_KEYS_PER_USER} API keys: revoke some with DELETE /auth/api-keys/{id} first`)
    }
    const now = Date.now()
    const expiresAt = expiresIn === undefined || expiresIn === null ? null : new Date(now + expirySeconds(expiresIn) * 1000).toISOString()
    const key = `${API_KEY_PREFIX}${randomBytes(KEY_BYTES).toString('base64url')}`
    const row: KeyRow = {
      id: randomUUID(),
      user_id: userId,
      name: name.trim(),
      prefix: key.slice(0, SHOWN_LENGTH),
      created_at: new Date(now).toISOString(),
      last_used_at: null,
      expires_at: expiresAt,
    }
    await this.store.insert(row, hashToken(key))
    return { ...toView(row), key }
  }

  /** The caller's keys, newest first; never the secret (it is not stored). */
  async list(userId: string): Promise<ApiKeyView[]> {
    return (await this.store.list(userId)).map(toView)
  }

  /** Deletes one of the caller's keys; someone else's key id is 404, as an unknown one. */
  async revoke(userId: string, id: string): Promise<ApiKeyView> {
    const row = await this.store.remove(userId, id)
    if (!row) throw notFound(`API key ${id}`)
    return toView(row)
  }

  /**
   * Deletes every key of a user. Called whenever the user's password changes (their own change,
   * an admin's reset, the host's `uagent admin reset-password`), so that keys made under the old
   * password stop working at once. A disabled account's keys are refused while it stays disabled;
   * a deleted account's keys go with it (foreign key cascade, on either backend).
   */
  revokeAllForUser(userId: string): MaybePromise<number> {
    return this.store.removeAllOf(userId)
  }

  /** The caller a key stands for, with its owner's roles; 401 UNAUTHORIZED when unknown, revoked or expired. */
  authenticate(key: string): MaybePromise<Principal> {
    return andThen(this.store.byHash(hashToken(key)), (row) => this.admit(row))
  }

  private admit(row: KeyRow | null): MaybePromise<Principal> {
    if (!row) throw new AppError('UNAUTHORIZED', 'Invalid API key: it does not exist or has been revoked')
    const now = Date.now()
    if (row.expires_at !== null && Date.parse(row.expires_at) <= now) {
      throw new AppError('UNAUTHORIZED', `API key "${row.name}" expired at ${row.expires_at}; create a new one`)
    }
    return andThen(this.users.getUser(row.user_id), (user) => this.admitOwner(row, user, now))
  }

  private admitOwner(row: KeyRow, user: User | null, now: number): MaybePromise<Principal> {
    if (!user) throw new AppError('UNAUTHORIZED', 'The owner of this API key no longer exists')
    if (user.disabled) throw new AppError('UNAUTHORIZED', 'This account has been disabled by an administrator')
    const principal: Principal = { user, sessionId: `${KEY_SESSION_PREFIX}${row.id}`, isAdmin: user.roles.includes('admin'), apiKeyId: row.id }
    if (row.last_used_at === null || now - Date.parse(row.last_used_at) >= LAST_USED_PRECISION_MS) {
      return andThen(this.store.touch(row.id, new Date(now).toISOString()), () => principal)
    }
    return principal
  }

  /** Whether the key behind an `apikey:<id>` session still works (WebSocket messages check this). */
  isLive(sessionId: string): MaybePromise<boolean> {
    return andThen(this.store.byId(sessionId.slice(KEY_SESSION_PREFIX.length)), (row) => {
      if (!row || (row.expires_at !== null && Date.parse(row.expires_at) <= Date.now())) return false
      return andThen(this.users.getUser(row.user_id), (user) => user !== null && !user.disabled)
    })
  }
}
