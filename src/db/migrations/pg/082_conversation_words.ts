import type { PostgresMigration } from '.'

/**
 * Conversation search at scale, as SQLite's migration 082: a conversation-level word index beside
 * migration 080's GIN over every message. `conversation_words` holds one row per conversation: the
 * distinct words (lexemes of to_tsvector('simple', …), no positions) of its title and all its messages, its
 * owner and its updatedAt as of that row, with a GIN index. A one-word search then finds each
 * conversation once from that index (no message row read, however many messages hold the word)
 * and counts and orders them from the same rows.
 *
 * Kept up lazily: a conversation whose updatedAt moves (every message written, an edit, a
 * regeneration, a rename) is marked `words_stale` by a BEFORE UPDATE trigger (no extra write);
 * a search first remakes the stale rows of the conversations the caller may read (store.postgres.ts,
 * refreshWords), with the conversation rows locked, from the messages. A conversation given to
 * another owner is searched as theirs at once (a trigger keeps conversation_words.user_id). A conversation whose words
 * would not fit a tsvector (1 MB) keeps `words` null and is searched message by message. (With
 * no message, the title alone: count(*) counts the distinct words, 0 only when there are none.)
 */
export const conversationWords: PostgresMigration = {
  version: 82,
  name: 'conversation_words',
  sql: `
    CREATE FUNCTION conversation_words_of(conversation TEXT) RETURNS tsvector LANGUAGE sql STABLE AS $$
      SELECT CASE WHEN count(*) = 0 THEN ''::tsvector WHEN sum(octet_length(w)) < 900000 THEN array_to_tsvector(array_agg(w)) END
      FROM (
        SELECT u.lexeme AS w FROM messages m, unnest(to_tsvector('simple', m.content)) u WHERE m.conversation_id = conversation
        UNION SELECT u.lexeme FROM conversations c, unnest(to_tsvector('simple', c.title)) u WHERE c.id = conversation
      ) d
    $$;
    COMMENT ON FUNCTION conversation_words_of(TEXT) IS 'A conversation''s words for conversation_words: the lexemes of its title and messages (null past 900,000 bytes of them)';
    CREATE TABLE conversation_words (
      conversation_id TEXT COLLATE "C" PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
      user_id TEXT COLLATE "C" NOT NULL,
      updated_at TEXT COLLATE "C" NOT NULL,
      words tsvector
    );
    CREATE INDEX conversation_words_search ON conversation_words USING gin (words);
    CREATE INDEX conversation_words_unindexed ON conversation_words (conversation_id) WHERE words IS NULL;
    INSERT INTO conversation_words (conversation_id, user_id, updated_at, words)
      SELECT id, user_id, updated_at, conversation_words_of(id) FROM conversations;
    ALTER TABLE conversations ADD COLUMN words_stale BOOLEAN NOT NULL DEFAULT false;
    ALTER TABLE conversations ALTER COLUMN words_stale SET DEFAULT true;
    CREATE INDEX conversations_words_stale ON conversations (user_id) WHERE words_stale;
    CREATE FUNCTION conversation_words_stale() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.updated_at IS DISTINCT FROM OLD.updated_at THEN NEW.words_stale := true; END IF;
        RETURN NEW;
      END
    $$;
    CREATE TRIGGER conversations_words_stale BEFORE UPDATE OF updated_at ON conversations
      FOR EACH ROW EXECUTE FUNCTION conversation_words_stale();
    CREATE FUNCTION conversation_words_owner() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE conversation_words SET user_id = NEW.user_id WHERE conversation_id = NEW.id;
        RETURN NULL;
      END
    $$;
    CREATE TRIGGER conversations_words_owner AFTER UPDATE OF user_id ON conversations
      FOR EACH ROW WHEN (NEW.user_id IS DISTINCT FROM OLD.user_id) EXECUTE FUNCTION conversation_words_owner();
  `,
}
