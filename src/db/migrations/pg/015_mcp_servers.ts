import type { PostgresMigration } from '.'

/** The registered MCP servers, as in SQLite (JSON columns kept as text). */
export const mcpServers: PostgresMigration = {
  version: 15,
  name: 'mcp_servers',
  sql: `
    CREATE TABLE mcp_servers (
      name TEXT COLLATE "C" PRIMARY KEY,
      transport TEXT NOT NULL CHECK (transport IN ('http', 'stdio')),
      url TEXT,
      headers TEXT NOT NULL DEFAULT '{}',
      command TEXT,
      args TEXT NOT NULL DEFAULT '[]',
      env TEXT NOT NULL DEFAULT '{}',
      enabled BOOLEAN NOT NULL DEFAULT true,
      tools TEXT NOT NULL DEFAULT '[]',
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    );
  `,
}
