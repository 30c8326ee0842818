import type { Message } from './store'

/**
 * The messages of a conversation as last read from PostgreSQL: its revision, its first and last
 * message ids and the messages up to the last, in order. Never changed once made (a read that finds
 * more makes a new entry), so a read may go on using the entry it started with.
 */
export interface CachedMessages {
  readonly userId: string
  /** conversations.revision when read: it moves whenever messages are replaced or dropped (an edit, a regeneration). */
  readonly revision: number
  readonly firstId: number
  readonly lastId: number
  readonly messages: readonly Message[]
  /** Roughly what the entry holds, in characters (its texts plus a fixed cost per message). */
  readonly size: number
}

/** What a message costs the cache besides its text. */
const PER_MESSAGE = 96

function sizeOf(message: Message): number {
  return PER_MESSAGE + message.content.length + (message.metadata ? JSON.stringify(message.metadata).length : 0)
}

/**
 * Messages of conversations read lately, so that reading a conversation again (the conversations
 * page, a chat's history) fetches only the messages written since (`id > lastId`) instead of all of
 * them. Appending is the common change, and within one conversation the ids are committed in order
 * (an append locks the conversation's row before its messages take their ids, and the identity
 * hands out ids one at a time). Messages are also replaced or dropped (an edit drops a user
 * message and what followed it, a regeneration the last reply, on any replica): each such change
 * moves the conversation's `revision` in the same transaction, with the row locked. An entry is
 * used only while the database still has the same revision, the same first message and at least
 * its last one, so an edited conversation, a conversation deleted and made again under the same
 * id, or one that lost messages (a database restored from a backup), is read whole again.
 *
 * Bounded: the least recently used conversations go once the entries hold more than `limit`
 * characters; a conversation larger than that is not kept at all.
 *
 * What it hands out is shared with the next reader: the messages, and the list itself when no
 * message was added. Readers only read them (the route serializes them; a chat maps its history
 * into new objects). They are not frozen: JSON.stringify takes three times as long over frozen
 * objects in Bun (measured: 1.6 against 0.5 ms for 3,000 messages), which under the team load
 * cost more than the cache saved.
 */
export class MessageCache {
  /** By conversation id, least recently used first. */
  private readonly entries = new Map<string, CachedMessages>()
  /** Each user's cached conversation ids, least recently used first. */
  private readonly byUser = new Map<string, Set<string>>()
  private held = 0

  constructor(private readonly limit = 12_000_000) {}

  /** The entry of a conversation of `userId`, if any (marked as just used). */
  get(conversationId: string, userId: string): CachedMessages | undefined {
    const entry = this.entries.get(conversationId)
    if (!entry || entry.userId !== userId) return undefined
    this.touch(conversationId, entry)
    return entry
  }

  /** A user's cached conversations, the most recently used first, at most `max`. */
  ofUser(userId: string, max: number): [string, CachedMessages][] {
    const ids = this.byUser.get(userId)
    if (!ids) return []
    // The last `max` of the set (the most recently used), newest first.
    const last: string[] = []
    let skip = ids.size - max
    for (const id of ids) if (skip-- <= 0) last.push(id)
    return last.reverse().map((id) => [id, this.entries.get(id)!])
  }

  /**
   * The messages read for a conversation: `base` (the entry the read started from, when the
   * database confirmed it) followed by the messages read after it. Kept unless another read has
   * meanwhile kept a longer run of the same messages.
   */
  keep(conversationId: string, userId: string, revision: number, firstId: number, lastId: number, base: CachedMessages | undefined, read: Message[]): readonly Message[] {
    const messages = base ? (read.length ? base.messages.concat(read) : base.messages) : read
    if (!messages.length) return messages
    const current = this.entries.get(conversationId)
    // Another read kept a later state meanwhile: a later revision, or more messages of this one.
    if (current && current.userId === userId && (current.revision > revision || (current.revision === revision && current.firstId === firstId && current.lastId > lastId))) return messages
    const size = (base?.size ?? 0) + read.reduce((sum, message) => sum + sizeOf(message), 0)
    this.drop(conversationId)
    if (size > this.limit) return messages
    const entry: CachedMessages = { userId, revision, firstId, lastId, messages, size }
    this.entries.set(conversationId, entry)
    let ids = this.byUser.get(userId)
    if (!ids) this.byUser.set(userId, (ids = new Set()))
    ids.add(conversationId)
    this.held += size
    while (this.held > this.limit) {
      const [oldest] = this.entries.keys()
      this.drop(oldest!)
    }
    return messages
  }

  /** Forgets a conversation (deleted here; another replica's deletion is found at the next read). */
  drop(conversationId: string): void {
    const entry = this.entries.get(conversationId)
    if (!entry) return
    this.entries.delete(conversationId)
    this.held -= entry.size
    const ids = this.byUser.get(entry.userId)
    ids?.delete(conversationId)
    if (ids && !ids.size) this.byUser.delete(entry.userId)
  }

  /** Characters held (for tests and the docs' figures). */
  get size(): number {
    return this.held
  }

  private touch(conversationId: string, entry: CachedMessages): void {
    this.entries.delete(conversationId)
    this.entries.set(conversationId, entry)
    const ids = this.byUser.get(entry.userId)!
    ids.delete(conversationId)
    ids.add(conversationId)
  }
}
