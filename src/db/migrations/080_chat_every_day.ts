import type { Migration } from '.'

/**
 * Chat for every day (issue 57):
 * - every message gets a stable public `uid` (a UUID; the integer row id stays internal: a copy to
 *   PostgreSQL or a restore may renumber rows, the uid goes with the row);
 * - full-text indexes over message contents and conversation titles, kept by triggers. Messages:
 *   a contentless FTS5 table (the text is in messages alone) that keeps each message's
 *   conversation id beside its tokens (contentless_unindexed), so a search groups its hits by
 *   conversation without reading a message row; titles: the same, each row keyed by a number of
 *   conversation_search_keys (an INTEGER PRIMARY KEY: a conversation's own rowid may change in a
 *   VACUUM or a backup's VACUUM INTO, which would lose track of its index row). The tables stay
 *   the one copy of the text; both indexes are made from them here and can be made again the same way;
 * - replies rated by their readers (one rating per user and reply).
 * Diacritics are kept (`remove_diacritics 0`) so that SQLite matches the words PostgreSQL's
 * `simple` configuration matches.
 */
export const chatEveryDay: Migration = {
  version: 80,
  name: 'chat_every_day',
  sql: `
    ALTER TABLE messages ADD COLUMN uid TEXT;
    UPDATE messages SET uid = lower(
      hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' ||
      substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)));
    CREATE UNIQUE INDEX messages_uid ON messages(uid);

    CREATE VIRTUAL TABLE messages_fts USING fts5(
      content, conversation_id UNINDEXED,
      content='', contentless_delete=1, contentless_unindexed=1, tokenize='unicode61 remove_diacritics 0'
    );
    INSERT INTO messages_fts(rowid, content, conversation_id) SELECT id, content, conversation_id FROM messages;
    CREATE TRIGGER messages_fts_added AFTER INSERT ON messages BEGIN
      INSERT INTO messages_fts(rowid, content, conversation_id) VALUES (new.id, new.content, new.conversation_id);
    END;
    CREATE TRIGGER messages_fts_removed AFTER DELETE ON messages BEGIN
      DELETE FROM messages_fts WHERE rowid = old.id;
    END;
    CREATE TRIGGER messages_fts_changed AFTER UPDATE OF content ON messages BEGIN
      DELETE FROM messages_fts WHERE rowid = old.id;
      INSERT INTO messages_fts(rowid, content, conversation_id) VALUES (new.id, new.content, new.conversation_id);
    END;

    CREATE TABLE conversation_search_keys (
      n INTEGER PRIMARY KEY AUTOINCREMENT,
      conversation_id TEXT NOT NULL UNIQUE
    );
    CREATE VIRTUAL TABLE conversations_fts USING fts5(
      title, conversation_id UNINDEXED,
      content='', contentless_delete=1, contentless_unindexed=1, tokenize='unicode61 remove_diacritics 0'
    );
    INSERT INTO conversation_search_keys (conversation_id) SELECT id FROM conversations;
    INSERT INTO conversations_fts(rowid, title, conversation_id) SELECT k.n, c.title, c.id FROM conversations c JOIN conversation_search_keys k ON k.conversation_id = c.id;
    CREATE TRIGGER conversations_fts_added AFTER INSERT ON conversations BEGIN
      INSERT INTO conversation_search_keys (conversation_id) VALUES (new.id);
      INSERT INTO conversations_fts(rowid, title, conversation_id) SELECT n, new.title, new.id FROM conversation_search_keys WHERE conversation_id = new.id;
    END;
    CREATE TRIGGER conversations_fts_removed AFTER DELETE ON conversations BEGIN
      DELETE FROM conversations_fts WHERE rowid = (SELECT n FROM conversation_search_keys WHERE conversation_id = old.id);
      DELETE FROM conversation_search_keys WHERE conversation_id = old.id;
    END;
    CREATE TRIGGER conversations_fts_changed AFTER UPDATE OF title ON conversations BEGIN
      DELETE FROM conversations_fts WHERE rowid = (SELECT n FROM conversation_search_keys WHERE conversation_id = old.id);
      INSERT INTO conversations_fts(rowid, title, conversation_id) SELECT n, new.title, new.id FROM conversation_search_keys WHERE conversation_id = new.id;
    END;

    CREATE TABLE message_feedback (
      message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      rating TEXT NOT NULL CHECK (rating IN ('up', 'down')),
      note TEXT,
      model TEXT NOT NULL,
      assistant_id TEXT,
      assistant_name TEXT,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      PRIMARY KEY (message_id, user_id)
    );
    CREATE INDEX message_feedback_model ON message_feedback(model);
    CREATE INDEX message_feedback_assistant ON message_feedback(assistant_id) WHERE assistant_id IS NOT NULL;
  `,
}
