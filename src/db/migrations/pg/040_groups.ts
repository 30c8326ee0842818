import type { PostgresMigration } from '.'

/** Groups and their members, as in SQLite's migration 40 (identifiers and ISO times COLLATE "C"). */
export const groups: PostgresMigration = {
  version: 40,
  name: 'groups',
  sql: `
    CREATE TABLE groups (
      id TEXT COLLATE "C" PRIMARY KEY,
      name TEXT NOT NULL UNIQUE,
      description TEXT NOT NULL DEFAULT '',
      source TEXT NOT NULL DEFAULT 'local' CHECK (source IN ('local', 'oidc', 'ldap')),
      external_id TEXT,
      created_at TEXT COLLATE "C" NOT NULL,
      updated_at TEXT COLLATE "C" NOT NULL
    );
    CREATE INDEX groups_source ON groups(source, external_id);
    CREATE TABLE group_members (
      group_id TEXT COLLATE "C" NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
      user_id TEXT COLLATE "C" NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      added_at TEXT COLLATE "C" NOT NULL,
      PRIMARY KEY (group_id, user_id)
    );
    CREATE INDEX group_members_user ON group_members(user_id);
  `,
}
