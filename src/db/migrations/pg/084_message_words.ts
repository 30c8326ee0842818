import type { PostgresMigration } from '.'

/**
 * Conversation search, PostgreSQL only: the messages' words kept by the search, not by each send
 * (issue 57: sending no slower than before search existed). Migration 080's GIN over
 * to_tsvector('simple', content) made every message written parse its text and add its words to
 * the index in the send's own transaction (~0.25 ms of a ~2 ms commit of two messages). The words
 * move to `message_words` (one row per message: its conversation and its tsvector, a GIN index),
 * filled as SQLite's messages_fts is: lazily, by the next search of someone who may read the
 * conversation. Every message written moves its conversation's updatedAt, so the conversation is
 * `words_stale` (migration 082's trigger) and the search that remakes its conversation_words row
 * (store.postgres.ts, refreshWords, with the conversation row locked) also adds its messages
 * missing here. The titles' words likewise: migration 080's GIN over to_tsvector('simple', title)
 * on conversations took a new entry at every message written (moving updatedAt, an indexed
 * column, makes a new row version in every index of the table); they are
 * conversation_words.title_words now, with a GIN index, remade with the row. Messages deleted take their rows with them (a foreign key); a message whose
 * content changed loses its row and marks its conversation stale (none of the server's paths
 * update content today: edits replace messages).
 */
export const messageWords: PostgresMigration = {
  version: 84,
  name: 'message_words',
  sql: `
    CREATE TABLE message_words (
      message_id BIGINT PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
      conversation_id TEXT COLLATE "C" NOT NULL,
      words tsvector NOT NULL
    );
    INSERT INTO message_words (message_id, conversation_id, words) SELECT id, conversation_id, to_tsvector('simple', content) FROM messages;
    CREATE INDEX message_words_search ON message_words USING gin (words);
    CREATE INDEX message_words_conversation ON message_words (conversation_id, message_id);
    DROP INDEX messages_search;
    ALTER TABLE conversation_words ADD COLUMN title_words tsvector;
    UPDATE conversation_words w SET title_words = to_tsvector('simple', c.title) FROM conversations c WHERE c.id = w.conversation_id;
    CREATE INDEX conversation_words_title ON conversation_words USING gin (title_words);
    DROP INDEX conversations_search;
    CREATE FUNCTION message_words_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM message_words WHERE message_id = OLD.id;
        UPDATE conversations SET words_stale = true WHERE id = NEW.conversation_id;
        RETURN NULL;
      END
    $$;
    -- Every write that sets updatedAt marks the conversation stale, the same millisecond again
    -- included (migration 082 compared the values: a message written in the millisecond of the
    -- one before, after a search between them, was left out of the index).
    CREATE OR REPLACE FUNCTION conversation_words_stale() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        NEW.words_stale := true;
        RETURN NEW;
      END
    $$;
    CREATE TRIGGER messages_words_changed AFTER UPDATE OF content ON messages
      FOR EACH ROW WHEN (NEW.content IS DISTINCT FROM OLD.content) EXECUTE FUNCTION message_words_changed();
  `,
}
