import type { MaybePromise } from '../../db/maybe-promise'

export interface KeyRow {
  id: string
  user_id: string
  name: string
  prefix: string
  created_at: string
  last_used_at: string | null
  expires_at: string | null
}

/**
 * Stored API keys (their SHA-256, never the secret), whatever the backend. The SQLite adapter
 * answers synchronously (`asynchronous: false`): authentication by key stays off the event loop's
 * queue there; the PostgreSQL adapter answers with promises.
 */
export interface ApiKeyStore {
  readonly asynchronous: boolean
  count(userId: string): MaybePromise<number>
  insert(row: KeyRow, keyHash: string): MaybePromise<void>
  /** Newest first (ties: the later made first). */
  list(userId: string): MaybePromise<KeyRow[]>
  /** Deletes one of the user's keys and returns it; null when they have none of that id. */
  remove(userId: string, id: string): MaybePromise<KeyRow | null>
  /** Deletes every key of a user; how many there were. */
  removeAllOf(userId: string): MaybePromise<number>
  byHash(keyHash: string): MaybePromise<KeyRow | null>
  byId(id: string): MaybePromise<KeyRow | null>
  touch(id: string, at: string): MaybePromise<void>
}
