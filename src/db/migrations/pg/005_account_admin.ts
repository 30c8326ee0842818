import type { PostgresMigration } from '.'

/** Accounts an admin has disabled: they cannot log in, and their sessions are revoked. */
export const accountAdmin: PostgresMigration = {
  version: 5,
  name: 'account_admin',
  sql: `
    ALTER TABLE users ADD COLUMN disabled_at TEXT;
  `,
}
