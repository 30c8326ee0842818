import type { Database } from 'bun:sqlite'

/** A tool of a registered MCP server as last listed by it. */
export interface RemoteTool {
  name: string
  description: string
  inputSchema: Record<string, unknown>
}

/** One registered MCP server, as stored. */
export interface McpServerRecord {
  name: string
  transport: 'http' | 'stdio'
  url: string | null
  headers: Record<string, string>
  command: string | null
  args: string[]
  env: Record<string, string>
  enabled: boolean
  tools: RemoteTool[]
  createdAt: string
  updatedAt: string
}

/** Where registered MCP servers are kept; the service takes this interface. */
export interface McpServerStore {
  all(): McpServerRecord[]
  get(name: string): McpServerRecord | null
  insert(record: Omit<McpServerRecord, 'createdAt' | 'updatedAt' | 'tools' | 'enabled'>): McpServerRecord
  setEnabled(name: string, enabled: boolean): void
  setTools(name: string, tools: RemoteTool[]): void
  delete(name: string): boolean
}

interface Row {
  name: string
  transport: 'http' | 'stdio'
  url: string | null
  headers: string
  command: string | null
  args: string
  env: string
  enabled: number
  tools: string
  created_at: string
  updated_at: string
}

const toRecord = (row: Row): McpServerRecord => ({
  name: row.name,
  transport: row.transport,
  url: row.url,
  headers: JSON.parse(row.headers),
  command: row.command,
  args: JSON.parse(row.args),
  env: JSON.parse(row.env),
  enabled: row.enabled === 1,
  tools: JSON.parse(row.tools),
  createdAt: row.created_at,
  updatedAt: row.updated_at,
})

/** The `mcp_servers` table (bun:sqlite). */
export class SqliteMcpServerStore implements McpServerStore {
  constructor(private readonly db: Database) {}

  all(): McpServerRecord[] {
    return this.db.query<Row, []>('SELECT * FROM mcp_servers ORDER BY name').all().map(toRecord)
  }

  get(name: string): McpServerRecord | null {
    const row = this.db.query<Row, [string]>('SELECT * FROM mcp_servers WHERE name = ?').get(name)
    return row ? toRecord(row) : null
  }

  insert(record: Omit<McpServerRecord, 'createdAt' | 'updatedAt' | 'tools' | 'enabled'>): McpServerRecord {
    const now = new Date().toISOString()
    this.db
      .query('INSERT INTO mcp_servers (name, transport, url, headers, command, args, env, enabled, tools, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)')
      .run(record.name, record.transport, record.url, JSON.stringify(record.headers), record.command, JSON.stringify(record.args), JSON.stringify(record.env), '[]', now, now)
    return this.get(record.name)!
  }

  setEnabled(name: string, enabled: boolean): void {
    this.db.query('UPDATE mcp_servers SET enabled = ?, updated_at = ? WHERE name = ?').run(enabled ? 1 : 0, new Date().toISOString(), name)
  }

  setTools(name: string, tools: RemoteTool[]): void {
    this.db.query('UPDATE mcp_servers SET tools = ?, updated_at = ? WHERE name = ?').run(JSON.stringify(tools), new Date().toISOString(), name)
  }

  delete(name: string): boolean {
    return this.db.query('DELETE FROM mcp_servers WHERE name = ?').run(name).changes > 0
  }
}
