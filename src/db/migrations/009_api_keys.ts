import type { Migration } from '.'

export const apiKeys: Migration = {
  version: 9,
  name: 'api_keys',
  sql: `
    CREATE TABLE api_keys (
      id TEXT PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      name TEXT NOT NULL,
      prefix TEXT NOT NULL,
      key_hash TEXT NOT NULL UNIQUE,
      created_at TEXT NOT NULL,
      last_used_at TEXT,
      expires_at TEXT
    );
    CREATE INDEX api_keys_user ON api_keys(user_id, created_at);
  `,
}
