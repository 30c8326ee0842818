import { randomUUID } from 'node:crypto'
import { AppError, notFound } from '../../core/errors'
import type { Postgres } from '../../db/postgres'
import { fromPgText, toPgText } from '../../db/pg-text'
import { type Conversation, type ConversationRow, type ConversationStore, deletedMeanwhile, type Message, type MessageRow, toConversation, toMessage } from './store'

// Titles and message contents go through toPgText / fromPgText: a message holding U+0000 is kept
// as sent, as SQLite keeps it (PostgreSQL's text refuses that character as it is).
const readConversation = (row: ConversationRow, messages: Message[]) => toConversation({ ...row, title: fromPgText(row.title) }, messages)
const readMessage = (row: MessageRow) => toMessage({ ...row, content: fromPgText(row.content) })

/** Conversations in PostgreSQL (UAGENT_DATABASE_URL). */
export class PostgresConversationStore implements ConversationStore {
  constructor(private readonly sql: Postgres) {}

  async create(userId: string, title: string, id: string = randomUUID()): Promise<Conversation> {
    return this.insert(this.sql, userId, title, id)
  }

  private async insert(sql: Postgres, userId: string, title: string, id: string): Promise<Conversation> {
    const now = new Date().toISOString()
    await sql`INSERT INTO conversations (id, user_id, title, created_at, updated_at) VALUES (${id}, ${userId}, ${toPgText(title)}, ${now}, ${now})`
    return { id, userId, title, messages: [], createdAt: now, updatedAt: now }
  }

  /** The conversation and its messages in one round trip (one row per message; one row, message columns null, when it has none). */
  async get(id: string, userId: string): Promise<Conversation> {
    const rows: JoinedRow[] = await this.sql`SELECT c.id, c.user_id, c.title, c.created_at, c.updated_at,
        m.role AS m_role, m.content AS m_content, m.tokens AS m_tokens, m.metadata AS m_metadata, m.created_at AS m_created_at
      FROM conversations c LEFT JOIN messages m ON m.conversation_id = c.id
      WHERE c.id = ${id} AND c.user_id = ${userId} ORDER BY m.id`
    if (!rows.length) throw notFound(`Conversation ${id}`)
    return conversationsOf(rows)[0]!
  }

  /**
   * A page of conversations with their messages and the owner's total, in one round trip: the
   * total comes with every row, and with a row of its own (no conversation) when the page is empty.
   */
  async list(userId: string, limit: number, offset: number): Promise<{ conversations: Conversation[]; total: number }> {
    const rows: (JoinedRow & { total: string })[] = await this.sql`SELECT (SELECT count(*) FROM conversations WHERE user_id = ${userId}) AS total,
        p.id, p.user_id, p.title, p.created_at, p.updated_at,
        m.role AS m_role, m.content AS m_content, m.tokens AS m_tokens, m.metadata AS m_metadata, m.created_at AS m_created_at
      FROM (SELECT 1) AS one
      LEFT JOIN (SELECT * FROM conversations WHERE user_id = ${userId} ORDER BY updated_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}) AS p ON true
      LEFT JOIN messages m ON m.conversation_id = p.id
      ORDER BY p.updated_at DESC, p.id DESC, m.id`
    return { total: Number(rows[0]!.total), conversations: conversationsOf(rows) }
  }

  async rename(id: string, userId: string, title: string): Promise<Conversation> {
    const result = await this.sql`UPDATE conversations SET title = ${toPgText(title)}, updated_at = ${new Date().toISOString()} WHERE id = ${id} AND user_id = ${userId}`
    if (result.count === 0) throw notFound(`Conversation ${id}`)
    return this.get(id, userId)
  }

  async delete(id: string, userId: string): Promise<void> {
    const result = await this.sql`DELETE FROM conversations WHERE id = ${id} AND user_id = ${userId}`
    if (result.count === 0) throw notFound(`Conversation ${id}`)
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
  m_role: Message['role'] | null
  m_content: string | null
  m_tokens: number | null
  m_metadata: string | null
  m_created_at: string | null
}

/** The conversations of joined rows, in the rows' order, each with its messages (rows without a conversation are skipped). */
function conversationsOf(rows: JoinedRow[]): Conversation[] {
  const byId = new Map<string, Conversation>()
  for (const row of rows) {
    if (row.id === null) continue
    let conversation = byId.get(row.id)
    if (!conversation) byId.set(row.id, (conversation = readConversation(row, [])))
    if (row.m_role !== null) {
      conversation.messages.push(
        readMessage({ conversation_id: row.id, role: row.m_role, content: row.m_content!, tokens: row.m_tokens ?? 0, metadata: row.m_metadata, created_at: row.m_created_at! }),
      )
    }
  }
  return [...byId.values()]
}
