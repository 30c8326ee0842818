import type { Database } from 'bun:sqlite'
import { type McpServerRecord, type McpServerRow, type McpServerStore, type RemoteTool, toRecord } from './store'

/** The `mcp_servers` table (bun:sqlite). */
export class SqliteMcpServerStore implements McpServerStore {
  readonly asynchronous = false

  constructor(private readonly db: Database) {}

  all(): McpServerRecord[] {
    return this.db.query<McpServerRow, []>('SELECT * FROM mcp_servers ORDER BY name').all().map(toRecord)
  }

  get(name: string): McpServerRecord | null {
    const row = this.db.query<McpServerRow, [string]>('SELECT * FROM mcp_servers WHERE name = ?').get(name)
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
