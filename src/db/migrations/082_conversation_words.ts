import type { Migration } from '.'

/**
 * Conversation search at scale (issue 57's speed goals).
 *
 * - A conversation-level word index beside migration 080's message-level one: `conversation_words`
 *   (contentless FTS5, detail=none: which words, not where) holds one document per conversation,
 *   keyed by conversation_search_keys.n: the words of its title and all its messages. A one-word search (the
 *   common case) then costs about the number of conversations that hold the word, not the number
 *   of messages (a common word is in ~every conversation, ~5 times each). Each key row also keeps
 *   its conversation's owner and updatedAt as of its document, so a search counts and orders what
 *   it found without reading conversation rows (only the page's).
 * - Both indexes are brought up to date by the next search, not by each message written: sending
 *   a message writes the message and nothing else. `search_progress.messages_through` is the
 *   newest message id in messages_fts (ids only grow: AUTOINCREMENT); a search first adds the
 *   messages after it, marks their conversations' documents stale, and remakes the stale documents
 *   of the conversations the caller may read (store.sqlite.ts), all from the tables. Rarer changes
 *   keep triggers: a message deleted (an edit, a regeneration, a conversation or account deleted)
 *   leaves both indexes at once, a renamed conversation's document goes stale (its updatedAt moved),
 *   and a conversation given to another owner is searched as theirs from then on.
 *
 * The messages stay the one copy of the text: both indexes are made from them, here and whenever
 * they are behind.
 */
export const conversationWords: Migration = {
  version: 82,
  name: 'conversation_words',
  sql: `
    CREATE TABLE search_progress (id INTEGER PRIMARY KEY CHECK (id = 1), messages_through INTEGER NOT NULL);
    INSERT INTO search_progress (id, messages_through) SELECT 1, COALESCE(max(id), 0) FROM messages;
    DROP TRIGGER messages_fts_added;
    DROP TRIGGER messages_fts_removed;
    DROP TRIGGER messages_fts_changed;
    CREATE TRIGGER messages_fts_removed AFTER DELETE ON messages WHEN old.id <= (SELECT messages_through FROM search_progress) BEGIN
      DELETE FROM messages_fts WHERE rowid = old.id;
    END;
    CREATE TRIGGER messages_fts_changed AFTER UPDATE OF content ON messages WHEN old.id <= (SELECT messages_through FROM search_progress) BEGIN
      DELETE FROM messages_fts WHERE rowid = old.id;
      INSERT INTO messages_fts(rowid, content, conversation_id) VALUES (new.id, new.content, new.conversation_id);
    END;

    ALTER TABLE conversation_search_keys ADD COLUMN stale INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE conversation_search_keys ADD COLUMN user_id TEXT;
    ALTER TABLE conversation_search_keys ADD COLUMN updated_at TEXT;
    CREATE INDEX conversation_search_keys_stale ON conversation_search_keys(n) WHERE stale = 1;
    CREATE VIRTUAL TABLE conversation_words USING fts5(
      words, content='', contentless_delete=1, detail=none, tokenize='unicode61 remove_diacritics 0'
    );
    INSERT INTO conversation_words(rowid, words)
      SELECT k.n, (SELECT c.title FROM conversations c WHERE c.id = k.conversation_id) || ' ' ||
        COALESCE((SELECT group_concat(m.content, ' ') FROM messages m WHERE m.conversation_id = k.conversation_id), '')
      FROM conversation_search_keys k;
    UPDATE conversation_search_keys SET stale = 0, user_id = c.user_id, updated_at = c.updated_at
      FROM conversations c WHERE c.id = conversation_search_keys.conversation_id;
    CREATE TRIGGER conversation_words_removed AFTER DELETE ON messages BEGIN
      UPDATE conversation_search_keys SET stale = 1 WHERE conversation_id = old.conversation_id AND stale = 0;
    END;
    CREATE TRIGGER conversation_words_changed AFTER UPDATE OF content ON messages BEGIN
      UPDATE conversation_search_keys SET stale = 1 WHERE conversation_id = new.conversation_id AND stale = 0;
    END;
    CREATE TRIGGER conversation_words_renamed AFTER UPDATE OF title ON conversations BEGIN
      UPDATE conversation_search_keys SET stale = 1 WHERE conversation_id = new.id AND stale = 0;
    END;
    CREATE TRIGGER conversation_words_owner AFTER UPDATE OF user_id ON conversations BEGIN
      UPDATE conversation_search_keys SET user_id = new.user_id, stale = 1 WHERE conversation_id = new.id;
    END;
    CREATE TRIGGER conversation_words_dropped BEFORE DELETE ON conversations BEGIN
      DELETE FROM conversation_words WHERE rowid = (SELECT n FROM conversation_search_keys WHERE conversation_id = old.id);
    END;
  `,
}
