import type { PostgresMigration } from '.'

/**
 * Each user's number of conversations, kept by triggers on conversations (PostgreSQL only: the
 * SQLite store counts its rows in-process). A page of conversations carries the owner's total; a
 * count(*) over a user's conversations read every one of them, and under a chat load the
 * conversations table changes at each message (updatedAt moves, so each change adds an index
 * entry until vacuum), which made that count most of a page's cost (1.1 of 1.8 ms at ~900
 * conversations in `bench team-load`). Statement triggers with transition tables: a bulk insert (a
 * SQLite copy) or a bulk delete (an account deleted) updates each user's row once; a conversation
 * given to another user (nothing does that today) moves its count, row by row. No row is
 * kept for a user without conversations ever made; deleting the user deletes theirs.
 */
export const conversationCounts: PostgresMigration = {
  version: 45,
  name: 'conversation_counts',
  sql: `
    CREATE TABLE conversation_counts (
      user_id TEXT COLLATE "C" PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
      n BIGINT NOT NULL
    );
    INSERT INTO conversation_counts (user_id, n)
      SELECT user_id, count(*) FROM conversations WHERE user_id IN (SELECT id FROM users) GROUP BY user_id;
    CREATE FUNCTION conversation_counts_added() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO conversation_counts (user_id, n)
        SELECT user_id, count(*) FROM added WHERE user_id IN (SELECT id FROM users) GROUP BY user_id
        ON CONFLICT (user_id) DO UPDATE SET n = conversation_counts.n + EXCLUDED.n;
      RETURN NULL;
    END $$;
    CREATE FUNCTION conversation_counts_removed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE conversation_counts c SET n = c.n - g.n
        FROM (SELECT user_id, count(*) AS n FROM removed GROUP BY user_id) g WHERE c.user_id = g.user_id;
      RETURN NULL;
    END $$;
    CREATE FUNCTION conversation_counts_moved() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE conversation_counts SET n = n - 1 WHERE user_id = OLD.user_id;
      INSERT INTO conversation_counts (user_id, n) SELECT NEW.user_id, 1 WHERE NEW.user_id IN (SELECT id FROM users)
        ON CONFLICT (user_id) DO UPDATE SET n = conversation_counts.n + 1;
      RETURN NULL;
    END $$;
    CREATE TRIGGER conversations_counted_in AFTER INSERT ON conversations
      REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION conversation_counts_added();
    CREATE TRIGGER conversations_counted_out AFTER DELETE ON conversations
      REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION conversation_counts_removed();
    CREATE TRIGGER conversations_counted_moved AFTER UPDATE OF user_id ON conversations
      FOR EACH ROW WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id) EXECUTE FUNCTION conversation_counts_moved();
  `,
}
