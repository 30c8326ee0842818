import type { PostgresMigration } from '.'

/**
 * Conversation search: a common word's page read newest first. A word most of a
 * user's conversations hold is found in the first few rows of their conversations in order of
 * activity, so its page walks this index (each row's words tested as it goes) instead of sorting
 * the thousands of rows its GIN entries name (store.postgres.ts, searchWord). SQLite's step
 * 083 is the same index on its key rows, with prefix indexes (083_conversation_words_prefixes.ts).
 */
export const conversationWordsNewest: PostgresMigration = {
  version: 83,
  name: 'conversation_words_newest',
  sql: `CREATE INDEX conversation_words_newest ON conversation_words (user_id, updated_at DESC, conversation_id DESC);`,
}
