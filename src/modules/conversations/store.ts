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
  /** The assistant the conversation is with (kept in its messages' metadata). */
  assistant?: { id: string; name: string }
}

/**
 * Stored conversations and their messages, whatever the backend (store.sqlite.ts,
 * store.postgres.ts). Every read and write is scoped to its owner: another user's conversation
 * is a 404, never its content.
 */
export interface ConversationStore {
  create(userId: string, title: string, id?: string): Promise<Conversation>
  /** The conversation if it belongs to `userId`; 404 otherwise. */
  get(id: string, userId: string): Promise<Conversation>
  /** Newest activity first, with every conversation's messages. */
  list(userId: string, limit: number, offset: number): Promise<{ conversations: Conversation[]; total: number }>
  /** Gives a conversation a new title (its updatedAt moves); 404 for another user's. */
  rename(id: string, userId: string, title: string): Promise<Conversation>
  delete(id: string, userId: string): Promise<void>
  /**
   * Appends messages in one transaction and moves the conversation's updatedAt. With `create`, the
   * conversation is made in the same transaction: an exchange is stored whole or not at all (a
   * failed write leaves no empty conversation behind an error answer). A conversation deleted
   * meanwhile (while a reply was generated) stays deleted: 409, nothing written.
   */
  append(conversationId: string, messages: Omit<Message, 'timestamp'>[], create?: { userId: string; title: string }): Promise<void>
}

/** A stored message row, as both backends keep it. */
export interface MessageRow {
  conversation_id: string
  role: Message['role']
  content: string
  tokens: number
  metadata: string | null
  created_at: string
}

export interface ConversationRow {
  id: string
  user_id: string
  title: string
  created_at: string
  updated_at: string
}

export function toMessage(row: MessageRow): Message {
  const message: Message = { role: row.role, content: row.content, timestamp: row.created_at, tokens: Number(row.tokens) }
  if (row.metadata) message.metadata = JSON.parse(row.metadata)
  return message
}

export function toConversation(row: ConversationRow, messages: Message[]): Conversation {
  const conversation: Conversation = { id: row.id, userId: row.user_id, title: row.title, messages, createdAt: row.created_at, updatedAt: row.updated_at }
  const assistant = conversationAssistant(messages)
  if (assistant) conversation.assistant = assistant
  return conversation
}

/** The assistant a conversation started with: the first message that names one (`metadata.assistant`). */
export function conversationAssistant(messages: { metadata?: Record<string, unknown> }[]): { id: string; name: string } | null {
  for (const message of messages) {
    const found = message.metadata?.assistant as { id?: unknown; name?: unknown } | undefined
    if (found && typeof found.id === 'string' && typeof found.name === 'string') return { id: found.id, name: found.name }
  }
  return null
}

export function deletedMeanwhile(conversationId: string): string {
  return `Conversation ${conversationId} was deleted while this reply was being generated; the exchange was not stored`
}
