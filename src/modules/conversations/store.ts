export interface Message {
  /** Stable public id (a UUID), the same on every read. */
  id: string
  role: 'user' | 'assistant' | 'system'
  content: string
  timestamp: string
  tokens?: number
  metadata?: Record<string, unknown>
}

/** A message to write: its id is made when not given (an edited message keeps the one it had). */
export type NewMessage = Omit<Message, 'timestamp' | 'id'> & { id?: string }

const HAS_FILES = Symbol('conversation has a files collection')

/**
 * Marks a conversation read by a store's get() with whether its owner has the collection of its
 * attached files (conversations/files.ts), read with it, so that posting to a conversation without
 * files costs no look-up. A symbol: never serialized, never in a response.
 */
export function withFilesKnown(conversation: Conversation, hasFiles: boolean): Conversation {
  ;(conversation as Conversation & { [HAS_FILES]?: boolean })[HAS_FILES] = hasFiles
  return conversation
}

/** Whether a conversation has a files collection: false when its store read that it has none, true when it has one or nobody read it (look it up). */
export function mayHaveFiles(conversation: Conversation): boolean {
  return (conversation as Conversation & { [HAS_FILES]?: boolean })[HAS_FILES] !== false
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

/** A conversation found by a search, with the excerpt that matched. */
export interface FoundConversation extends Conversation {
  match: string
}

/** A reply's rating by one reader. */
export interface Rating {
  rating: 'up' | 'down'
  note?: string | null
}

/** Ratings of replies per model (what the analytics dashboard shows). */
export interface FeedbackByModel {
  model: string
  up: number
  down: number
}

/** Ratings of replies per assistant (replies that came from one). */
export interface FeedbackByAssistant {
  assistant: { id: string; name: string }
  up: number
  down: number
}

/**
 * Stored conversations and their messages, whatever the backend (store.sqlite.ts,
 * store.postgres.ts). Every read and write is scoped to its owner: another user's conversation
 * is a 404, never its content. (Who else may read one — a viewer it is shared with — is decided
 * by the conversation resolver before the store is asked, with the owner's id.)
 */
export interface ConversationStore {
  create(userId: string, title: string, id?: string): Promise<Conversation>
  /** The conversation if it belongs to `userId`; 404 otherwise. */
  get(id: string, userId: string): Promise<Conversation>
  /** The owner of a conversation, or null when there is none of that id. */
  ownerOf(id: string): Promise<string | null>
  /** Newest activity first, with every conversation's messages. */
  list(userId: string, limit: number, offset: number): Promise<{ conversations: Conversation[]; total: number }>
  /**
   * The user's conversations (and `sharedWith` ones: those shared with the user, see
   * ConversationShares) whose title or one message holds every word of `terms` (each a word's
   * start), newest activity first, each with the excerpt that matched and, in `messages`, the
   * message that matched (the newest such; none when only the title did), not all of them.
   */
  search(userId: string, terms: string[], limit: number, offset: number): Promise<{ conversations: FoundConversation[]; total: number }>
  /** Gives a conversation a new title (its updatedAt moves); 404 for another user's. */
  rename(id: string, userId: string, title: string): Promise<Conversation>
  delete(id: string, userId: string): Promise<void>
  /**
   * Appends messages in one transaction and moves the conversation's updatedAt. With `create`, the
   * conversation is made in the same transaction: an exchange is stored whole or not at all (a
   * failed write leaves no empty conversation behind an error answer). A conversation deleted
   * meanwhile (while a reply was generated) stays deleted: 409, nothing written. Returns the
   * messages' ids.
   */
  append(conversationId: string, messages: NewMessage[], create?: { userId: string; title: string }): Promise<string[]>
  /**
   * Replaces message `fromId` and every message after it with `messages`, in one transaction
   * (an edit: the user message and what followed; a regeneration: the last reply), and moves the
   * conversation's updatedAt (and on PostgreSQL its revision, which the replicas' message caches
   * check). The conversation gone meanwhile: 409; the message no longer there (replaced by another
   * request meanwhile): 409 too, nothing written. Returns the new messages' ids.
   */
  replaceFrom(conversationId: string, fromId: string, messages: NewMessage[]): Promise<string[]>
  /**
   * Records (or replaces) `userId`'s rating of reply `messageId` of the conversation: the reply's
   * model comes with it. Null when the conversation holds no reply of that id.
   */
  rate(conversationId: string, messageId: string, userId: string, rating: Rating): Promise<{ model: string } | null>
  /** The caller's rating of each reply of a conversation that they rated: message id → rating. */
  ratingsOf(conversationId: string, userId: string): Promise<Record<string, Rating>>
  /** Replies rated up and down, per model. */
  feedbackByModel(): Promise<FeedbackByModel[]>
  /** Replies rated up and down, per assistant (its name as when the reply was rated). */
  feedbackByAssistant(): Promise<FeedbackByAssistant[]>
}

/** A stored message row, as both backends keep it. */
export interface MessageRow {
  conversation_id: string
  uid: string
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
  const message: Message = { id: row.uid, role: row.role, content: row.content, timestamp: row.created_at, tokens: Number(row.tokens) }
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

export function replacedMeanwhile(messageId: string): string {
  return `Message ${messageId} was replaced by another request meanwhile; nothing was stored`
}
