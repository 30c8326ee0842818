import { randomUUID } from 'node:crypto'
import { AppError, notFound } from '../../core/errors'
import { andThen, type MaybePromise } from '../../db/maybe-promise'
import type { AuditContext, AuditRecorder } from '../audit/service'
import type { User } from '../auth/service'
import type { GroupRow, GroupSource, GroupStore, MemberRow } from './store'

export interface GroupView {
  id: string
  name: string
  description: string
  source: GroupSource
  /** The provider's group name or DN (oidc, ldap); null for a local group. */
  externalId: string | null
  /** How many members it has. */
  members: number
  createdAt: string
  updatedAt: string
}

export interface GroupDetail extends Omit<GroupView, 'members'> {
  members: { id: string; email: string; addedAt: string }[]
  memberCount: number
}

/** Whose memberships changed: some users', or everyone's (a group was deleted or renamed). */
export interface GroupChange {
  userIds: string[]
}

/** Who is asking: their id and whether they are an admin. */
export interface GroupCaller {
  user: { id: string }
  isAdmin: boolean
}

export interface GroupServiceOptions {
  store: GroupStore
  users: { getUser(id: string): MaybePromise<User | null>; findUserByEmail(email: string): MaybePromise<User | null> }
  audit: AuditRecorder
  /**
   * Whether a user's groups may be answered from memory: true when every change reaches this
   * process (one server on SQLite, or replicas whose bus is shared through Redis right now). When
   * false, each look-up reads the database, so a change made on another replica counts at once.
   */
  cacheable?: () => boolean
}

/** Users whose groups are kept in memory at most; beyond, the memory starts again. */
const CACHE_LIMIT = 50_000

const toView = (row: GroupRow): GroupView => ({
  id: row.id,
  name: row.name,
  description: row.description,
  source: row.source,
  externalId: row.external_id,
  members: Number(row.members),
  createdAt: row.created_at,
  updatedAt: row.updated_at,
})

const toDetail = (row: GroupRow, members: MemberRow[]): GroupDetail => ({
  ...toView(row),
  members: members.map((member) => ({ id: member.id, email: member.email, addedAt: member.added_at })),
  memberCount: members.length,
})

/**
 * Groups of users: admins create, rename and delete them and choose their members; single sign-on
 * keeps the `oidc` and `ldap` ones in step with the provider (replaceMemberships). Collection
 * shares name groups, and every access check asks groupIdsOf(user): answered from memory, dropped
 * for a user the moment their memberships change here, and (through onChanged → the bus →
 * changedElsewhere) on every replica.
 */
export class GroupService {
  private readonly store: GroupStore
  private readonly users: GroupServiceOptions['users']
  private readonly audit: AuditRecorder
  private readonly cacheable: () => boolean
  private readonly cache = new Map<string, readonly string[]>()
  /** Counts invalidations, so that a read that started before one is not kept after it. */
  private epoch = 0
  private readonly changedListeners: ((change: GroupChange) => void)[] = []
  private readonly invalidatedListeners: ((change: GroupChange) => void)[] = []

  constructor(options: GroupServiceOptions) {
    this.store = options.store
    this.users = options.users
    this.audit = options.audit
    this.cacheable = options.cacheable ?? (() => !options.store.asynchronous)
  }

  /**
   * The ids of the groups a user is in (a collection's access check asks this on every request).
   * Answered from memory while that is safe (see `cacheable`); a change made through this service,
   * here or on another replica, is seen by the very next call.
   */
  groupIdsOf(userId: string): MaybePromise<readonly string[]> {
    if (!this.cacheable()) {
      if (this.cache.size) this.dropAll()
      return this.store.groupIdsOf(userId)
    }
    const cached = this.cache.get(userId)
    if (cached) return cached
    const epoch = this.epoch
    return andThen(this.store.groupIdsOf(userId), (ids) => {
      const frozen = Object.freeze(ids)
      if (epoch === this.epoch) {
        if (this.cache.size >= CACHE_LIMIT) this.cache.clear()
        this.cache.set(userId, frozen)
      }
      return frozen
    })
  }

  /** Called with every change made on this server (app.ts publishes it on the bus for the other replicas). */
  onChanged(listener: (change: GroupChange) => void): void {
    this.changedListeners.push(listener)
  }

  /** Called whenever users' memberships changed, here or on another replica: for caches built on groupIdsOf. */
  onInvalidated(listener: (change: GroupChange) => void): void {
    this.invalidatedListeners.push(listener)
  }

  /** A change made on another replica (from the bus): memberships are read again. */
  changedElsewhere(change: GroupChange): void {
    this.invalidate(change)
  }

  private dropAll(): void {
    this.epoch++
    this.cache.clear()
  }

  private invalidate(change: GroupChange): void {
    this.epoch++
    for (const userId of change.userIds) this.cache.delete(userId)
    for (const listener of this.invalidatedListeners) listener(change)
  }

  private changed(userIds: string[]): void {
    if (!userIds.length) return
    const change = { userIds }
    this.invalidate(change)
    for (const listener of this.changedListeners) listener(change)
  }

  /** Every group (an admin), or the caller's own. */
  async list(caller: GroupCaller): Promise<GroupView[]> {
    return (caller.isAdmin ? await this.store.list() : await this.store.listOf(caller.user.id)).map(toView)
  }

  /** One group with its members: for an admin or a member; to anyone else it does not exist (404). */
  async get(caller: GroupCaller, id: string): Promise<GroupDetail> {
    const row = await this.store.get(id)
    if (!row || (!caller.isAdmin && !(await this.store.groupIdsOf(caller.user.id)).includes(id))) throw notFound(`Group ${id}`)
    return toDetail(row, await this.store.members(id))
  }

  async create(context: AuditContext, input: { name: string; description?: string }): Promise<GroupView> {
    const now = new Date().toISOString()
    const row: GroupRow = { id: randomUUID(), name: input.name.trim(), description: (input.description ?? '').trim(), source: 'local', external_id: null, created_at: now, updated_at: now, members: 0 }
    if (!(await this.store.insert(row))) throw new AppError('CONFLICT', `A group named "${row.name}" already exists`)
    this.audit.record({ ...context, action: 'group.created', target: row.id, details: { name: row.name } })
    return toView(row)
  }

  async update(context: AuditContext, id: string, input: { name?: string; description?: string }): Promise<GroupView> {
    const before = await this.store.get(id)
    if (!before) throw notFound(`Group ${id}`)
    const change = { ...(input.name !== undefined ? { name: input.name.trim() } : {}), ...(input.description !== undefined ? { description: input.description.trim() } : {}) }
    const outcome = await this.store.update(id, change, new Date().toISOString())
    if (outcome === 'missing') throw notFound(`Group ${id}`)
    if (outcome === 'taken') throw new AppError('CONFLICT', `A group named "${change.name}" already exists`)
    const after = (await this.store.get(id))!
    const details: Record<string, unknown> = { name: after.name }
    if (after.name !== before.name) details.previousName = before.name
    if (after.description !== before.description) details.description = after.description
    this.audit.record({ ...context, action: 'group.updated', target: id, details })
    return toView(after)
  }

  async remove(context: AuditContext, id: string): Promise<{ success: true; id: string }> {
    const row = await this.store.get(id)
    const members = row ? await this.store.remove(id) : null
    if (!row || !members) throw notFound(`Group ${id}`)
    this.changed(members)
    this.audit.record({ ...context, action: 'group.deleted', target: id, details: { name: row.name, source: row.source, members: members.length } })
    return { success: true, id }
  }

  /** The user named by id or email, or 404. */
  private async userOf(who: { userId?: string; email?: string }): Promise<User> {
    if ((who.userId === undefined) === (who.email === undefined)) throw new AppError('VALIDATION_ERROR', 'body: give either userId or email')
    const user = who.userId !== undefined ? await this.users.getUser(who.userId) : await this.users.findUserByEmail(who.email!)
    if (!user) throw notFound(`User ${who.userId ?? who.email}`)
    return user
  }

  /** Adds a member (by id or email); adding someone already in the group changes nothing. */
  async addMember(context: AuditContext, id: string, who: { userId?: string; email?: string }): Promise<GroupDetail> {
    const row = await this.store.get(id)
    if (!row) throw notFound(`Group ${id}`)
    const user = await this.userOf(who)
    if (await this.store.addMember(id, user.id, new Date().toISOString())) {
      this.changed([user.id])
      this.audit.record({ ...context, action: 'group.member_added', target: id, details: { group: row.name, userId: user.id, email: user.email } })
    }
    return toDetail((await this.store.get(id)) ?? row, await this.store.members(id))
  }

  /** Removes a member; effective at their next request, on every replica. Removing a non-member changes nothing. */
  async removeMember(context: AuditContext, id: string, userId: string): Promise<GroupDetail> {
    const row = await this.store.get(id)
    if (!row) throw notFound(`Group ${id}`)
    if (await this.store.removeMember(id, userId)) {
      this.changed([userId])
      const user = await this.users.getUser(userId)
      this.audit.record({ ...context, action: 'group.member_removed', target: id, details: { group: row.name, userId, ...(user ? { email: user.email } : {}) } })
    }
    return toDetail((await this.store.get(id)) ?? row, await this.store.members(id))
  }

  /**
   * For single sign-on: makes the user's memberships of `source` groups exactly the provider's
   * `externalGroups` (names or DNs), creating the groups of that source that do not exist yet.
   * Local groups, and groups of the other provider, are never touched. Effective at once on every
   * replica; each group created, joined or left is an audit event (actor: the user signing in,
   * when `context` says so).
   */
  async replaceMemberships(userId: string, source: 'oidc' | 'ldap', externalGroups: string[], context: Partial<AuditContext> = {}): Promise<{ groupIds: string[]; created: string[]; joined: string[]; left: string[] }> {
    const names = externalGroups.map((name) => name.trim()).filter((name) => name.length > 0 && name.length <= 1000)
    const change = await this.store.replaceMemberships(userId, source, names, new Date().toISOString())
    if (change.joined.length || change.left.length) this.changed([userId])
    for (const group of change.created) this.audit.record({ ...context, action: 'group.created', target: group.id, details: { name: group.name, source } })
    for (const groupId of change.joined) this.audit.record({ ...context, action: 'group.member_added', target: groupId, details: { userId, source } })
    for (const groupId of change.left) this.audit.record({ ...context, action: 'group.member_removed', target: groupId, details: { userId, source } })
    return { groupIds: [...(await this.store.groupIdsOf(userId))], created: change.created.map((group) => group.id), joined: change.joined, left: change.left }
  }

  /** A group by its exact name (a share given as `{ type: "group", name }`), or null. */
  async findByName(name: string): Promise<GroupView | null> {
    const row = await this.store.byName(name.trim())
    return row ? toView(row) : null
  }

  /** A group by id, or null (no caller check: for the collection access resolver). */
  async findById(id: string): Promise<GroupView | null> {
    const row = await this.store.get(id)
    return row ? toView(row) : null
  }

  /** Groups by id, for showing shares (`{ id, name }`; unknown ids are left out). */
  async namesOf(ids: string[]): Promise<Map<string, string>> {
    const wanted = new Set(ids)
    return new Map((await this.store.list()).filter((row) => wanted.has(row.id)).map((row) => [row.id, row.name]))
  }
}
