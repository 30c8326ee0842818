import { reachesUser } from '../access/roles'
import { SqliteShareList } from '../access/shares.sqlite'
import type { Candidates, ParsedRef } from '../access/store'
import { CONVERSATION_SHARES, type ConversationLookup, type ConversationRef, NONE } from './access'

/** Conversations for the one resolver, in SQLite: reached by id only; the access list in conversation_shares (migration 081). */
export class SqliteConversationLookup extends SqliteShareList implements ConversationLookup {
  constructor(db: ConstructorParameters<typeof SqliteShareList>[0]) {
    super(db, CONVERSATION_SHARES)
  }

  candidates(userId: string, ref: ParsedRef): Candidates<ConversationRef> {
    if (ref.publicId === undefined) return NONE
    const row = this.db.query<ConversationRef, [string]>('SELECT id, user_id, title AS name FROM conversations WHERE id = ?').get(ref.publicId)
    if (!row) return NONE
    if (row.user_id === userId) return { own: row, byId: null, byOwner: null, shared: [] }
    return { own: null, byId: { row, role: this.roleOf(userId, row.id) }, byOwner: null, shared: [] }
  }

  /** Admins reach another user's conversations by naming the user (`?userId=`), not through shares. */
  override isAdmin(): boolean {
    return false
  }

  sharedWith(userId: string): string[] {
    return this.db
      .query<{ id: string }, Record<string, string>>(`SELECT DISTINCT s.conversation_id AS id FROM conversation_shares s WHERE ${reachesUser('$user')}`)
      .all({ $user: userId })
      .map((row) => row.id)
  }
}
