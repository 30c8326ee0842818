import type { PostgresMigration } from '.'

/**
 * Secrets every replica on the database must share, by name (`jwt`: the key access tokens are
 * signed with when UAGENT_JWT_SECRET is unset). Written once (INSERT … ON CONFLICT DO NOTHING), then only read.
 */
export const serverSecrets: PostgresMigration = {
  version: 16,
  name: 'server_secrets',
  sql: `
    CREATE TABLE server_secrets (
      name TEXT COLLATE "C" PRIMARY KEY,
      value TEXT NOT NULL,
      created_at TEXT NOT NULL
    );
  `,
}
