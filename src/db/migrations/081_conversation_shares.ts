import type { Migration } from '.'

/**
 * Shared conversations (issue 57): a conversation's access list, as collections and assistants
 * have theirs (src/modules/access/), with one role: viewer (read, export, rate). Deleted with the
 * conversation.
 */
export const conversationShares: Migration = {
  version: 81,
  name: 'conversation_shares',
  sql: `
    CREATE TABLE conversation_shares (
      conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
      principal_type TEXT NOT NULL CHECK (principal_type IN ('user', 'group', 'everyone')),
      principal_id TEXT NOT NULL DEFAULT '',
      role TEXT NOT NULL CHECK (role = 'viewer'),
      created_at TEXT NOT NULL,
      PRIMARY KEY (conversation_id, principal_type, principal_id)
    );
    CREATE INDEX conversation_shares_principal ON conversation_shares(principal_type, principal_id);
  `,
}
