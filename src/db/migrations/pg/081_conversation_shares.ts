import type { PostgresMigration } from '.'

/** Shared conversations (issue 57), as SQLite's migration 081. */
export const conversationShares: PostgresMigration = {
  version: 81,
  name: 'conversation_shares',
  sql: `
    CREATE TABLE conversation_shares (
      conversation_id TEXT COLLATE "C" NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
      principal_type TEXT NOT NULL CHECK (principal_type IN ('user', 'group', 'everyone')),
      principal_id TEXT COLLATE "C" NOT NULL DEFAULT '',
      role TEXT NOT NULL CHECK (role = 'viewer'),
      created_at TEXT COLLATE "C" NOT NULL,
      PRIMARY KEY (conversation_id, principal_type, principal_id)
    );
    CREATE INDEX conversation_shares_principal ON conversation_shares(principal_type, principal_id);
  `,
}
