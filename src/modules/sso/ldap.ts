import { Client, InvalidCredentialsError, ResultCodeError } from 'ldapts'
import { AppError } from '../../core/errors'

export interface LdapSettings {
  url: string
  bindDn?: string
  bindPassword?: string
  userBase: string
  /** With `{email}` where the escaped email goes. */
  userFilter: string
  groupBase?: string
}

/** A directory user whose password was just checked by binding as them. */
export interface LdapUser {
  dn: string
  email: string
  /** The `cn` of each group the user is in (under the group base, or named by `memberOf`). */
  groups: string[]
}

/** RFC 4515: a value inside a search filter, with `*`, `(`, `)`, `\` and NUL escaped. */
export function escapeFilterValue(value: string): string {
  return value.replace(/[*()\\\0]/g, (char) => `\\${char.charCodeAt(0).toString(16).padStart(2, '0')}`)
}

/** The value of the first RDN of a DN (`cn=ops,ou=groups,...` → `ops`), unescaped. */
export function firstRdnValue(dn: string): string {
  const match = /^[^=]+=((?:\\.|[^,\\])*)/.exec(dn)
  const raw = match?.[1] ?? dn
  return raw.replace(/\\([0-9a-fA-F]{2}|.)/g, (_, escaped: string) => (escaped.length === 2 ? String.fromCharCode(parseInt(escaped, 16)) : escaped))
}

const text = (value: unknown): string[] => (Array.isArray(value) ? value : value === undefined ? [] : [value]).map((item) => (Buffer.isBuffer(item) ? item.toString('utf8') : String(item)))

/**
 * LDAP with ldapts: a user is looked up with the service account (the email escaped into the
 * filter), then their password is checked by binding as their DN. A connection per sign-in,
 * closed at once: a sign-in is rare, and a pooled connection bound as a user would be a hazard.
 */
export class LdapDirectory {
  constructor(private readonly settings: LdapSettings) {}

  private client(): Client {
    return new Client({ url: this.settings.url, connectTimeout: 5_000, timeout: 10_000 })
  }

  /**
   * The user's entry and groups when `password` is theirs; null when no entry has this email.
   * INVALID_CREDENTIALS for a wrong password, DIRECTORY_UNAVAILABLE when the directory cannot be
   * reached (or refuses the service account).
   */
  async authenticate(email: string, password: string): Promise<LdapUser | null> {
    // An empty password is an "unauthenticated bind", which succeeds: never a sign-in.
    if (password === '') throw new AppError('INVALID_CREDENTIALS', 'Invalid email or password')
    const service = this.client()
    try {
      await this.bindService(service)
      const filter = this.settings.userFilter.replaceAll('{email}', escapeFilterValue(email))
      const { searchEntries } = await service.search(this.settings.userBase, { scope: 'sub', filter, attributes: ['mail', 'memberOf'], sizeLimit: 2 })
      if (searchEntries.length === 0) return null
      if (searchEntries.length > 1) throw new AppError('INVALID_CREDENTIALS', 'More than one directory entry has this email: ask an administrator')
      const entry = searchEntries[0]!
      await this.bindUser(entry.dn, password)
      const groups = new Set(text(entry.memberOf).map(firstRdnValue))
      if (this.settings.groupBase) {
        const dn = escapeFilterValue(entry.dn)
        const found = await service.search(this.settings.groupBase, { scope: 'sub', filter: `(|(member=${dn})(uniqueMember=${dn}))`, attributes: ['cn'] })
        for (const group of found.searchEntries) groups.add(text(group.cn)[0] ?? firstRdnValue(group.dn))
      }
      return { dn: entry.dn, email: text(entry.mail)[0] ?? email, groups: [...groups].filter(Boolean).map((name) => name.slice(0, 64)) }
    } catch (error) {
      throw asAppError(error)
    } finally {
      await service.unbind().catch(() => {})
    }
  }

  private async bindService(client: Client): Promise<void> {
    if (!this.settings.bindDn) return
    try {
      await client.bind(this.settings.bindDn, this.settings.bindPassword ?? '')
    } catch (error) {
      if (error instanceof InvalidCredentialsError) throw new AppError('DIRECTORY_UNAVAILABLE', 'The directory refused the service account (UAGENT_LDAP_BIND_DN): sign-in with it is unavailable')
      throw error
    }
  }

  private async bindUser(dn: string, password: string): Promise<void> {
    const user = this.client()
    try {
      await user.bind(dn, password)
    } catch (error) {
      if (error instanceof InvalidCredentialsError) throw new AppError('INVALID_CREDENTIALS', 'Invalid email or password')
      throw error
    } finally {
      await user.unbind().catch(() => {})
    }
  }
}

function asAppError(error: unknown): AppError {
  if (error instanceof AppError) return error
  if (error instanceof ResultCodeError) return new AppError('DIRECTORY_UNAVAILABLE', `The directory answered with an error (${error.message}): sign-in with it is unavailable`)
  return new AppError('DIRECTORY_UNAVAILABLE', 'The directory (UAGENT_LDAP_URL) cannot be reached: sign-in for its users is unavailable; local accounts still work')
}
