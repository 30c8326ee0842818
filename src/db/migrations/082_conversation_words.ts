import type { Migration } from '.'

/**
 * Conversation search at scale (issue 57's speed goals): a conversation-level word index beside
 * migration 080's message-level one. `conversation_words` (contentless FTS5, detail=none: which
 * words, not where) holds one document per conversation, keyed by conversation_search_keys.n: the
 * words of all its messages. A one-word search (the common case) then costs about the number of
 * conversations that hold the word, not the number of messages (a common word is in ~every
 * conversation, ~5 times each): no hit is grouped by conversation, no message row is read.
 *
 * Each key row also keeps its conversation's owner and updatedAt as of its document, so that a
 * search counts and orders the conversations it found without reading their rows (only the page's).
 *
 * Kept up lazily: writing a message, or moving a conversation's updatedAt, marks its document
 * stale (triggers, one small row write per exchange: `stale` on conversation_search_keys); a search first remakes the stale
 * documents of the conversations the caller may read (store.sqlite.ts, refreshWords), from the
 * messages, with the same tokenizer. So sending a message costs no index work beyond migration
 * 080's, and every search sees every message stored before it. The messages stay the one copy of
 * the text: the documents are made from them here, and again whenever they are stale.
 */
export const conversationWords: Migration = {
  version: 82,
  name: 'conversation_words',
  sql: `
    ALTER TABLE conversation_search_keys ADD COLUMN stale INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE conversation_search_keys ADD COLUMN user_id TEXT;
    ALTER TABLE conversation_search_keys ADD COLUMN updated_at TEXT;
    CREATE INDEX conversation_search_keys_stale ON conversation_search_keys(n) WHERE stale = 1;
    CREATE VIRTUAL TABLE conversation_words USING fts5(
      words, content='', contentless_delete=1, detail=none, tokenize='unicode61 remove_diacritics 0'
    );
    INSERT INTO conversation_words(rowid, words)
      SELECT k.n, (SELECT group_concat(m.content, ' ') FROM messages m WHERE m.conversation_id = k.conversation_id) FROM conversation_search_keys k;
    UPDATE conversation_search_keys SET stale = 0,
      user_id = (SELECT c.user_id FROM conversations c WHERE c.id = conversation_search_keys.conversation_id),
      updated_at = (SELECT c.updated_at FROM conversations c WHERE c.id = conversation_search_keys.conversation_id);
    CREATE TRIGGER conversation_words_added AFTER INSERT ON messages BEGIN
      UPDATE conversation_search_keys SET stale = 1 WHERE conversation_id = new.conversation_id AND stale = 0;
    END;
    CREATE TRIGGER conversation_words_removed AFTER DELETE ON messages BEGIN
      UPDATE conversation_search_keys SET stale = 1 WHERE conversation_id = old.conversation_id AND stale = 0;
    END;
    CREATE TRIGGER conversation_words_changed AFTER UPDATE OF content ON messages BEGIN
      UPDATE conversation_search_keys SET stale = 1 WHERE conversation_id = new.conversation_id AND stale = 0;
    END;
    CREATE TRIGGER conversation_words_moved AFTER UPDATE OF updated_at ON conversations BEGIN
      UPDATE conversation_search_keys SET stale = 1 WHERE conversation_id = new.id AND stale = 0;
    END;
    CREATE TRIGGER conversation_words_dropped BEFORE DELETE ON conversations BEGIN
      DELETE FROM conversation_words WHERE rowid = (SELECT n FROM conversation_search_keys WHERE conversation_id = old.id);
    END;
  `,
}
