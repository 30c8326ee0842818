import type { Migration } from '.'

/**
 * Plugin state. Installed plugins have a row from install to removal (their files live in
 * `<pluginsDir>/<name>/`); a built-in plugin gets a row only once an admin disables it.
 */
export const plugins: Migration = {
  version: 11,
  name: 'plugins',
  sql: `
    CREATE TABLE plugins (
      name TEXT PRIMARY KEY,
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
