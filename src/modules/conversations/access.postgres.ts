import type { Postgres } from '../../db/postgres'
import { highestRole, reachesUser, type ShareRole } from '../access/roles'
import { PostgresShareList } from '../access/shares.postgres'
import type { Candidates, ParsedRef } from '../access/store'
import { CONVERSATION_SHARES, type ConversationLookup, type ConversationRef, NONE } from './access'

/** Conversations for the one resolver, in PostgreSQL (see SqliteConversationLookup): one round trip. */
export class PostgresConversationLookup extends PostgresShareList implements ConversationLookup {
  constructor(sql: Postgres) {
    super(sql, CONVERSATION_SHARES)
  }

  async candidates(userId: string, ref: ParsedRef): Promise<Candidates<ConversationRef>> {
    if (ref.publicId === undefined) return NONE
    const rows = await this.sql.unsafe(
      `SELECT c.id, c.user_id, c.title AS name, s.role FROM conversations c LEFT JOIN conversation_shares s ON s.conversation_id = c.id AND c.user_id <> $2 AND ${reachesUser('$2')}
       WHERE c.id = $1`,
      [ref.publicId, userId],
    )
    if (!rows.length) return NONE
    const { role: _role, ...row } = rows[0] as ConversationRef & { role: ShareRole | null }
    if (row.user_id === userId) return { own: row, byId: null, byOwner: null, shared: [] }
    return { own: null, byId: { row, role: highestRole(rows.map((r: { role: ShareRole | null }) => r.role).filter((r: ShareRole | null): r is ShareRole => r !== null)) }, byOwner: null, shared: [] }
  }

  /** Admins reach another user's conversations by naming the user (`?userId=`), not through shares. */
  override async isAdmin(): Promise<boolean> {
    return false
  }

  async sharedWith(userId: string): Promise<string[]> {
    const rows = await this.sql.unsafe(`SELECT DISTINCT s.conversation_id AS id FROM conversation_shares s WHERE ${reachesUser('$1')}`, [userId])
    return rows.map((row: { id: string }) => row.id)
  }
}
