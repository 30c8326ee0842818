import type { PostgresMigration } from '.'

// Identifiers and ISO times sort byte by byte, as in SQLite (COLLATE "C"). user_id got its foreign
// key to users (ON DELETE CASCADE) in migration 017, once the accounts had moved to PostgreSQL.
export const conversations: PostgresMigration = {
  version: 2,
  name: 'conversations',
  sql: `
    CREATE TABLE conversations (
      id TEXT COLLATE "C" PRIMARY KEY,
      user_id TEXT COLLATE "C" NOT NULL,
      title TEXT NOT NULL,
      created_at TEXT COLLATE "C" NOT NULL,
      updated_at TEXT COLLATE "C" NOT NULL
    );
    CREATE INDEX conversations_user_updated ON conversations(user_id, updated_at DESC, id);
    CREATE TABLE messages (
      id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      conversation_id TEXT COLLATE "C" NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
      role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system')),
      content TEXT NOT NULL,
      tokens INTEGER NOT NULL DEFAULT 0,
      metadata TEXT,
      created_at TEXT NOT NULL
    );
    CREATE INDEX messages_conversation ON messages(conversation_id, id);
  `,
}
