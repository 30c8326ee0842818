import type { PostgresMigration } from '.'

/**
 * Installed plugins' files, so that every server on the database can run them: each plugin's folder
 * (with its dependencies) as one .tgz, and its plugin.json. A server unpacks a package into its own
 * plugins dir when the plugin is first run there, and again when package_sha256 changes.
 */
export const pluginPackages: PostgresMigration = {
  version: 24,
  name: 'plugin_packages',
  sql: `
    ALTER TABLE plugins ADD COLUMN manifest TEXT, ADD COLUMN package_sha256 TEXT;
    CREATE TABLE plugin_packages (
      name TEXT COLLATE "C" PRIMARY KEY REFERENCES plugins(name) ON DELETE CASCADE,
      sha256 TEXT NOT NULL,
      bytes BYTEA NOT NULL
    );
  `,
}
