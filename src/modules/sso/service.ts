import type { Config } from '../../config'
import { AppError } from '../../core/errors'
import type { MaybePromise } from '../../db/maybe-promise'
import type { AuditContext, AuditRecorder } from '../audit/service'
import type { AuthService, PasswordDirectory, Role } from '../auth/service'
import { DeviceCodes } from './device'
import { LdapDirectory } from './ldap'
import { OidcClient, SignInError } from './oidc'
import type { Provider, SsoStore } from './store'

/** Group memberships of one source replaced from a provider's list (GroupService; it audits the changes). */
export interface GroupSync {
  replaceMemberships(userId: string, source: Provider, externalGroupNames: string[], context?: Partial<AuditContext>): MaybePromise<{ joined: string[]; left: string[]; created: string[] } | void>
}

/** Who a provider says someone is. */
export interface ExternalIdentity {
  provider: Provider
  subject: string
  issuer: string
  email: string | null
  emailVerified: boolean
  groups: string[]
}

export interface Providers {
  password: boolean
  oidc: { name: string; loginUrl: string } | null
  ldap: boolean
}

const lower = (names: string[]) => new Set(names.map((name) => name.toLowerCase()))

/**
 * Single sign-on: OpenID Connect and LDAP identities tied to local users (found by the
 * provider's subject, on first sign-in by verified email, created when new), their admin role
 * and their groups kept as the provider says, and the CLI's device codes.
 */
export class SsoService implements PasswordDirectory {
  readonly oidc: OidcClient | null
  readonly ldap: LdapDirectory | null
  readonly devices: DeviceCodes
  groups: GroupSync | null = null
  /** The audit log: SSO sign-ins, failures (with a reason, never a token), roles set by admin groups. */
  audit: AuditRecorder | null = null

  constructor(
    private readonly store: SsoStore,
    private readonly auth: AuthService,
    private readonly config: Config,
    options: { deviceInterval?: number; now?: () => number } = {},
  ) {
    this.oidc = config.oidcIssuer && config.oidcClientId
      ? new OidcClient({ issuer: config.oidcIssuer, clientId: config.oidcClientId, clientSecret: config.oidcClientSecret, groupsClaim: config.oidcGroupsClaim, scopes: config.oidcScopes }, store, options.now)
      : null
    this.ldap = config.ldapUrl && config.ldapUserBase
      ? new LdapDirectory({ url: config.ldapUrl, bindDn: config.ldapBindDn, bindPassword: config.ldapBindPassword, userBase: config.ldapUserBase, userFilter: config.ldapUserFilter, groupBase: config.ldapGroupBase })
      : null
    this.devices = new DeviceCodes(store, { interval: options.deviceInterval, now: options.now })
    if (this.ldap) auth.useDirectory(this)
    auth.setLocalLogin({ enabled: config.localLogin, adminEmail: config.adminEmail })
  }

  /** The base URL browsers reach: UAGENT_PUBLIC_URL, or the origin the request came to. */
  baseUrl(request: Request): string {
    if (this.config.publicUrl) return this.config.publicUrl
    const url = new URL(request.url)
    const proto = request.headers.get('x-forwarded-proto') === 'https' ? 'https:' : url.protocol
    return `${proto}//${request.headers.get('host') ?? url.host}`
  }

  providers(): Providers {
    return {
      password: this.config.localLogin || this.ldap !== null,
      oidc: this.oidc ? { name: this.config.oidcName ?? new URL(this.config.oidcIssuer!).hostname, loginUrl: '/auth/oidc/login' } : null,
      ldap: this.ldap !== null,
    }
  }

  /**
   * Why an OpenID Connect sign-in could not say who is an admin, for the log: admin groups are
   * configured and the provider sent no groups claim at all. Names the claim and the scopes asked
   * for, never a token or a secret; null when there is nothing to say.
   */
  missingGroupsClaim(identity: { groupsClaimPresent: boolean; subject: string }, scopes: string[]): string | null {
    if (identity.groupsClaimPresent || this.config.oidcAdminGroups.length === 0) return null
    return (
      `OpenID Connect sign-in of subject ${identity.subject}: UAGENT_OIDC_ADMIN_GROUPS is set, but neither the ID token nor userinfo has the claim ` +
      `"${this.config.oidcGroupsClaim}" (UAGENT_OIDC_GROUPS_CLAIM), so this sign-in gives no groups and no admin role. Scopes asked for: ${scopes.join(' ')}. ` +
      'Make the provider release the claim for these scopes, or set UAGENT_OIDC_SCOPES (e.g. "openid email profile groups") and UAGENT_OIDC_GROUPS_CLAIM to match it.'
    )
  }

  /** PasswordDirectory: an LDAP user's password checked by the directory, and their account kept in step. */
  async authenticate(email: string, password: string): Promise<string | null> {
    if (!this.ldap) return null
    const user = await this.ldap.authenticate(email, password)
    if (!user) return null
    // The sign-in itself is audited by the route (auth.login / auth.login_failed); this records what it changed.
    return this.linkUser({ provider: 'ldap', subject: user.dn, issuer: this.config.ldapUrl!, email: user.email, emailVerified: true, groups: user.groups })
  }

  /**
   * The local user of an external identity: by (provider, subject); on first sign-in by a
   * verified email; else a new account. Its admin role follows the provider's admin groups (when
   * some are set; the UAGENT_ADMIN_EMAIL admin is never demoted), and its groups of that source
   * are replaced with the provider's.
   */
  async linkUser(identity: ExternalIdentity, context: Partial<AuditContext> = {}): Promise<string> {
    const now = new Date().toISOString()
    const adminGroups = identity.provider === 'oidc' ? this.config.oidcAdminGroups : this.config.ldapAdminGroups
    const isAdminByGroup = adminGroups.length > 0 && [...lower(identity.groups)].some((group) => lower(adminGroups).has(group))
    const linked = await this.store.identity(identity.provider, identity.subject)
    let userId = linked?.user_id ?? null
    let created = false
    if (!userId) {
      if (!identity.email) throw new SignInError('The provider did not send an email address for this account: ask an administrator to add the email scope or claim', 'no_email')
      const existing = await this.auth.findUserByEmail(identity.email)
      if (existing) {
        if (!identity.emailVerified) {
          throw new SignInError(`An account with the email ${existing.email} exists here, and the provider does not say that email is verified: it was not linked`, 'email_not_verified')
        }
        userId = existing.id
      } else {
        try {
          userId = (await this.auth.createExternalUser(identity.email, [isAdminByGroup ? 'admin' : 'user'] as Role[])).id
          created = true
        } catch (error) {
          // Made at this very moment by another sign-in of the same person (another replica).
          if (!(error instanceof AppError && error.code === 'CONFLICT')) throw error
          userId = (await this.auth.findUserByEmail(identity.email))!.id
        }
      }
    }
    await this.store.linkIdentity({ provider: identity.provider, subject: identity.subject, user_id: userId, issuer: identity.issuer, email: identity.email, created_at: now, last_login_at: now })
    const user = await this.auth.getUser(userId)
    if (!user) throw new SignInError('This account no longer exists', 'user_deleted')
    // Refused here, whatever the provider says, and left as it is (roles, groups).
    if (user.disabled) throw new AppError('FORBIDDEN', 'This account has been disabled by an administrator')
    const actor = { id: user.id, email: user.email }
    if (created) this.audit?.record({ ...context, actor, action: 'user.created', target: userId, details: { email: user.email, source: identity.provider } })
    if (adminGroups.length > 0) await this.syncAdminRole(user.id, user.email, user.roles, isAdminByGroup, { ...context, actor })
    // Memberships changed here are audited by the group service (group.member_added / member_removed).
    if (this.groups) await this.groups.replaceMemberships(userId, identity.provider, identity.groups, { ...context, actor })
    return userId
  }

  private async syncAdminRole(userId: string, email: string, roles: string[], admin: boolean, context: Partial<AuditContext>): Promise<void> {
    if (admin === roles.includes('admin')) return
    if (!admin && this.config.adminEmail && email === this.config.adminEmail.toLowerCase()) return
    // Roles here are one of two: `admin` (which includes everything a user may do) or `user`.
    const next = admin ? ['admin'] : ['user']
    await this.store.setRoles(userId, JSON.stringify(next))
    this.auth.userChanged(userId)
    this.audit?.record({ ...context, action: 'user.roles_changed', target: userId, details: { roles: next, reason: 'admin group membership at the provider' } })
  }
}
