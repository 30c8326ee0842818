import type { Database } from 'bun:sqlite'
import { randomUUID } from 'node:crypto'
import { AppError, notFound } from '../../core/errors'

export interface Message {
  role: 'user' | 'assistant' | 'system'
  content: string
  timestamp: string
  tokens?: number
  metadata?: Record<string, unknown>
}

export interface Conversation {
  id: string
  userId: string
  title: string
  messages: Message[]
  createdAt: string
  updatedAt: string
}

interface ConversationRow {
  id: string
  user_id: string
  title: string
  created_at: string
  updated_at: string
}

interface MessageRow {
  conversation_id: string
  role: Message['role']
  content: string
  tokens: number
  metadata: string | null
  created_at: string
}

function toMessage(row: MessageRow): Message {
  const message: Message = { role: row.role, content: row.content, timestamp: row.created_at, tokens: row.tokens }
  if (row.metadata) message.metadata = JSON.parse(row.metadata)
  return message
}

/** A title from the first message: its first line, cut at a word boundary. */
export function titleFrom(message: string): string {
  const line = message.trim().split('\n')[0]!.replace(/\s+/g, ' ')
  if (line.length <= 80) return line
  return `${line.slice(0, 80).replace(/\s+\S*$/, '')}…`
}

/** Stored conversations and their messages. Owns the SQL of both tables. */
export class ConversationStore {
  constructor(private readonly db: Database) {}

  create(userId: string, title: string, id: string = randomUUID()): Conversation {
    const now = new Date().toISOString()
    this.db.run('INSERT INTO conversations (id, user_id, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?)', [id, userId, title, now, now])
    return { id, userId, title, messages: [], createdAt: now, updatedAt: now }
  }

  /** The conversation if it belongs to `userId`; 404 otherwise (never another user's content). */
  get(id: string, userId: string): Conversation {
    const row = this.db.query<ConversationRow, [string, string]>('SELECT * FROM conversations WHERE id = ? AND user_id = ?').get(id, userId)
    if (!row) throw notFound(`Conversation ${id}`)
    const messages = this.db
      .query<MessageRow, [string]>('SELECT * FROM messages WHERE conversation_id = ? ORDER BY id')
      .all(id)
      .map(toMessage)
    return { id: row.id, userId: row.user_id, title: row.title, messages, createdAt: row.created_at, updatedAt: row.updated_at }
  }

  /** Newest activity first, with every conversation's messages (two queries, not one per conversation). */
  list(userId: string, limit: number, offset: number): { conversations: Conversation[]; total: number } {
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
    return {
      total,
      conversations: rows.map((row) => ({
        id: row.id,
        userId: row.user_id,
        title: row.title,
        messages: byConversation.get(row.id)!,
        createdAt: row.created_at,
        updatedAt: row.updated_at,
      })),
    }
  }

  /** Gives a conversation a new title (its updatedAt moves); 404 for another user's. */
  rename(id: string, userId: string, title: string): Conversation {
    const result = this.db.run('UPDATE conversations SET title = ?, updated_at = ? WHERE id = ? AND user_id = ?', [title, new Date().toISOString(), id, userId])
    if (result.changes === 0) throw notFound(`Conversation ${id}`)
    return this.get(id, userId)
  }

  delete(id: string, userId: string): void {
    const result = this.db.run('DELETE FROM conversations WHERE id = ? AND user_id = ?', [id, userId])
    if (result.changes === 0) throw notFound(`Conversation ${id}`)
  }

  /**
   * Appends messages in one transaction and moves the conversation's updatedAt. With `create`, the
   * conversation is made in the same transaction: an exchange is stored whole or not at all (a
   * failed write leaves no empty conversation behind an error answer). A conversation deleted
   * meanwhile (while a reply was generated) stays deleted: 409, nothing written.
   */
  append(conversationId: string, messages: Omit<Message, 'timestamp'>[], create?: { userId: string; title: string }): void {
    this.db.transaction(() => {
      if (create) this.create(create.userId, create.title, conversationId)
      else if (!this.db.query('SELECT 1 FROM conversations WHERE id = ?').get(conversationId)) {
        throw new AppError('CONFLICT', `Conversation ${conversationId} was deleted while this reply was being generated; the exchange was not stored`)
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
