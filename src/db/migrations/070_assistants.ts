import type { Migration } from '.'

/**
 * Assistants (issue 55): named presets of instructions, collections, tools, model and
 * temperature, owned by a user and shared through an access list exactly as collections are
 * (assistant_shares, as rag_collection_shares). `id` is a UUID that never leaves with another
 * assistant; `collections` holds the collections' public ids (JSON), so a renamed or re-shared
 * collection stays the same collection.
 */
export const assistants: Migration = {
  version: 70,
  name: 'assistants',
  sql: `
    CREATE TABLE assistants (
      id TEXT PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      name TEXT NOT NULL,
      description TEXT NOT NULL DEFAULT '',
      instructions TEXT NOT NULL DEFAULT '',
      collections TEXT NOT NULL DEFAULT '[]',
      tools TEXT NOT NULL DEFAULT '[]',
      model TEXT,
      temperature REAL,
      starters TEXT NOT NULL DEFAULT '[]',
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      UNIQUE (user_id, name)
    );
    CREATE INDEX assistants_name ON assistants(name);
    CREATE TABLE assistant_shares (
      assistant_id TEXT NOT NULL REFERENCES assistants(id) ON DELETE CASCADE,
      principal_type TEXT NOT NULL CHECK (principal_type IN ('user', 'group', 'everyone')),
      principal_id TEXT NOT NULL DEFAULT '',
      role TEXT NOT NULL CHECK (role IN ('viewer', 'editor', 'manager')),
      created_at TEXT NOT NULL,
      PRIMARY KEY (assistant_id, principal_type, principal_id)
    );
    CREATE INDEX assistant_shares_principal ON assistant_shares(principal_type, principal_id);
  `,
}
