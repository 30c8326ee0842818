import type { Migration } from '.'

/**
 * Conversation search at scale, SQLite (issue 57's speed goals): a word's start found in one read.
 *
 * - Every search term matches a word's start ("deploy" finds "deployment"). Without prefix indexes
 *   FTS5 answers `"tasvo"*` by merging the lists of every indexed word starting so (7 ms for a common
 *   word over 10,000 conversations; 70 ms for two letters), against 0.1 ms for one word's list. The
 *   conversations' documents (migration 082) are made again with FTS5 prefix indexes of 1 to 6
 *   characters: a term of up to 6 reads one list; a longer one starts few words. The index is about
 *   twice the size, and remaking a conversation's document (at the first search after it changed)
 *   about twice the work.
 * - Key rows in order of activity per owner: a word most of a user's conversations hold is found in
 *   the first few of them, so its page walks this index newest first, each key tested against the
 *   word's hits, instead of sorting all of them (store.sqlite.ts, searchWord). PostgreSQL's step 083
 *   is the same index on its conversation_words.
 *
 * Made from the tables, as migration 082 made them: the messages stay the one copy of the text.
 */
export const conversationWordsPrefixes: Migration = {
  version: 83,
  name: 'conversation_words_prefixes',
  sql: `
    DROP TABLE conversation_words;
    CREATE VIRTUAL TABLE conversation_words USING fts5(
      words, content='', contentless_delete=1, detail=none, prefix='1 2 3 4 5 6', tokenize='unicode61 remove_diacritics 0'
    );
    INSERT INTO conversation_words(rowid, words)
      SELECT k.n, (SELECT c.title FROM conversations c WHERE c.id = k.conversation_id) || ' ' ||
        COALESCE((SELECT group_concat(m.content, ' ') FROM messages m WHERE m.conversation_id = k.conversation_id), '')
      FROM conversation_search_keys k;
    INSERT INTO conversation_words(conversation_words) VALUES ('optimize');
    UPDATE conversation_search_keys SET stale = 0, user_id = c.user_id, updated_at = c.updated_at
      FROM conversations c WHERE c.id = conversation_search_keys.conversation_id;
    CREATE INDEX conversation_search_keys_newest ON conversation_search_keys(user_id, updated_at DESC, conversation_id DESC);
  `,
}
