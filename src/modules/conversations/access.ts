import { AppError, notFound } from '../../core/errors'
import type { Conversation, ConversationStore } from './store'

/** What a caller may do with a conversation: its owner everything; a viewer read and export it. */
export type ConversationAccess = 'owner' | 'viewer'

/** A conversation a caller reached: its owner's id and the caller's access. */
export interface ReachedConversation {
  id: string
  ownerId: string
  access: ConversationAccess
}

/** Who besides its owner may read a conversation (conversation shares), if anything. */
export interface ConversationViewers {
  /** Whether the conversation is shared with the user (directly, through a group or with everyone). */
  canView(conversationId: string, userId: string): Promise<boolean>
}

/**
 * The one rule for who reaches a conversation: its owner, or a user it is shared with (as viewer).
 * Anyone else gets 404, never a hint that it exists; a viewer asking for what only the owner may do
 * (post, regenerate, edit, attach, rename, delete, share) gets 403. Read fresh on every call, so a
 * share removed counts from the next request. Every conversation route calls this.
 */
export class ConversationResolver {
  viewers: ConversationViewers | null = null

  constructor(private readonly store: ConversationStore) {}

  async resolve(userId: string, id: string, need: ConversationAccess = 'viewer'): Promise<ReachedConversation> {
    const ownerId = await this.store.ownerOf(id)
    if (ownerId === null) throw notFound(`Conversation ${id}`)
    if (ownerId === userId) return { id, ownerId, access: 'owner' }
    if (!this.viewers || !(await this.viewers.canView(id, userId))) throw notFound(`Conversation ${id}`)
    if (need === 'owner') throw new AppError('FORBIDDEN', `Conversation ${id} is shared with you to read: only its owner may change it`)
    return { id, ownerId, access: 'viewer' }
  }

  /** The conversation with its messages, for a caller who may read it. */
  async read(userId: string, id: string, need: ConversationAccess = 'viewer'): Promise<{ conversation: Conversation; reached: ReachedConversation }> {
    const reached = await this.resolve(userId, id, need)
    return { conversation: await this.store.get(id, reached.ownerId), reached }
  }
}
