import { randomUUID } from 'node:crypto'
import { AppError, notFound } from '../../core/errors'
import type { Postgres } from '../../db/postgres'
import { fromPgText, toPgText } from '../../db/pg-text'
import { CONVERSATION_FILES_PREFIX } from '../rag/reserved'
import { type CachedMessages, MessageCache } from './message-cache'
import { matchExcerpt, tsQuery } from './search'
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
import { assistantOf, modelOf } from './store.sqlite'

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
  /** Conversations a one-word search finds above which the word counts as common (newestHolding; tests lower it). */
  commonWordAbove = COMMON_WORD
  /**
   * When a one-word search walks the caller's conversations newest first for its page (searchWord):
   * when holding² ≥ walkCost × (offset + limit) × owned, i.e. when the rows the walk is expected to read,
   * each costing about WALK_COST of the rows a sort of the GIN's hits handles, cost less (tests: 0, always).
   */
  walkCost = WALK_COST

  constructor(private readonly sql: Postgres) {}

  /** The ids of the conversations shared with `userId` (conversation_shares, migration 081: a user entry, a group they are in, everyone), as a fragment of a query. */
  private sharedWith(userId: string) {
    return this.sql`SELECT s.conversation_id FROM conversation_shares s WHERE s.principal_type = 'everyone' OR (s.principal_type = 'user' AND s.principal_id = ${userId})
      OR (s.principal_type = 'group' AND EXISTS (SELECT 1 FROM group_members gm WHERE gm.group_id = s.principal_id AND gm.user_id = ${userId}))`
  }

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
    const revision = base?.revision ?? -1
    // As in list(): the cached run is confirmed once (k), and only the messages after it are read.
    const rows: (JoinedRow & { has_files: boolean })[] = await this.sql`SELECT c.id, c.user_id, c.title, c.created_at, c.updated_at, c.revision, b.first_id, b.last_id, k.after IS NOT NULL AS known,
        EXISTS (SELECT 1 FROM rag_collections r WHERE r.user_id = c.user_id AND r.name = ${`${CONVERSATION_FILES_PREFIX}${id}`}) AS has_files,
        m.uid AS m_uid, m.role AS m_role, m.content AS m_content, m.tokens AS m_tokens, m.metadata AS m_metadata, m.created_at AS m_created_at
      FROM conversations c
      LEFT JOIN LATERAL (SELECT min(id) AS first_id, max(id) AS last_id FROM messages WHERE conversation_id = c.id) AS b ON true
      LEFT JOIN LATERAL (SELECT ${after}::bigint AS after WHERE c.revision = ${revision} AND b.first_id = ${first} AND ${after} <= b.last_id) AS k ON true
      LEFT JOIN messages m ON m.conversation_id = c.id AND m.id > COALESCE(k.after, 0)
      WHERE c.id = ${id} AND c.user_id = ${userId} ORDER BY m.id`
    if (!rows.length) throw notFound(`Conversation ${id}`)
    return withFilesKnown(this.conversationsOf(rows, base ? new Map([[id, base]]) : undefined)[0]!, rows[0]!.has_files === true)
  }

  /**
   * A page of conversations with their messages and the owner's total, in one round trip: the
   * total (kept by triggers in conversation_counts, migration 045) comes with every row, and with a
   * row of its own (no conversation) when the page is empty. The user's cached conversations go along (id, first and last message id): for each of them on
   * the page whose first message is still the same, only the messages after the last are read.
   */
  async list(userId: string, limit: number, offset: number): Promise<{ conversations: Conversation[]; total: number }> {
    const hints = this.cache.ofUser(userId, Math.min(HINTS_PER_LIST, 2 * limit))
    const rows: (JoinedRow & { total: string })[] = await this.sql`SELECT COALESCE((SELECT n FROM conversation_counts WHERE user_id = ${userId}), 0)
          + (SELECT count(*) FROM conversations c WHERE c.user_id <> ${userId} AND c.id IN (${this.sharedWith(userId)})) AS total,
        p.id, p.user_id, p.title, p.created_at, p.updated_at, p.revision, b.first_id, b.last_id, k.after IS NOT NULL AS known,
        m.uid AS m_uid, m.role AS m_role, m.content AS m_content, m.tokens AS m_tokens, m.metadata AS m_metadata, m.created_at AS m_created_at
      FROM (SELECT 1) AS one
      LEFT JOIN (SELECT * FROM (
          (SELECT * FROM conversations WHERE user_id = ${userId} ORDER BY updated_at DESC, id DESC LIMIT ${limit + offset})
          UNION ALL
          (SELECT * FROM conversations c WHERE c.user_id <> ${userId} AND c.id IN (${this.sharedWith(userId)})
            ORDER BY updated_at DESC, id DESC LIMIT ${limit + offset})
        ) AS mine ORDER BY updated_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}) AS p ON true
      LEFT JOIN LATERAL (SELECT min(id) AS first_id, max(id) AS last_id FROM messages WHERE conversation_id = p.id) AS b ON true
      LEFT JOIN LATERAL (
        SELECT h.after FROM unnest(${hints.map(([id]) => id)}::text[], ${hints.map(([, entry]) => entry.revision)}::bigint[], ${hints.map(([, entry]) => entry.firstId)}::bigint[], ${hints.map(([, entry]) => entry.lastId)}::bigint[]) AS h(id, revision, first, after)
        WHERE h.id = p.id AND h.revision = p.revision AND h.first = b.first_id AND h.after <= b.last_id
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
          readMessage({ conversation_id: row.id, uid: row.m_uid!, role: row.m_role, content: row.m_content!, tokens: row.m_tokens ?? 0, metadata: row.m_metadata, created_at: row.m_created_at! }),
        )
      }
    }
    return [...read.values()].map(({ row, messages }) => {
      const base = row.known ? bases?.get(row.id) : undefined
      const all = row.first_id === null ? messages : this.cache.keep(row.id, row.user_id, Number(row.revision), Number(row.first_id), Number(row.last_id), base, messages)
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
  async append(conversationId: string, messages: NewMessage[], create?: { userId: string; title: string }): Promise<string[]> {
    const now = new Date().toISOString()
    const { ids, roles, contents, tokens, metadata } = columnsOf(messages)
    if (create) {
      await this.sql`WITH made AS (
          INSERT INTO conversations (id, user_id, title, created_at, updated_at) VALUES (${conversationId}, ${create.userId}, ${toPgText(create.title)}, ${now}, ${now}) RETURNING id
        )
        INSERT INTO messages (conversation_id, uid, role, content, tokens, metadata, created_at)
        SELECT made.id, m.uid, m.role, m.content, m.tokens, m.metadata, ${now}
        FROM made, unnest(${ids}::text[], ${roles}::text[], ${contents}::text[], ${tokens}::int[], ${metadata}::text[]) WITH ORDINALITY AS m(uid, role, content, tokens, metadata, n)
        ORDER BY m.n`
      return ids
    }
    const [row]: { found: number }[] = await this.sql`WITH found AS (
        SELECT id FROM conversations WHERE id = ${conversationId} FOR UPDATE
      ), written AS (
        INSERT INTO messages (conversation_id, uid, role, content, tokens, metadata, created_at)
        SELECT found.id, m.uid, m.role, m.content, m.tokens, m.metadata, ${now}
        FROM found, unnest(${ids}::text[], ${roles}::text[], ${contents}::text[], ${tokens}::int[], ${metadata}::text[]) WITH ORDINALITY AS m(uid, role, content, tokens, metadata, n)
        ORDER BY m.n
        RETURNING 1
      ), moved AS (
        UPDATE conversations SET updated_at = ${now} WHERE id IN (SELECT id FROM found) RETURNING 1
      )
      SELECT count(*)::int AS found FROM found`
    if (!row?.found) throw new AppError('CONFLICT', deletedMeanwhile(conversationId))
    return ids
  }

  /**
   * A transaction with the conversation's row locked (appends and other replacements wait): the
   * messages from `fromId` on deleted, the new ones inserted, updatedAt and revision moved. The
   * revision tells every replica's cache that its run of messages is no longer the conversation's.
   */
  async replaceFrom(conversationId: string, fromId: string, messages: NewMessage[]): Promise<string[]> {
    const now = new Date().toISOString()
    const { ids, roles, contents, tokens, metadata } = columnsOf(messages)
    await this.sql.begin(async (tx) => {
      const [found] = await tx`SELECT id FROM conversations WHERE id = ${conversationId} FOR UPDATE`
      if (!found) throw new AppError('CONFLICT', deletedMeanwhile(conversationId))
      const [from]: { id: string }[] = await tx`SELECT id FROM messages WHERE uid = ${fromId} AND conversation_id = ${conversationId}`
      if (!from) throw new AppError('CONFLICT', replacedMeanwhile(fromId))
      await tx`DELETE FROM messages WHERE conversation_id = ${conversationId} AND id >= ${from.id}`
      await tx`INSERT INTO messages (conversation_id, uid, role, content, tokens, metadata, created_at)
        SELECT ${conversationId}, m.uid, m.role, m.content, m.tokens, m.metadata, ${now}
        FROM unnest(${ids}::text[], ${roles}::text[], ${contents}::text[], ${tokens}::int[], ${metadata}::text[]) WITH ORDINALITY AS m(uid, role, content, tokens, metadata, n)
        ORDER BY m.n`
      await tx`UPDATE conversations SET updated_at = ${now}, revision = revision + 1 WHERE id = ${conversationId}`
    })
    this.cache.drop(conversationId)
    return ids
  }

  async ownerOf(id: string): Promise<string | null> {
    const [row]: { user_id: string }[] = await this.sql`SELECT user_id FROM conversations WHERE id = ${id}`
    return row?.user_id ?? null
  }

  /**
   * One word (the common case): the conversations' word rows (conversation_words, migration 082:
   * title and messages; remade first where stale) name the conversations holding it, each once,
   * counted and ordered from those rows; then the page's conversations are read, each with
   * its newest message holding the word. Several words, which must be in one message (or the
   * title): the messages' GIN index (migration 080), hits grouped by conversation keeping the
   * newest. Either way only conversations the caller may read, newest activity first.
   */
  async search(userId: string, terms: string[], limit: number, offset: number): Promise<{ conversations: FoundConversation[]; total: number }> {
    const query = tsQuery(terms)
    await this.refreshWords(userId)
    if (terms.length === 1) return this.searchWord(userId, query, terms, limit, offset)
    // The conversations of the (few) hits read one by one by their key (OFFSET 0): not all of them
    // scanned to hash-join a few hundred, which the planner would otherwise pick at 10,000.
    const rows: (ConversationRow & { mid: string | null; total: string })[] = await this.sql`WITH q AS MATERIALIZED (SELECT to_tsquery('simple', ${query}) AS q),
      hit AS (
        SELECT w.conversation_id AS id, max(w.message_id) AS mid FROM message_words w, q WHERE w.words @@ q.q GROUP BY w.conversation_id
        UNION ALL SELECT w.conversation_id, NULL FROM conversation_words w, q WHERE w.title_words @@ q.q
      ),
      best AS (SELECT id, max(mid) AS mid FROM hit GROUP BY id),
      mine AS (
        SELECT c.id, c.user_id, c.title, c.created_at, c.updated_at, best.mid FROM best CROSS JOIN LATERAL (SELECT * FROM conversations c WHERE c.id = best.id OFFSET 0) c
        WHERE c.user_id = ${userId} OR c.id IN (${this.sharedWith(userId)})
      ),
      counted AS (SELECT count(*) AS total FROM mine),
      page AS (SELECT * FROM mine ORDER BY updated_at DESC, id DESC LIMIT ${limit} OFFSET ${offset})
      SELECT counted.total, page.* FROM counted LEFT JOIN page ON true ORDER BY page.updated_at DESC, page.id DESC`
    const total = Number(rows[0]?.total ?? 0)
    const page = rows.filter((row) => row.id !== null)
    const mids = page.flatMap((row) => (row.mid === null ? [] : [row.mid]))
    const matched = new Map<string, Message>()
    if (mids.length) {
      const messages: MessageRow[] = await this.sql`SELECT conversation_id, uid, role, content, tokens, metadata, created_at FROM messages WHERE id IN (SELECT unnest(${mids}::bigint[]))`
      for (const row of messages) matched.set(row.conversation_id, readMessage(row))
    }
    return { total, conversations: page.map((row) => foundOf(row, matched.get(row.id), terms)) }
  }

  private async searchWord(userId: string, query: string, terms: string[], limit: number, offset: number): Promise<{ conversations: FoundConversation[]; total: number }> {
    const { total, rows } = await this.sql.begin(async (tx) => {
      // Two settings for this transaction. No sequential scans: the planner cannot know that testing
      // a row's words reads them from TOAST (kilobytes each), so on 10,000 rows it may take a scan
      // of them all for cheaper than the GIN index (it did once the index's pending list had grown):
      // 250 ms instead of 5. Generic plans: planned once per connection, where these statements'
      // custom plans cost 3-4 ms of planning at every search.
      await tx`SELECT set_config('enable_seqscan', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true)`
      // q MATERIALIZED: the planner does not see the word, so it keeps to the GIN index. `others`: the
      // others' conversations the caller may read that hold it (shared with them), and any
      // conversation they may read whose words are not indexed (null: past a tsvector's size). The
      // caller's own: a word most of their conversations hold is met within their first few in
      // order of activity, so that order is walked (each row's words tested as it goes:
      // ts_match_vq, which no index answers) rather than its thousands of GIN hits sorted; which
      // of the two, the count decides (`how`, walkCost).
      const rows: (ConversationRow & { mine: string; others: string })[] = await tx`WITH q AS MATERIALIZED (SELECT to_tsquery('simple', ${query}) AS q),
        shared(id) AS (${this.sharedWith(userId)}),
        others AS (
          SELECT w.conversation_id AS id, w.updated_at FROM conversation_words w, q WHERE w.words @@ q.q AND w.user_id <> ${userId} AND w.conversation_id IN (SELECT id FROM shared)
          UNION ALL SELECT w.conversation_id, w.updated_at FROM conversation_words w JOIN conversations c ON c.id = w.conversation_id, q
            WHERE w.words IS NULL AND (w.user_id = ${userId} OR w.conversation_id IN (SELECT id FROM shared))
            AND (to_tsvector('simple', c.title) @@ q.q OR EXISTS (SELECT 1 FROM message_words m WHERE m.conversation_id = w.conversation_id AND m.words @@ q.q))
        ),
        counted AS MATERIALIZED (
          SELECT mine.n AS mine, (SELECT count(*) FROM others) AS others, (SELECT n FROM conversation_counts WHERE user_id = ${userId}) AS owned
          FROM (SELECT count(*) AS n FROM conversation_words w, q WHERE w.words @@ q.q AND w.user_id = ${userId}) mine
        ),
        how AS MATERIALIZED (SELECT mine * mine >= ${this.walkCost}::float8 * ${offset + limit}::float8 * GREATEST(coalesce(owned, 0), mine) AS walk FROM counted),
        page AS (
          SELECT * FROM (
            (SELECT w.conversation_id AS id, w.updated_at FROM conversation_words w, q WHERE (SELECT walk FROM how) AND w.user_id = ${userId} AND ts_match_vq(w.words, q.q)
              ORDER BY w.updated_at DESC, w.conversation_id DESC LIMIT ${offset + limit})
            UNION ALL SELECT w.conversation_id, w.updated_at FROM conversation_words w, q WHERE NOT (SELECT walk FROM how) AND w.words @@ q.q AND w.user_id = ${userId}
            UNION ALL SELECT id, updated_at FROM others
          ) h ORDER BY updated_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}
        )
        SELECT counted.mine, counted.others, c.id, c.user_id, c.title, c.created_at, c.updated_at
        FROM counted LEFT JOIN page ON true LEFT JOIN conversations c ON c.id = page.id ORDER BY page.updated_at DESC, page.id DESC`
      const total = Number(rows[0]?.mine ?? 0) + Number(rows[0]?.others ?? 0)
      return { total, rows: rows.filter((row) => row.id !== null) }
    })
    const holding = rows.map((row) => row.id)
    const matched = holding.length ? await this.newestHolding(holding, query, terms[0]!, total > this.commonWordAbove) : new Map<string, Message>()
    return { total, conversations: rows.map((row) => foundOf(row, matched.get(row.id), terms)) }
  }

  /**
   * Each conversation's newest message holding the word. A rare word: its GIN entries, kept to
   * these conversations (newestByIndex). A common one: the GIN entries of a word in tens of
   * thousands of messages take longer to read (50 ms at a million) than the page's messages, so
   * each conversation's messages are read newest first in the database, the first holding the word
   * as a substring (strpos of the lowercased text, microseconds) and then as a word's start
   * (to_tsvector, tens of microseconds) kept. (OFFSET 0: the planner walks the messages, not the GIN.)
   * A conversation where none does (the title alone holds the word, or a lowercasing the
   * database's parser does otherwise) is read again with to_tsvector alone.
   */
  private async newestHolding(ids: string[], query: string, word: string, common: boolean): Promise<Map<string, Message>> {
    if (!common) return this.newestByIndex(ids, query)
    const newest = (rest: string[], substring: string | null): Promise<MessageRow[]> => this.sql`SELECT m.conversation_id, m.uid, m.role, m.content, m.tokens, m.metadata, m.created_at FROM unnest(${rest}::text[]) AS p(id)
      CROSS JOIN LATERAL (
        SELECT * FROM (SELECT * FROM messages m WHERE m.conversation_id = p.id ORDER BY m.id DESC OFFSET 0) m
        WHERE (${substring}::text IS NULL OR strpos(lower(m.content), ${substring}) > 0) AND to_tsvector('simple', m.content) @@ to_tsquery('simple', ${query}) LIMIT 1
      ) m`
    const found = new Map((await newest(ids, word)).map((row) => [row.conversation_id, readMessage(row)]))
    const rest = ids.filter((id) => !found.has(id))
    if (rest.length) for (const row of await newest(rest, null)) found.set(row.conversation_id, readMessage(row))
    return found
  }

  /** Each conversation's newest message holding the word, from the messages' GIN entries (migration 080) kept to these conversations. */
  private async newestByIndex(ids: string[], query: string): Promise<Map<string, Message>> {
    const rows: MessageRow[] = await this.sql`SELECT m.conversation_id, m.uid, m.role, m.content, m.tokens, m.metadata, m.created_at FROM messages m WHERE m.id IN (
        SELECT max(w.message_id) FROM message_words w WHERE w.conversation_id = ANY(${ids}::text[]) AND w.words @@ to_tsquery('simple', ${query}) GROUP BY w.conversation_id
      )`
    return new Map(rows.map((row) => [row.conversation_id, readMessage(row)]))
  }

  /**
   * Remakes the stale word rows (migration 082) of the conversations `userId` may read, from their
   * messages: the conversation rows locked first (an append to one waits, and one that committed
   * before is read), so that a row marked fresh holds every message its conversation has.
   */
  private async refreshWords(userId: string): Promise<void> {
    const stale: { id: string }[] = await this.sql`SELECT c.id FROM conversations c WHERE c.words_stale AND c.user_id = ${userId}
      UNION ALL SELECT c.id FROM conversations c WHERE c.words_stale AND c.user_id <> ${userId} AND c.id IN (${this.sharedWith(userId)})`
    if (!stale.length) return
    await this.sql.begin(async (tx) => {
      const locked: { id: string }[] = await tx`SELECT id FROM conversations WHERE id = ANY(${stale.map((row) => row.id)}::text[]) AND words_stale ORDER BY id FOR UPDATE`
      if (!locked.length) return
      const ids = locked.map((row) => row.id)
      await tx`INSERT INTO conversation_words (conversation_id, user_id, updated_at, words, title_words)
        SELECT id, user_id, updated_at, conversation_words_of(id), to_tsvector('simple', title) FROM conversations WHERE id = ANY(${ids}::text[])
        ON CONFLICT (conversation_id) DO UPDATE SET user_id = EXCLUDED.user_id, updated_at = EXCLUDED.updated_at, words = EXCLUDED.words, title_words = EXCLUDED.title_words`
      // The messages' words (migration 084) of those conversations, those not there yet.
      await tx`INSERT INTO message_words (message_id, conversation_id, words)
        SELECT m.id, m.conversation_id, to_tsvector('simple', m.content) FROM messages m
        WHERE m.conversation_id = ANY(${ids}::text[]) AND NOT EXISTS (SELECT 1 FROM message_words w WHERE w.message_id = m.id)`
      await tx`UPDATE conversations SET words_stale = false WHERE id = ANY(${ids}::text[])`
    })
  }

  async rate(conversationId: string, messageId: string, userId: string, { rating, note }: Rating): Promise<{ model: string } | null> {
    const now = new Date().toISOString()
    const [reply]: { id: string; metadata: string | null }[] = await this.sql`SELECT id, metadata FROM messages WHERE uid = ${messageId} AND conversation_id = ${conversationId} AND role = 'assistant'`
    if (!reply) return null
    const model = modelOf(reply.metadata)
    const assistant = assistantOf(reply.metadata)
    // A reply dropped meanwhile (an edit) leaves nothing to rate: the insert's foreign key says so.
    const written = await this.sql`INSERT INTO message_feedback (message_id, user_id, rating, note, model, assistant_id, assistant_name, created_at, updated_at)
      SELECT id, ${userId}, ${rating}, ${note ?? null}, ${model}, ${assistant?.id ?? null}, ${assistant?.name ?? null}, ${now}, ${now} FROM messages WHERE id = ${reply.id}
      ON CONFLICT (message_id, user_id) DO UPDATE SET rating = EXCLUDED.rating, note = EXCLUDED.note, updated_at = EXCLUDED.updated_at`
    return written.count ? { model } : null
  }

  async ratingsOf(conversationId: string, userId: string): Promise<Record<string, Rating>> {
    const rows: { uid: string; rating: Rating['rating']; note: string | null }[] = await this.sql`SELECT m.uid, f.rating, f.note FROM message_feedback f JOIN messages m ON m.id = f.message_id
      WHERE m.conversation_id = ${conversationId} AND f.user_id = ${userId}`
    return Object.fromEntries(rows.map((row) => [row.uid, { rating: row.rating, note: row.note }]))
  }

  async feedbackByModel(): Promise<FeedbackByModel[]> {
    const rows: { model: string; up: string; down: string }[] = await this.sql`SELECT model, count(*) FILTER (WHERE rating = 'up') AS up, count(*) FILTER (WHERE rating = 'down') AS down
      FROM message_feedback GROUP BY model ORDER BY model`
    return rows.map((row) => ({ model: row.model, up: Number(row.up), down: Number(row.down) }))
  }

  async feedbackByAssistant(): Promise<FeedbackByAssistant[]> {
    const rows: { id: string; name: string; up: string; down: string }[] = await this.sql`SELECT assistant_id AS id, max(assistant_name) AS name,
        count(*) FILTER (WHERE rating = 'up') AS up, count(*) FILTER (WHERE rating = 'down') AS down
      FROM message_feedback WHERE assistant_id IS NOT NULL GROUP BY assistant_id ORDER BY name`
    return rows.map((row) => ({ assistant: { id: row.id, name: row.name }, up: Number(row.up), down: Number(row.down) }))
  }
}

/** Conversations a one-word search finds above which the word counts as common (see newestHolding). */
const COMMON_WORD = 3000

/**
 * What testing one conversation's words costs (reading them from TOAST), in rows of the GIN's hits
 * sorted by activity: ~40 µs against ~1.5 µs, measured at 10,000 conversations of 100 messages.
 */
const WALK_COST = 30

/** A conversation found by a search, with the message that matched (none when only its title did). */
function foundOf(row: ConversationRow, message: Message | undefined, terms: string[]): FoundConversation {
  const conversation = readConversation({ id: row.id, user_id: row.user_id, title: row.title, created_at: row.created_at, updated_at: row.updated_at }, message ? [message] : [])
  return { ...conversation, match: matchExcerpt(conversation, terms) }
}

/** Messages as the columns an unnest() inserts, each with its id (made when not given). */
function columnsOf(messages: NewMessage[]) {
  return {
    ids: messages.map((message) => message.id ?? randomUUID()),
    roles: messages.map((message) => message.role),
    contents: messages.map((message) => toPgText(message.content)),
    tokens: messages.map((message) => message.tokens ?? 0),
    metadata: messages.map((message) => (message.metadata ? JSON.stringify(message.metadata) : null)),
  }
}

/** A conversation's columns with one of its messages' (m_*, null for a conversation without any). */
interface JoinedRow extends ConversationRow {
  revision: string | number
  /** The conversation's first and last message ids (null when it has none), and whether the cached messages sent along are still its messages up to their last id. */
  first_id: string | number | null
  last_id: string | number | null
  known: boolean | null
  m_uid: string | null
  m_role: Message['role'] | null
  m_content: string | null
  m_tokens: number | null
  m_metadata: string | null
  m_created_at: string | null
}
