import { AppError } from '../../../core/errors'
import type { AuditContext, AuditRecorder } from '../../audit/service'
import type { CollectionResolver } from './resolver'
import type { PrincipalType, ShareEntry, ShareRole, ShareView } from './store'

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

/**
 * A collection's access list: read and replaced by its owner, its managers and admins (the
 * resolver's `manager` need). Each change is audited (`collection.access_changed`) and counts
 * from the next request: nothing is cached (see AccessStore).
 */
export class CollectionSharing {
  constructor(
    private readonly resolver: CollectionResolver,
    private readonly audit?: AuditRecorder,
  ) {}

  async get(userId: string, ref: string): Promise<AccessView> {
    const { collection } = await this.resolver.resolve(userId, ref, 'manager')
    return this.view(collection.id, collection.user_id)
  }

  async replace(context: AuditContext & { userId: string }, ref: string, shares: ShareInput[]): Promise<AccessView> {
    const { collection } = await this.resolver.resolve(context.userId, ref, 'manager')
    const store = this.resolver.store
    const entries: ShareEntry[] = []
    const seen = new Set<string>()
    for (const [i, share] of shares.entries()) {
      const field = `body.shares[${i}]`
      let principalId = ''
      if (share.type === 'user') {
        if (share.userId === undefined && share.email === undefined) throw new AppError('VALIDATION_ERROR', `${field}: a user entry needs userId or email`)
        const user = await store.findUser(share.userId !== undefined ? { id: share.userId } : { email: share.email!.trim().toLowerCase() })
        if (!user) throw new AppError('VALIDATION_ERROR', `${field}.${share.userId !== undefined ? 'userId' : 'email'}: no such user`)
        if (user.id === collection.user_id) throw new AppError('VALIDATION_ERROR', `${field}: ${user.email} owns the collection and needs no entry`)
        principalId = user.id
      } else if (share.type === 'group') {
        if (share.groupId === undefined && share.name === undefined) throw new AppError('VALIDATION_ERROR', `${field}: a group entry needs groupId or name`)
        const group = await store.findGroup(share.groupId !== undefined ? { id: share.groupId } : { name: share.name! })
        if (!group) throw new AppError('VALIDATION_ERROR', `${field}.${share.groupId !== undefined ? 'groupId' : 'name'}: no such group`)
        principalId = group.id
      }
      const key = `${share.type}:${principalId}`
      if (seen.has(key)) throw new AppError('VALIDATION_ERROR', `${field}: this ${share.type === 'everyone' ? 'entry' : share.type} is listed twice`)
      seen.add(key)
      entries.push({ type: share.type, principalId, role: share.role })
    }
    const before = await store.shares(collection.id)
    await store.replaceShares(collection.id, entries)
    const after = await this.view(collection.id, collection.user_id)
    const { userId: _userId, ...audit } = context
    this.audit?.record({
      ...audit,
      action: 'collection.access_changed',
      target: collection.public_id,
      details: { collection: collection.name, owner: after.owner.email, before: before.map(entryText), after: after.shares.map(entryText) },
    })
    return after
  }

  private async view(collectionId: number, ownerId: string): Promise<AccessView> {
    const store = this.resolver.store
    const [owner, shares] = await Promise.all([store.owner(ownerId), store.shares(collectionId)])
    return { owner: owner ?? { id: ownerId, email: '' }, shares }
  }
}

/** An entry as the audit log keeps it: `group:staff=viewer`. */
function entryText(share: ShareView): string {
  return `${share.type}${share.type === 'everyone' ? '' : `:${share.email ?? share.name}`}=${share.role}`
}
