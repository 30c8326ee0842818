import { AppError } from '../../core/errors'
import type { MaybePromise } from '../../db/maybe-promise'
import type { AuditContext, AuditRecorder } from '../audit/service'
import { type ResourceKind, ResourceResolver } from '../access/resolver'
import { type AccessView, ResourceSharing, type ShareInput } from '../access/sharing'
import type { Candidates, ResourceLookup, ShareList, ShareTable } from '../access/store'
import type { Conversation, ConversationStore } from './store'

/** What a caller may do with a conversation: its owner everything; a viewer read, export and rate it. */
export type ConversationAccess = 'owner' | 'viewer'

/** A conversation a caller reached: its owner's id and the caller's access. */
export interface ReachedConversation {
  id: string
  ownerId: string
  access: ConversationAccess
}

/** A conversation as the resolver sees it (its title is its `name` in messages and the audit log). */
export interface ConversationRef {
  id: string
  user_id: string
  name: string
}

/** The resolver's look-ups for conversations, and the ids shared with a user (for listings and search). */
export interface ConversationLookup extends ResourceLookup<ConversationRef>, ShareList {
  sharedWith(userId: string): MaybePromise<string[]>
}

export const CONVERSATION_SHARES: ShareTable = { table: 'conversation_shares', key: 'conversation_id' }
export const NONE: Candidates<ConversationRef> = { own: null, byId: null, byOwner: null, shared: [] }

/** Conversations are named by their id only (a UUID): no name rule matches a reference. */
const CONVERSATION: ResourceKind = { noun: 'conversation', label: 'Conversation', plural: 'conversations', ambiguous: 'CONFLICT', names: /(?!)/ }

/**
 * Who reaches a conversation: the one resolver of shared objects (src/modules/access/) with the
 * conversations' access list, conversation_shares, whose one role is viewer. Its owner may do
 * everything; a user it is shared with (directly, through a group, or with everyone) reads, exports
 * and rates it; anyone else gets 404, never a hint that it exists; a viewer asking for what only
 * the owner may do (post, regenerate, edit, attach, rename, delete, share) gets 403. Read fresh on
 * every call, so a share removed counts from the next request on every replica. Admins are not
 * given other users' conversations here: they name the user (`?userId=`) on the routes that allow it.
 */
export class ConversationResolver {
  readonly resolver: ResourceResolver<ConversationRef>
  readonly sharing: ResourceSharing<ConversationRef>

  constructor(
    private readonly store: ConversationStore,
    readonly lookup: ConversationLookup,
    audit?: AuditRecorder,
  ) {
    this.resolver = new ResourceResolver(CONVERSATION, lookup)
    this.sharing = new ResourceSharing(this.resolver, lookup, { key: (row) => row.id, target: (row) => row.id }, audit)
  }

  async resolve(userId: string, id: string, need: ConversationAccess = 'viewer'): Promise<ReachedConversation> {
    const { row, access } = await this.resolver.resolveRow(userId, id, need)
    return { id: row.id, ownerId: row.user_id, access: access === 'owner' ? 'owner' : 'viewer' }
  }

  /** The conversation with its messages, for a caller who may read it. */
  async read(userId: string, id: string, need: ConversationAccess = 'viewer'): Promise<{ conversation: Conversation; reached: ReachedConversation }> {
    const reached = await this.resolve(userId, id, need)
    return { conversation: await this.store.get(id, reached.ownerId), reached }
  }

  /** The access list (its owner only: a viewer gets 403). */
  async access(userId: string, id: string): Promise<AccessView> {
    await this.resolve(userId, id, 'owner')
    return this.sharing.get(userId, id)
  }

  /** Replaces the access list (its owner only); every entry's role is viewer. Audited as conversation.access_changed. */
  async replaceAccess(context: AuditContext & { userId: string }, id: string, shares: ShareInput[]): Promise<AccessView> {
    for (const [i, share] of shares.entries()) {
      if (share.role !== 'viewer') throw new AppError('VALIDATION_ERROR', `body.shares[${i}].role: a conversation is shared to read only: the role is viewer`)
    }
    await this.resolve(context.userId, id, 'owner')
    return this.sharing.replace(context, id, shares)
  }
}
