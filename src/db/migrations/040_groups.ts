import type { Migration } from '.'

/**
 * Groups of users (issue 44): managed by admins (`source` 'local') or kept in step with a single
 * sign-on provider ('oidc', 'ldap'; `external_id` is the provider's group name or DN). Collection
 * shares name a group by id; `group_members_user` answers "which groups is this user in" on every
 * collection access check.
 */
export const groups: Migration = {
  version: 40,
  name: 'groups',
  sql: `
    CREATE TABLE groups (
      id TEXT PRIMARY KEY,
      name TEXT NOT NULL UNIQUE,
      description TEXT NOT NULL DEFAULT '',
      source TEXT NOT NULL DEFAULT 'local' CHECK (source IN ('local', 'oidc', 'ldap')),
      external_id TEXT,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    );
    CREATE INDEX groups_source ON groups(source, external_id);
    CREATE TABLE group_members (
      group_id TEXT NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      added_at TEXT NOT NULL,
      PRIMARY KEY (group_id, user_id)
    );
    CREATE INDEX group_members_user ON group_members(user_id);
  `,
}
