import type { PostgresMigration } from '.'

// `seq` orders keys made in the same millisecond as SQLite's rowid does. user_id got its foreign
// key to users (ON DELETE CASCADE) in migration 017.
export const apiKeys: PostgresMigration = {
  version: 9,
  name: 'api_keys',
  sql: `
    CREATE TABLE api_keys (
      seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
      id TEXT COLLATE "C" PRIMARY KEY,
      user_id TEXT COLLATE "C" NOT NULL,
      name TEXT NOT NULL,
      prefix TEXT NOT NULL,
      key_hash TEXT COLLATE "C" NOT NULL UNIQUE,
      created_at TEXT COLLATE "C" NOT NULL,
      last_used_at TEXT,
      expires_at TEXT
    );
    CREATE INDEX api_keys_user ON api_keys(user_id, created_at);
  `,
}
