import type { PostgresMigration } from '.'

/** Plugin state, as in SQLite: installed plugins, and the enabled flag of built-ins an admin changed. */
export const plugins: PostgresMigration = {
  version: 11,
  name: 'plugins',
  sql: `
    CREATE TABLE plugins (
      name TEXT COLLATE "C" PRIMARY KEY,
      source TEXT NOT NULL CHECK (source IN ('builtin', 'npm', 'git', 'url')),
      package TEXT NOT NULL,
      requested_version TEXT NOT NULL,
      version TEXT NOT NULL,
      enabled INTEGER NOT NULL DEFAULT 1,
      installed_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    );
  `,
}
