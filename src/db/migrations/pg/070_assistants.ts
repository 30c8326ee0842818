import type { PostgresMigration } from '.'

// Assistants, as SQLite's migration 70: the presets and their access list (as rag_collection_shares).
export const assistants: PostgresMigration = {
  version: 70,
  name: 'assistants',
  sql: `
    CREATE TABLE assistants (
      id TEXT COLLATE "C" PRIMARY KEY,
      user_id TEXT COLLATE "C" NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      name TEXT COLLATE "C" NOT NULL,
      description TEXT NOT NULL DEFAULT '',
      instructions TEXT NOT NULL DEFAULT '',
      collections TEXT NOT NULL DEFAULT '[]',
      tools TEXT NOT NULL DEFAULT '[]',
      model TEXT,
      temperature DOUBLE PRECISION,
      starters TEXT NOT NULL DEFAULT '[]',
      created_at TEXT COLLATE "C" NOT NULL,
      updated_at TEXT COLLATE "C" NOT NULL,
      UNIQUE (user_id, name)
    );
    CREATE INDEX assistants_name ON assistants(name);
    CREATE TABLE assistant_shares (
      assistant_id TEXT COLLATE "C" NOT NULL REFERENCES assistants(id) ON DELETE CASCADE,
      principal_type TEXT COLLATE "C" NOT NULL CHECK (principal_type IN ('user', 'group', 'everyone')),
      principal_id TEXT COLLATE "C" NOT NULL DEFAULT '',
      role TEXT COLLATE "C" NOT NULL CHECK (role IN ('viewer', 'editor', 'manager')),
      created_at TEXT COLLATE "C" NOT NULL,
      PRIMARY KEY (assistant_id, principal_type, principal_id)
    );
    CREATE INDEX assistant_shares_principal ON assistant_shares(principal_type, principal_id);
  `,
}
