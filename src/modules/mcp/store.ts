import type { MaybePromise } from '../../db/maybe-promise'

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

/**
 * Where registered MCP servers are kept; the service takes this interface. The SQLite adapter
 * answers at once (`asynchronous: false`), as before; the PostgreSQL adapter with promises, and
 * the service then reads the registry again before answering (another replica may have changed it).
 */
export interface McpServerStore {
  readonly asynchronous: boolean
  all(): MaybePromise<McpServerRecord[]>
  get(name: string): MaybePromise<McpServerRecord | null>
  /** Throws CONFLICT when the name is taken. */
  insert(record: Omit<McpServerRecord, 'createdAt' | 'updatedAt' | 'tools' | 'enabled'>): MaybePromise<McpServerRecord>
  setEnabled(name: string, enabled: boolean): MaybePromise<void>
  setTools(name: string, tools: RemoteTool[]): MaybePromise<void>
  delete(name: string): MaybePromise<boolean>
}

/** A row of `mcp_servers` (JSON columns as text), on either backend. */
export interface McpServerRow {
  name: string
  transport: 'http' | 'stdio'
  url: string | null
  headers: string
  command: string | null
  args: string
  env: string
  enabled: number | boolean
  tools: string
  created_at: string
  updated_at: string
}

export const toRecord = (row: McpServerRow): McpServerRecord => ({
  name: row.name,
  transport: row.transport,
  url: row.url,
  headers: JSON.parse(row.headers),
  command: row.command,
  args: JSON.parse(row.args),
  env: JSON.parse(row.env),
  enabled: row.enabled === 1 || row.enabled === true,
  tools: JSON.parse(row.tools),
  createdAt: row.created_at,
  updatedAt: row.updated_at,
})
