import { randomUUID } from 'node:crypto'
import { AppError, notFound } from '../../core/errors'
import type { Postgres } from '../../db/postgres'
import { fromPgText, toPgText } from '../../db/pg-text'
import { type CachedMessages, MessageCache } from './message-cache'
import { type Conversation, type ConversationRow, type ConversationStore, deletedMeanwhile, type Message, type MessageRow, toConversation, toMessage } from './store'

// Titles and message contents go through toPgText / fromPgText: a message holding U+0000 is kept
// as sent, as SQLite keeps it (PostgreSQL's text refuses that character as it is).
const readConversation = (row: ConversationRow, messages: Message[]) => toConversation({ ...row, title: fromPgText(row.title) }, messages)
const readMessage = (row: MessageRow) => toMessage({ ...row, content: fromPgText(row.content) })

/**
 * How many of a user's cached conversations a page's query names at most (the most recently used;
 * twice the page, since a page read marks its conversations used): each is three array elements
 * the client writes out as text, which at 100 per page cost more than what they saved.
 */
const HINTS_PER_LIST = 100

/** Conversations in PostgreSQL (UAGENT_DATABASE_URL). */
export class PostgresConversationStore implements ConversationStore {
  /** Messages read lately (message-cache.ts): a conversation read again costs only its new messages. */
  readonly cache = new MessageCache()

  constructor(private readonly sql: Postgres) {}

  async create(userId: string, title: string, id: string = randomUUID()): Promise<Conversation> {
    return this.insert(this.sql, userId, title, id)
  }

  private async insert(sql: Postgres, userId: string, title: string, id: string): Promise<Conversation> {
    const now = new Date().toISOString()
    await sql`INSERT INTO conversations (id, user_id, title, created_at, updated_at) VALUES (${id}, ${userId}, ${toPgText(title)}, ${now}, ${now})`
    return { id, userId, title, messages: [], createdAt: now, updatedAt: now }
  }

  /**
   * The conversation and its messages in one round trip (one row per message; one row, message
   * columns null, when none is read). With its messages cached, only those written since are read.
   */
  async get(id: string, userId: string): Promise<Conversation> {
    const base = this.cache.get(id, userId)
    const first = base?.firstId ?? -1
    const after = base?.lastId ?? 0
    // As in list(): the cached run is confirmed once (k), and only the messages after it are read.
    const rows: JoinedRow[] = await this.sql`SELECT c.id, c.user_id, c.title, c.created_at, c.updated_at, b.first_id, b.last_id, k.after IS NOT NULL AS known,
        m.role AS m_role, m.content AS m_content, m.tokens AS m_tokens, m.metadata AS m_metadata, m.created_at AS m_created_at
      FROM conversations c
      LEFT JOIN LATERAL (SELECT min(id) AS first_id, max(id) AS last_id FROM messages WHERE conversation_id = c.id) AS b ON true
      LEFT JOIN LATERAL (SELECT ${after}::bigint AS after WHERE b.first_id = ${first} AND ${after} <= b.last_id) AS k ON true
      LEFT JOIN messages m ON m.conversation_id = c.id AND m.id > COALESCE(k.after, 0)
      WHERE c.id = ${id} AND c.user_id = ${userId} ORDER BY m.id`
    if (!rows.length) throw notFound(`Conversation ${id}`)
    return this.conversationsOf(rows, base ? new Map([[id, base]]) : undefined)[0]!
  }

  /**
   * A page of conversations with their messages and the owner's total, in one round trip: the
   * total (kept by triggers in conversation_counts, migration 045) comes with every row, and with a
   * row of its own (no conversation) when the page is empty. The user's cached conversations go along (id, first and last message id): for each of them on
   * the page whose first message is still the same, only the messages after the last are read.
   */
  async list(userId: string, limit: number, offset: number): Promise<{ conversations: Conversation[]; total: number }> {
    const hints = this.cache.ofUser(userId, Math.min(HINTS_PER_LIST, 2 * limit))
    const rows: (JoinedRow & { total: string })[] = await this.sql`SELECT COALESCE((SELECT n FROM conversation_counts WHERE user_id = ${userId}), 0) AS total,
        p.id, p.user_id, p.title, p.created_at, p.updated_at, b.first_id, b.last_id, k.after IS NOT NULL AS known,
        m.role AS m_role, m.content AS m_content, m.tokens AS m_tokens, m.metadata AS m_metadata, m.created_at AS m_created_at
      FROM (SELECT 1) AS one
      LEFT JOIN (SELECT * FROM conversations WHERE user_id = ${userId} ORDER BY updated_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}) AS p ON true
      LEFT JOIN LATERAL (SELECT min(id) AS first_id, max(id) AS last_id FROM messages WHERE conversation_id = p.id) AS b ON true
      LEFT JOIN LATERAL (
        SELECT h.after FROM unnest(${hints.map(([id]) => id)}::text[], ${hints.map(([, entry]) => entry.firstId)}::bigint[], ${hints.map(([, entry]) => entry.lastId)}::bigint[]) AS h(id, first, after)
        WHERE h.id = p.id AND h.first = b.first_id AND h.after <= b.last_id
      ) AS k ON true
      LEFT JOIN messages m ON m.conversation_id = p.id AND m.id > COALESCE(k.after, 0)
      ORDER BY p.updated_at DESC, p.id DESC, m.id`
    return { total: Number(rows[0]!.total), conversations: this.conversationsOf(rows, new Map(hints)) }
  }

  /**
   * The conversations of joined rows, in the rows' order, each with its messages (rows without a
   * conversation are skipped): a conversation whose cached messages the database confirmed (`known`)
   * gets them followed by the rows' messages, which are those after them; the result is cached.
   */
  private conversationsOf(rows: JoinedRow[], bases?: Map<string, CachedMessages>): Conversation[] {
    const read = new Map<string, { row: JoinedRow; messages: Message[] }>()
    for (const row of rows) {
      if (row.id === null) continue
      let conversation = read.get(row.id)
      if (!conversation) read.set(row.id, (conversation = { row, messages: [] }))
      if (row.m_role !== null) {
        conversation.messages.push(
          readMessage({ conversation_id: row.id, role: row.m_role, content: row.m_content!, tokens: row.m_tokens ?? 0, metadata: row.m_metadata, created_at: row.m_created_at! }),
        )
      }
    }
    return [...read.values()].map(({ row, messages }) => {
      const base = row.known ? bases?.get(row.id) : undefined
      const all = row.first_id === null ? messages : this.cache.keep(row.id, row.user_id, Number(row.first_id), Number(row.last_id), base, messages)
      return readConversation(row, all as Message[])
    })
  }

  async rename(id: string, userId: string, title: string): Promise<Conversation> {
    const result = await this.sql`UPDATE conversations SET title = ${toPgText(title)}, updated_at = ${new Date().toISOString()} WHERE id = ${id} AND user_id = ${userId}`
    if (result.count === 0) throw notFound(`Conversation ${id}`)
    return this.get(id, userId)
  }

  async delete(id: string, userId: string): Promise<void> {
    const result = await this.sql`DELETE FROM conversations WHERE id = ${id} AND user_id = ${userId}`
    if (result.count === 0) throw notFound(`Conversation ${id}`)
    this.cache.drop(id)
  }

  /**
   * One statement, so one round trip and atomic without BEGIN and COMMIT of its own: the
   * conversation made (or its row locked, which makes a concurrent delete wait for this exchange,
   * or this exchange see it gone), the messages inserted in order, its updatedAt moved.
   */
  async append(conversationId: string, messages: Omit<Message, 'timestamp'>[], create?: { userId: string; title: string }): Promise<void> {
    const now = new Date().toISOString()
    const roles = messages.map((message) => message.role)
    const contents = messages.map((message) => toPgText(message.content))
    const tokens = messages.map((message) => message.tokens ?? 0)
    const metadata = messages.map((message) => (message.metadata ? JSON.stringify(message.metadata) : null))
    if (create) {
      await this.sql`WITH made AS (
          INSERT INTO conversations (id, user_id, title, created_at, updated_at) VALUES (${conversationId}, ${create.userId}, ${toPgText(create.title)}, ${now}, ${now}) RETURNING id
        )
        INSERT INTO messages (conversation_id, role, content, tokens, metadata, created_at)
        SELECT made.id, m.role, m.content, m.tokens, m.metadata, ${now}
        FROM made, unnest(${roles}::text[], ${contents}::text[], ${tokens}::int[], ${metadata}::text[]) WITH ORDINALITY AS m(role, content, tokens, metadata, n)
        ORDER BY m.n`
      return
    }
    const [row]: { found: number }[] = await this.sql`WITH found AS (
        SELECT id FROM conversations WHERE id = ${conversationId} FOR UPDATE
      ), written AS (
        INSERT INTO messages (conversation_id, role, content, tokens, metadata, created_at)
        SELECT found.id, m.role, m.content, m.tokens, m.metadata, ${now}
        FROM found, unnest(${roles}::text[], ${contents}::text[], ${tokens}::int[], ${metadata}::text[]) WITH ORDINALITY AS m(role, content, tokens, metadata, n)
        ORDER BY m.n
        RETURNING 1
      ), moved AS (
        UPDATE conversations SET updated_at = ${now} WHERE id IN (SELECT id FROM found) RETURNING 1
      )
      SELECT count(*)::int AS found FROM found`
    if (!row?.found) throw new AppError('CONFLICT', deletedMeanwhile(conversationId))
  }
}

/** A conversation's columns with one of its messages' (m_*, null for a conversation without any). */
interface JoinedRow extends ConversationRow {
  /** The conversation's first and last message ids (null when it has none), and whether the cached messages sent along are still its messages up to their last id. */
  first_id: string | number | null
  last_id: string | number | null
  known: boolean | null
  m_role: Message['role'] | null
  m_content: string | null
  m_tokens: number | null
  m_metadata: string | null
  m_created_at: string | null
}
