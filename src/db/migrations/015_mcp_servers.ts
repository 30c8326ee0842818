import type { Migration } from '.'

/**
 * MCP servers an admin registered: reached over Streamable HTTP (`url`, `headers`) or started as a
 * process speaking stdio (`command`, `args`, `env`). `tools` keeps the tool list last seen, so the
 * toolbox knows a stdio server's tools without starting it at boot.
 */
export const mcpServers: Migration = {
  version: 15,
  name: 'mcp_servers',
  sql: `
    CREATE TABLE mcp_servers (
      name TEXT PRIMARY KEY,
      transport TEXT NOT NULL CHECK (transport IN ('http', 'stdio')),
      url TEXT,
      headers TEXT NOT NULL DEFAULT '{}',
      command TEXT,
      args TEXT NOT NULL DEFAULT '[]',
      env TEXT NOT NULL DEFAULT '{}',
      enabled INTEGER NOT NULL DEFAULT 1,
      tools TEXT NOT NULL DEFAULT '[]',
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    );
  `,
}
