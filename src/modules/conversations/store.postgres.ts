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

  async get(id: string, userId: string): Promise<Conversation> {
    const [row]: ConversationRow[] = await this.sql`SELECT * FROM conversations WHERE id = ${id} AND user_id = ${userId}`
    if (!row) throw notFound(`Conversation ${id}`)
    const messages: MessageRow[] = await this.sql`SELECT * FROM messages WHERE conversation_id = ${id} ORDER BY id`
    return readConversation(row, messages.map(readMessage))
  }

  async list(userId: string, limit: number, offset: number): Promise<{ conversations: Conversation[]; total: number }> {
    const [counted]: { n: string }[] = await this.sql`SELECT count(*) AS n FROM conversations WHERE user_id = ${userId}`
    const rows: ConversationRow[] = await this.sql`
      SELECT * FROM conversations WHERE user_id = ${userId} ORDER BY updated_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`
    const byConversation = new Map<string, Message[]>(rows.map((row) => [row.id, []]))
    if (rows.length) {
      const messages: MessageRow[] = await this.sql`
        SELECT * FROM messages WHERE conversation_id = ANY(${rows.map((row) => row.id)}::text[]) ORDER BY id`
      for (const message of messages) byConversation.get(message.conversation_id)!.push(readMessage(message))
    }
    return { total: Number(counted!.n), conversations: rows.map((row) => readConversation(row, byConversation.get(row.id)!)) }
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

  async append(conversationId: string, messages: Omit<Message, 'timestamp'>[], create?: { userId: string; title: string }): Promise<void> {
    await this.sql.begin(async (tx) => {
      if (create) await this.insert(tx, create.userId, create.title, conversationId)
      else {
        // The row lock makes a concurrent delete wait for this exchange (or this exchange see it gone).
        const [found] = await tx`SELECT 1 FROM conversations WHERE id = ${conversationId} FOR UPDATE`
        if (!found) throw new AppError('CONFLICT', deletedMeanwhile(conversationId))
      }
      for (const message of messages) {
        await tx`INSERT INTO messages (conversation_id, role, content, tokens, metadata, created_at) VALUES (${conversationId}, ${message.role}, ${toPgText(
          message.content,
        )}, ${message.tokens ?? 0}, ${message.metadata ? JSON.stringify(message.metadata) : null}, ${new Date().toISOString()})`
      }
      await tx`UPDATE conversations SET updated_at = ${new Date().toISOString()} WHERE id = ${conversationId}`
    })
  }
}
