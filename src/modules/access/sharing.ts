import { AppError } from '../../core/errors'
import type { AuditContext, AuditRecorder } from '../audit/service'
import type { ResourceResolver } from './resolver'
import type { PrincipalType, ShareEntry, ShareRole, ShareView } from './roles'
import type { OwnedRow, ShareList } from './store'

/** An entry of `PUT …/access`: a user by id or email, a group by id or name, or everyone. */
export interface ShareInput {
  type: PrincipalType
  userId?: string
  email?: string
  groupId?: string
  name?: string
  role: ShareRole
}

export interface AccessView {
  owner: { id: string; email: string }
  shares: ShareView[]
}

/** How a kind's rows are named in its access list (`key`) and in the audit log (`target`). */
export interface SharedRowKeys<Row> {
  key(row: Row): number | string
  target(row: Row): string
}

/**
 * An object's access list, for any kind: read and replaced by its owner, its managers and admins
 * (the resolver's `manager` need). Each change is audited (`<noun>.access_changed`, the list
 * before and after) and counts from the next request: nothing is cached.
 */
export class ResourceSharing<Row extends OwnedRow> {
  constructor(
    private readonly resolver: ResourceResolver<Row>,
    private readonly list: ShareList,
    private readonly keys: SharedRowKeys<Row>,
    private readonly audit?: AuditRecorder,
  ) {}

  async get(userId: string, ref: string): Promise<AccessView> {
    const { row } = await this.resolver.resolveRow(userId, ref, 'manager')
    return this.view(row)
  }

  async replace(context: AuditContext & { userId: string }, ref: string, shares: ShareInput[]): Promise<AccessView> {
    const { row } = await this.resolver.resolveRow(context.userId, ref, 'manager')
    return this.replaceFor(context, row, shares)
  }

  /** Replaces the list of a row already resolved with `manager` access (see replace). */
  async replaceFor(context: AuditContext & { userId: string }, row: Row, shares: ShareInput[]): Promise<AccessView> {
    const entries = await this.entries(row, shares)
    const key = this.keys.key(row)
    const before = await this.list.shares(key)
    await this.list.replaceShares(key, entries)
    const after = await this.view(row)
    const { userId: _userId, ...audit } = context
    const noun = this.resolver.kind.noun
    this.audit?.record({
      ...audit,
      action: `${noun}.access_changed`,
      target: this.keys.target(row),
      details: { [noun]: row.name, owner: after.owner.email, before: before.map(entryText), after: after.shares.map(entryText) },
    })
    return after
  }

  /** The entries a `PUT` names, checked: 400 naming the entry for an unknown user or group, the owner, or one listed twice. */
  private async entries(row: Row, shares: ShareInput[]): Promise<ShareEntry[]> {
    const entries: ShareEntry[] = []
    const seen = new Set<string>()
    for (const [i, share] of shares.entries()) {
      const field = `body.shares[${i}]`
      let principalId = ''
      if (share.type === 'user') {
        if (share.userId === undefined && share.email === undefined) throw new AppError('VALIDATION_ERROR', `${field}: a user entry needs userId or email`)
        const user = await this.list.findUser(share.userId !== undefined ? { id: share.userId } : { email: share.email!.trim().toLowerCase() })
        if (!user) throw new AppError('VALIDATION_ERROR', `${field}.${share.userId !== undefined ? 'userId' : 'email'}: no such user`)
        if (user.id === row.user_id) throw new AppError('VALIDATION_ERROR', `${field}: ${user.email} owns the ${this.resolver.kind.noun} and needs no entry`)
        principalId = user.id
      } else if (share.type === 'group') {
        if (share.groupId === undefined && share.name === undefined) throw new AppError('VALIDATION_ERROR', `${field}: a group entry needs groupId or name`)
        const group = await this.list.findGroup(share.groupId !== undefined ? { id: share.groupId } : { name: share.name! })
        if (!group) throw new AppError('VALIDATION_ERROR', `${field}.${share.groupId !== undefined ? 'groupId' : 'name'}: no such group`)
        principalId = group.id
      }
      const key = `${share.type}:${principalId}`
      if (seen.has(key)) throw new AppError('VALIDATION_ERROR', `${field}: this ${share.type === 'everyone' ? 'entry' : share.type} is listed twice`)
      seen.add(key)
      entries.push({ type: share.type, principalId, role: share.role })
    }
    return entries
  }

  private async view(row: Row): Promise<AccessView> {
    const [owner, shares] = await Promise.all([this.list.owner(row.user_id), this.list.shares(this.keys.key(row))])
    return { owner: owner ?? { id: row.user_id, email: '' }, shares }
  }
}

/** An entry as the audit log keeps it: `group:staff=viewer`. */
function entryText(share: ShareView): string {
  return `${share.type}${share.type === 'everyone' ? '' : `:${share.email ?? share.name}`}=${share.role}`
}
