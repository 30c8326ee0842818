import type { Database } from 'bun:sqlite'
import { randomUUID } from 'node:crypto'
import { AppError, notFound } from '../../core/errors'
import { type Conversation, type ConversationRow, type ConversationStore, deletedMeanwhile, type Message, type MessageRow, toConversation, toMessage } from './store'

/** Conversations in the server's SQLite database (the embedded default). */
export class SqliteConversationStore implements ConversationStore {
  constructor(private readonly db: Database) {}

  async create(userId: string, title: string, id: string = randomUUID()): Promise<Conversation> {
    return this.insert(userId, title, id)
  }

  private insert(userId: string, title: string, id: string): Conversation {
    const now = new Date().toISOString()
    this.db.run('INSERT INTO conversations (id, user_id, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?)', [id, userId, title, now, now])
    return { id, userId, title, messages: [], createdAt: now, updatedAt: now }
  }

  async get(id: string, userId: string): Promise<Conversation> {
    return this.read(id, userId)
  }

  private read(id: string, userId: string): Conversation {
    const row = this.db.query<ConversationRow, [string, string]>('SELECT * FROM conversations WHERE id = ? AND user_id = ?').get(id, userId)
    if (!row) throw notFound(`Conversation ${id}`)
    const messages = this.db
      .query<MessageRow, [string]>('SELECT * FROM messages WHERE conversation_id = ? ORDER BY id')
      .all(id)
      .map(toMessage)
    return toConversation(row, messages)
  }

  /** Two queries, not one per conversation. */
  async list(userId: string, limit: number, offset: number): Promise<{ conversations: Conversation[]; total: number }> {
    const total = this.db.query<{ n: number }, [string]>('SELECT count(*) AS n FROM conversations WHERE user_id = ?').get(userId)!.n
    const rows = this.db
      .query<ConversationRow, [string, number, number]>(
        'SELECT * FROM conversations WHERE user_id = ? ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?',
      )
      .all(userId, limit, offset)
    const byConversation = new Map<string, Message[]>(rows.map((row) => [row.id, []]))
    if (rows.length) {
      const placeholders = rows.map(() => '?').join(',')
      const messages = this.db
        .query<MessageRow, string[]>(`SELECT * FROM messages WHERE conversation_id IN (${placeholders}) ORDER BY id`)
        .all(...rows.map((row) => row.id))
      for (const message of messages) byConversation.get(message.conversation_id)!.push(toMessage(message))
    }
    return { total, conversations: rows.map((row) => toConversation(row, byConversation.get(row.id)!)) }
  }

  async rename(id: string, userId: string, title: string): Promise<Conversation> {
    const result = this.db.run('UPDATE conversations SET title = ?, updated_at = ? WHERE id = ? AND user_id = ?', [title, new Date().toISOString(), id, userId])
    if (result.changes === 0) throw notFound(`Conversation ${id}`)
    return this.read(id, userId)
  }

  async delete(id: string, userId: string): Promise<void> {
    const result = this.db.run('DELETE FROM conversations WHERE id = ? AND user_id = ?', [id, userId])
    if (result.changes === 0) throw notFound(`Conversation ${id}`)
  }

  async append(conversationId: string, messages: Omit<Message, 'timestamp'>[], create?: { userId: string; title: string }): Promise<void> {
    this.db.transaction(() => {
      if (create) this.insert(create.userId, create.title, conversationId)
      else if (!this.db.query('SELECT 1 FROM conversations WHERE id = ?').get(conversationId)) {
        throw new AppError('CONFLICT', deletedMeanwhile(conversationId))
      }
      for (const message of messages) {
        const now = new Date().toISOString()
        this.db.run('INSERT INTO messages (conversation_id, role, content, tokens, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?)', [
          conversationId,
          message.role,
          message.content,
          message.tokens ?? 0,
          message.metadata ? JSON.stringify(message.metadata) : null,
          now,
        ])
      }
      this.db.run('UPDATE conversations SET updated_at = ? WHERE id = ?', [new Date().toISOString(), conversationId])
    }).immediate()
  }
}
