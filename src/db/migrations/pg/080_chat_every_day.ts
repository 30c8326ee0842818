import type { PostgresMigration } from '.'

/**
 * Chat for every day (issue 57), as SQLite's migration 080:
 * - every message gets a stable public `uid` (a UUID);
 * - conversations get a `revision`, moved whenever messages are replaced or dropped (an edit, a
 *   regeneration): the replicas' message caches (message-cache.ts) assumed append-only messages
 *   and now confirm a cached run by it as well;
 * - full-text indexes (GIN over to_tsvector('simple', …): no stemming, every language alike, as
 *   SQLite's unicode61 tokenizer) on message contents and conversation titles — expression indexes,
 *   so nothing is stored twice and the table is not rewritten;
 * - replies rated by their readers.
 */
export const chatEveryDay: PostgresMigration = {
  version: 80,
  name: 'chat_every_day',
  sql: `
    ALTER TABLE messages ADD COLUMN uid TEXT COLLATE "C" DEFAULT gen_random_uuid()::text;
    UPDATE messages SET uid = gen_random_uuid()::text WHERE uid IS NULL;
    ALTER TABLE messages ALTER COLUMN uid SET NOT NULL;
    CREATE UNIQUE INDEX messages_uid ON messages(uid);
    ALTER TABLE conversations ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
    CREATE INDEX messages_search ON messages USING gin (to_tsvector('simple', content));
    CREATE INDEX conversations_search ON conversations USING gin (to_tsvector('simple', title));
    CREATE TABLE message_feedback (
      message_id BIGINT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
      user_id TEXT COLLATE "C" NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      rating TEXT NOT NULL CHECK (rating IN ('up', 'down')),
      note TEXT,
      model TEXT NOT NULL,
      assistant_id TEXT,
      assistant_name TEXT,
      created_at TEXT COLLATE "C" NOT NULL,
      updated_at TEXT COLLATE "C" NOT NULL,
      PRIMARY KEY (message_id, user_id)
    );
    CREATE INDEX message_feedback_model ON message_feedback(model);
    CREATE INDEX message_feedback_assistant ON message_feedback(assistant_id) WHERE assistant_id IS NOT NULL;
  `,
}
