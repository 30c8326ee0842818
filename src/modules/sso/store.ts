import type { MaybePromise } from '../../db/maybe-promise'

export type Provider = 'oidc' | 'ldap'

export interface IdentityRow {
  provider: Provider
  subject: string
  user_id: string
  issuer: string
  email: string | null
  created_at: string
  last_login_at: string
}

export type DeviceStatus = 'pending' | 'approved' | 'denied' | 'used'

export interface DeviceCodeRow {
  device_code_hash: string
  user_code: string
  status: DeviceStatus
  user_id: string | null
  client_name: string | null
  interval_seconds: number
  created_at: string
  /** Milliseconds since the epoch. */
  expires_at: number
  last_poll_at: number
}

export interface OidcLoginRow {
  state: string
  nonce: string
  code_verifier: string
  /** Where the browser goes once signed in (a path of the web app). */
  return_to: string
  expires_at: number
}

/**
 * What single sign-on keeps, whatever the backend: external identities, the CLI's device codes
 * and the browser sign-ins under way. Every step that must happen once (a device code used, an
 * OIDC sign-in finished) is one conditional statement, so two replicas racing get one winner.
 */
export interface SsoStore {
  identity(provider: Provider, subject: string): MaybePromise<IdentityRow | null>
  /** Links (or re-links) a provider's subject to a user, and notes the sign-in time. */
  linkIdentity(row: IdentityRow): MaybePromise<void>
  /** Sets a user's roles (a JSON array), as the provider's admin groups say. */
  setRoles(userId: string, roles: string): MaybePromise<void>

  insertDeviceCode(row: DeviceCodeRow): MaybePromise<void>
  deviceCodeByHash(hash: string): MaybePromise<DeviceCodeRow | null>
  deviceCodeByUserCode(userCode: string): MaybePromise<DeviceCodeRow | null>
  /** Notes a poll at `at` unless the previous one was after `notBefore`: false when the client polls too fast. */
  notePoll(hash: string, at: number, notBefore: number): MaybePromise<boolean>
  /** pending → approved/denied (by `userId`), unless expired (`now`); false when it was not pending. */
  decideDeviceCode(userCode: string, status: 'approved' | 'denied', userId: string, now: number): MaybePromise<boolean>
  /** approved → used, once: the user it was approved for, or null when it was not approved (or used meanwhile). */
  useDeviceCode(hash: string, now: number): MaybePromise<string | null>

  insertOidcLogin(row: OidcLoginRow): MaybePromise<void>
  /** Deletes and returns a sign-in under way that has not expired; null when unknown, used or expired. */
  takeOidcLogin(state: string, now: number): MaybePromise<OidcLoginRow | null>

  /** Forgets device codes and sign-ins that expired before `before`. */
  deleteExpired(before: number): MaybePromise<void>
}
