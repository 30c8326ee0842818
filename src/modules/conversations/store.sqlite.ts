import type { Database } from 'bun:sqlite'
import { randomUUID } from 'node:crypto'
import { AppError, notFound } from '../../core/errors'
import { reachesUser } from '../access/roles'
import { CONVERSATION_FILES_PREFIX } from '../rag/reserved'
import { fts5Query, holdsEvery, matchExcerpt } from './search'
import {
  type Conversation,
  type ConversationRow,
  type ConversationStore,
  deletedMeanwhile,
  type FeedbackByAssistant,
  type FeedbackByModel,
  type FoundConversation,
  type Message,
  type MessageRow,
  type NewMessage,
  type Rating,
  replacedMeanwhile,
  toConversation,
  toMessage,
  withFilesKnown,
} from './store'

/** Conversations in the server's SQLite database (the embedded default). */
export class SqliteConversationStore implements ConversationStore {
  /** Up to how many conversations holding a word a search reads the word's message hits (searchWord; tests lower it). */
  fewConversations = FEW_CONVERSATIONS
  /**
   * When a one-word search walks the caller's conversations newest first for its page (searchWord):
   * when total² ≥ walkCost × (offset + limit) × owned (tests: 0, always; Infinity, never).
   */
  walkCost = WALK_COST

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

  async ownerOf(id: string): Promise<string | null> {
    return this.db.query<{ user_id: string }, [string]>('SELECT user_id FROM conversations WHERE id = ?').get(id)?.user_id ?? null
  }

  private read(id: string, userId: string): Conversation {
    const found = this.db
      .query<ConversationRow & { has_files: number }, [string, string, string]>(
        'SELECT c.*, EXISTS (SELECT 1 FROM rag_collections r WHERE r.user_id = c.user_id AND r.name = ?1) AS has_files FROM conversations c WHERE c.id = ?2 AND c.user_id = ?3',
      )
      .get(`${CONVERSATION_FILES_PREFIX}${id}`, id, userId)
    if (!found) throw notFound(`Conversation ${id}`)
    const { has_files: hasFiles, ...row } = found
    const messages = this.db
      .query<MessageRow, [string]>('SELECT * FROM messages WHERE conversation_id = ? ORDER BY id')
      .all(id)
      .map(toMessage)
    return withFilesKnown(toConversation(row, messages), hasFiles === 1)
  }

  /**
   * Three queries, not one per conversation: the total, the page (the user's own and those shared
   * with them, each side read in index order up to the page's end, then merged), their messages.
   */
  async list(userId: string, limit: number, offset: number): Promise<{ conversations: Conversation[]; total: number }> {
    const total = this.db
      .query<{ n: number }, [string]>(`SELECT (SELECT count(*) FROM conversations WHERE user_id = ?1) + (SELECT count(*) FROM conversations WHERE user_id <> ?1 AND id IN (${SHARED_WITH})) AS n`)
      .get(userId)!.n
    const rows = this.db
      .query<ConversationRow, [string, number, number, number]>(
        `SELECT * FROM (
           SELECT * FROM (SELECT * FROM conversations WHERE user_id = ?1 ORDER BY updated_at DESC, id DESC LIMIT ?2)
           UNION ALL
           SELECT * FROM (SELECT * FROM conversations WHERE user_id <> ?1 AND id IN (${SHARED_WITH}) ORDER BY updated_at DESC, id DESC LIMIT ?2)
         ) ORDER BY updated_at DESC, id DESC LIMIT ?3 OFFSET ?4`,
      )
      .all(userId, limit + offset, limit, offset)
    return { total, conversations: this.withMessages(rows) }
  }

  /** The rows' conversations with their messages, in one query for all of them. */
  private withMessages(rows: ConversationRow[]): Conversation[] {
    const byConversation = new Map<string, Message[]>(rows.map((row) => [row.id, []]))
    if (rows.length) {
      const placeholders = rows.map(() => '?').join(',')
      const messages = this.db
        .query<MessageRow, string[]>(`SELECT * FROM messages WHERE conversation_id IN (${placeholders}) ORDER BY id`)
        .all(...rows.map((row) => row.id))
      for (const message of messages) byConversation.get(message.conversation_id)!.push(toMessage(message))
    }
    return rows.map((row) => toConversation(row, byConversation.get(row.id)!))
  }

  /**
   * Two FTS5 indexes answer (migrations 080, 082), first brought up to date (catchUp). One word
   * (the common case): the conversations' documents (conversation_words: title and messages,
   * remade first where stale) name the conversations that hold it, each once, so a common word
   * costs about the number of conversations; the message shown is then found in each conversation
   * of the page only. Several
   * words, which must be in one message (or the title): the messages' index (messages_fts), its
   * hits grouped by conversation keeping the newest. Either way the conversations the caller may
   * read are kept, newest activity first, counted in the same query; each comes with the message
   * that matched, not all of its messages.
   */
  async search(userId: string, terms: string[], limit: number, offset: number): Promise<{ conversations: FoundConversation[]; total: number }> {
    const match = fts5Query(terms)
    this.catchUp()
    if (terms.length === 1) {
      this.refreshWords(userId)
      return this.searchWord(userId, terms, match, limit, offset)
    }
    const found = `WITH hit(id, mid) AS (
        SELECT conversation_id, max(rowid) FROM messages_fts WHERE messages_fts MATCH ?1 GROUP BY conversation_id
        UNION ALL SELECT conversation_id, NULL FROM conversations_fts WHERE conversations_fts MATCH ?1
      ), best(id, mid) AS (SELECT id, max(mid) FROM hit GROUP BY id)
      SELECT c.*, best.mid FROM conversations c JOIN best ON best.id = c.id WHERE c.user_id = ?2 OR c.id IN (${SHARED_WITH.replaceAll('?1', '?2')})`
    const rows = this.db
      .query<ConversationRow & { mid: number | null; total: number }, [string, string, number, number]>(`SELECT *, count(*) OVER () AS total FROM (${found}) ORDER BY updated_at DESC, id DESC LIMIT ?3 OFFSET ?4`)
      .all(match, userId, limit, offset)
    // A page past the end has no row to carry the total.
    const total = rows.length ? rows[0]!.total : offset > 0 ? this.db.query<{ n: number }, [string, string]>(`SELECT count(*) AS n FROM (${found})`).get(match, userId)!.n : 0
    const mids = rows.flatMap((row) => (row.mid === null ? [] : [row.mid]))
    const matched = new Map<string, Message>()
    if (mids.length) {
      for (const row of this.db.query<MessageRow, number[]>(`SELECT * FROM messages WHERE id IN (${mids.map(() => '?').join(',')})`).all(...mids)) matched.set(row.conversation_id, toMessage(row))
    }
    return { total, conversations: rows.map((row) => foundConversation(row, matched.get(row.id), terms)) }
  }

  /**
   * One word: the conversations' documents (title and messages, migration 082) name the
   * conversations holding it, each once; their key rows (owner, updatedAt, kept with the documents)
   * are enough to keep those the caller may read, count them and take the page, so only the page's
   * conversations are read, and in each the newest message that holds the word (none: the title did).
   */
  private searchWord(userId: string, terms: string[], match: string, limit: number, offset: number): { conversations: FoundConversation[]; total: number } {
    const hits = 'SELECT rowid FROM conversation_words WHERE conversation_words MATCH ?1'
    // Conversations shared with the caller (few, when any) are counted and paged apart from the
    // caller's own, and not at all when there are none (one look-up).
    const shared = this.db.query<{ any: number }, [string]>(`SELECT EXISTS (${SHARED_WITH}) AS any`).get(userId)!.any
      ? `SELECT k.conversation_id AS id, k.updated_at FROM conversation_search_keys k
          WHERE k.conversation_id IN (${SHARED_WITH.replaceAll('?1', '?2')}) AND k.user_id <> ?2 AND +k.n IN (${hits})`
      : null
    const { total, owned } = this.db
      .query<{ total: number; owned: number }, [string, string]>(
        `SELECT (SELECT count(*) FROM conversation_words w JOIN conversation_search_keys k ON k.n = w.rowid WHERE conversation_words MATCH ?1 AND k.user_id = ?2)
           ${shared ? `+ (SELECT count(*) FROM (${shared}))` : ''} AS total,
         (SELECT count(*) FROM conversation_search_keys WHERE user_id = ?2) AS owned`,
      )
      .get(match, userId)!
    if (total <= offset) return { total, conversations: [] }
    // The page: a word most of the caller's conversations hold is met early in their order of
    // activity, so its page walks their keys newest first (migration 083), each tested against the
    // word's hits, when the rows the walk should read ((offset + limit) × owned / total) cost less
    // than sorting every hit.
    const walk = total * total >= this.walkCost * (offset + limit) * owned
    const own = walk
      ? `SELECT k.conversation_id AS id, k.updated_at FROM conversation_search_keys k INDEXED BY conversation_search_keys_newest
          WHERE k.user_id = ?2 AND +k.n IN (${hits}) ORDER BY k.updated_at DESC, k.conversation_id DESC LIMIT ?3`
      : `SELECT k.conversation_id AS id, k.updated_at FROM conversation_words w JOIN conversation_search_keys k ON k.n = w.rowid
          WHERE conversation_words MATCH ?1 AND k.user_id = ?2 ORDER BY k.updated_at DESC, k.conversation_id DESC LIMIT ?3`
    const page = this.db
      .query<{ id: string }, [string, string, number, number, number]>(
        `SELECT id FROM (SELECT * FROM (${own})${shared ? ` UNION ALL SELECT * FROM (${shared} ORDER BY k.updated_at DESC, k.conversation_id DESC LIMIT ?3)` : ''})
          ORDER BY updated_at DESC, id DESC LIMIT ?4 OFFSET ?5`,
      )
      .all(match, userId, offset + limit, limit, offset)
    if (!page.length) return { total, conversations: [] }
    const ids = page.map((hit) => hit.id)
    const rows = new Map(
      this.db
        .query<ConversationRow, string[]>(`SELECT * FROM conversations WHERE id IN (${ids.map(() => '?').join(',')})`)
        .all(...ids)
        .map((row) => [row.id, row]),
    )
    // A word in few conversations: the messages' index names each page conversation's newest
    // message holding it in one pass over its few hits. A common one (reading all its hits would
    // cost what the conversation documents saved) is in one of each conversation's last messages:
    // read newest first (newestHolding).
    let fewHits: Map<string, Message> | undefined
    if (total <= this.fewConversations) {
      fewHits = new Map()
      const mids = this.db
        .query<{ mid: number }, string[]>(`SELECT max(rowid) AS mid FROM messages_fts WHERE messages_fts MATCH ? AND conversation_id IN (${ids.map(() => '?').join(',')}) GROUP BY conversation_id`)
        .all(match, ...ids)
        .map((row) => row.mid)
      if (mids.length) {
        for (const row of this.db.query<MessageRow, number[]>(`SELECT * FROM messages WHERE id IN (${mids.map(() => '?').join(',')})`).all(...mids)) fewHits.set(row.conversation_id, toMessage(row))
      }
    }
    return {
      total,
      conversations: ids.flatMap((id) => {
        const row = rows.get(id)
        return row ? [foundConversation(row, fewHits ? fewHits.get(id) : this.newestHolding(id, terms), terms)] : []
      }),
    }
  }

  /**
   * The newest message of a conversation holding every term, read newest first and tested as the
   * excerpt is (search.ts); none when only its title holds them.
   */
  private newestHolding(conversationId: string, terms: string[]): Message | undefined {
    for (const row of this.db.query<MessageRow, [string]>('SELECT * FROM messages WHERE conversation_id = ? ORDER BY id DESC').iterate(conversationId)) {
      if (holdsEvery(row.content, terms)) return toMessage(row)
    }
    return undefined
  }

  /**
   * Adds the messages written since the last search to the messages' index and marks their
   * conversations' documents stale (migration 082: sending a message does no index work), in one
   * write transaction; nothing to do, one read.
   */
  private catchUp(): void {
    const behind = this.db.query<{ behind: number }, []>('SELECT (SELECT COALESCE(max(id), 0) FROM messages) > messages_through AS behind FROM search_progress')
    if (!behind.get()?.behind) return
    this.db.transaction(() => {
      const through = this.db.query<{ n: number }, []>('SELECT messages_through AS n FROM search_progress').get()!.n
      const newest = this.db.query<{ n: number }, []>('SELECT COALESCE(max(id), 0) AS n FROM messages').get()!.n
      if (newest <= through) return
      this.db.run('INSERT INTO messages_fts(rowid, content, conversation_id) SELECT id, content, conversation_id FROM messages WHERE id > ? AND id <= ?', [through, newest])
      this.db.run('UPDATE conversation_search_keys SET stale = 1 WHERE stale = 0 AND conversation_id IN (SELECT conversation_id FROM messages WHERE id > ? AND id <= ?)', [through, newest])
      this.db.run('UPDATE search_progress SET messages_through = ?', [newest])
    }).immediate()
  }

  /**
   * Remakes the stale word documents (migration 082) of the conversations `userId` may read, from
   * their messages, in one write transaction: what a search reads is then every message stored
   * before it. A conversation's document goes stale when messages are added to it (catchUp), one
   * of its messages is deleted, or it is renamed.
   */
  private refreshWords(userId: string): void {
    const staleOf = this.db.query<{ n: number; id: string }, [string]>(
      `SELECT k.n, k.conversation_id AS id FROM conversation_search_keys k JOIN conversations c ON c.id = k.conversation_id
       WHERE k.stale = 1 AND (c.user_id = ?1 OR c.id IN (${SHARED_WITH}))`,
    )
    if (!staleOf.get(userId)) return
    this.db.transaction(() => {
      const remove = this.db.prepare<void, [number]>('DELETE FROM conversation_words WHERE rowid = ?')
      const add = this.db.prepare<void, [number, string]>(`INSERT INTO conversation_words(rowid, words) VALUES (?1, ${CONVERSATION_DOCUMENT('?2')})`)
      const fresh = this.db.prepare<void, [number]>(
        'UPDATE conversation_search_keys SET stale = 0, user_id = c.user_id, updated_at = c.updated_at FROM conversations c WHERE c.id = conversation_search_keys.conversation_id AND conversation_search_keys.n = ?',
      )
      for (const { n, id } of staleOf.all(userId)) {
        remove.run(n)
        add.run(n, id)
        fresh.run(n)
      }
    }).immediate()
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

  async append(conversationId: string, messages: NewMessage[], create?: { userId: string; title: string }): Promise<string[]> {
    return this.db.transaction(() => {
      if (create) this.insert(create.userId, create.title, conversationId)
      else if (!this.db.query('SELECT 1 FROM conversations WHERE id = ?').get(conversationId)) {
        throw new AppError('CONFLICT', deletedMeanwhile(conversationId))
      }
      const ids = this.write(conversationId, messages)
      this.db.run('UPDATE conversations SET updated_at = ? WHERE id = ?', [new Date().toISOString(), conversationId])
      return ids
    }).immediate()
  }

  async replaceFrom(conversationId: string, fromId: string, messages: NewMessage[]): Promise<string[]> {
    return this.db.transaction(() => {
      if (!this.db.query('SELECT 1 FROM conversations WHERE id = ?').get(conversationId)) throw new AppError('CONFLICT', deletedMeanwhile(conversationId))
      const from = this.db.query<{ id: number }, [string, string]>('SELECT id FROM messages WHERE uid = ? AND conversation_id = ?').get(fromId, conversationId)
      if (!from) throw new AppError('CONFLICT', replacedMeanwhile(fromId))
      this.db.run('DELETE FROM messages WHERE conversation_id = ? AND id >= ?', [conversationId, from.id])
      const ids = this.write(conversationId, messages)
      this.db.run('UPDATE conversations SET updated_at = ? WHERE id = ?', [new Date().toISOString(), conversationId])
      return ids
    }).immediate()
  }

  private write(conversationId: string, messages: NewMessage[]): string[] {
    return messages.map((message) => {
      const id = message.id ?? randomUUID()
      this.db.run('INSERT INTO messages (conversation_id, uid, role, content, tokens, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)', [
        conversationId,
        id,
        message.role,
        message.content,
        message.tokens ?? 0,
        message.metadata ? JSON.stringify(message.metadata) : null,
        new Date().toISOString(),
      ])
      return id
    })
  }

  async rate(conversationId: string, messageId: string, userId: string, { rating, note }: Rating): Promise<{ model: string } | null> {
    return this.db.transaction(() => {
      const reply = this.db
        .query<{ id: number; metadata: string | null }, [string, string]>("SELECT id, metadata FROM messages WHERE uid = ? AND conversation_id = ? AND role = 'assistant'")
        .get(messageId, conversationId)
      if (!reply) return null
      const model = modelOf(reply.metadata)
      const assistant = assistantOf(reply.metadata)
      const now = new Date().toISOString()
      this.db.run(
        `INSERT INTO message_feedback (message_id, user_id, rating, note, model, assistant_id, assistant_name, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (message_id, user_id) DO UPDATE SET rating = excluded.rating, note = excluded.note, updated_at = excluded.updated_at`,
        [reply.id, userId, rating, note ?? null, model, assistant?.id ?? null, assistant?.name ?? null, now, now],
      )
      return { model }
    }).immediate()
  }

  async ratingsOf(conversationId: string, userId: string): Promise<Record<string, Rating>> {
    const rows = this.db
      .query<{ uid: string; rating: Rating['rating']; note: string | null }, [string, string]>(
        'SELECT m.uid, f.rating, f.note FROM message_feedback f JOIN messages m ON m.id = f.message_id WHERE m.conversation_id = ? AND f.user_id = ?',
      )
      .all(conversationId, userId)
    return Object.fromEntries(rows.map((row) => [row.uid, { rating: row.rating, note: row.note }]))
  }

  async feedbackByModel(): Promise<FeedbackByModel[]> {
    return this.db
      .query<FeedbackByModel, []>("SELECT model, sum(rating = 'up') AS up, sum(rating = 'down') AS down FROM message_feedback GROUP BY model ORDER BY model")
      .all()
  }

  async feedbackByAssistant(): Promise<FeedbackByAssistant[]> {
    return this.db
      .query<{ id: string; name: string; up: number; down: number }, []>(
        `SELECT assistant_id AS id, max(assistant_name) AS name, sum(rating = 'up') AS up, sum(rating = 'down') AS down
         FROM message_feedback WHERE assistant_id IS NOT NULL GROUP BY assistant_id ORDER BY name`,
      )
      .all()
      .map((row) => ({ assistant: { id: row.id, name: row.name }, up: row.up, down: row.down }))
  }
}

/** A conversation's word document (migration 082): its title and its messages' contents. */
export const CONVERSATION_DOCUMENT = (id: string) =>
  `(SELECT title FROM conversations WHERE id = ${id}) || ' ' || COALESCE((SELECT group_concat(content, ' ') FROM messages WHERE conversation_id = ${id}), '')`

/**
 * What testing one key row of the walk costs against one hit sorted: about the same (a look-up in
 * the hits' list against a row of the sort), measured at 10,000 conversations of 100 messages.
 */
const WALK_COST = 1

/** Up to how many conversations holding a word a search reads the word's message hits (searchWord). */
const FEW_CONVERSATIONS = 1000

/** A conversation found by a search, with the message that matched (none when only its title did). */
function foundConversation(row: ConversationRow & { mid?: unknown; total?: unknown }, message: Message | undefined, terms: string[]): FoundConversation {
  const { mid: _mid, total: _total, ...columns } = row
  const conversation = toConversation(columns, message ? [message] : [])
  return { ...conversation, match: matchExcerpt(conversation, terms) }
}

/** The ids of the conversations shared with user ?1 (conversation_shares, migration 081). */
const SHARED_WITH = `SELECT s.conversation_id FROM conversation_shares s WHERE ${reachesUser('?1')}`

/** The assistant a stored reply came from (`metadata.assistant`), if any. */
export function assistantOf(metadata: string | null): { id: string; name: string } | null {
  try {
    const assistant = metadata ? (JSON.parse(metadata) as { assistant?: { id?: unknown; name?: unknown } }).assistant : undefined
    return assistant && typeof assistant.id === 'string' && typeof assistant.name === 'string' ? { id: assistant.id, name: assistant.name } : null
  } catch {
    return null
  }
}

/** The model a stored reply names (`metadata.model`), or `unknown`. */
export function modelOf(metadata: string | null): string {
  try {
    const model = metadata ? (JSON.parse(metadata) as { model?: unknown }).model : undefined
    return typeof model === 'string' && model ? model : 'unknown'
  } catch {
    return 'unknown'
  }
}
