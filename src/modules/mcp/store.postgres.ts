import { AppError } from '../../core/errors'
import type { Postgres } from '../../db/postgres'
import { type McpServerRecord, type McpServerRow, type McpServerStore, type RemoteTool, toRecord } from './store'

/** Registered MCP servers in PostgreSQL (UAGENT_DATABASE_URL), shared by every server on the database. */
export class PostgresMcpServerStore implements McpServerStore {
  readonly asynchronous = true

  constructor(private readonly sql: Postgres) {}

  async all(): Promise<McpServerRecord[]> {
    const rows: McpServerRow[] = await this.sql`SELECT * FROM mcp_servers ORDER BY name`
    return rows.map(toRecord)
  }

  async get(name: string): Promise<McpServerRecord | null> {
    const rows: McpServerRow[] = await this.sql`SELECT * FROM mcp_servers WHERE name = ${name}`
    return rows[0] ? toRecord(rows[0]) : null
  }

  async insert(record: Omit<McpServerRecord, 'createdAt' | 'updatedAt' | 'tools' | 'enabled'>): Promise<McpServerRecord> {
    const now = new Date().toISOString()
    const rows: McpServerRow[] = await this.sql`
      INSERT INTO mcp_servers (name, transport, url, headers, command, args, env, enabled, tools, created_at, updated_at)
      VALUES (${record.name}, ${record.transport}, ${record.url}, ${JSON.stringify(record.headers)}, ${record.command}, ${JSON.stringify(record.args)},
        ${JSON.stringify(record.env)}, true, '[]', ${now}, ${now})
      ON CONFLICT (name) DO NOTHING
      RETURNING *`
    // Another server registered the name first.
    if (!rows[0]) throw new AppError('CONFLICT', `An MCP server named ${record.name} is already registered`)
    return toRecord(rows[0])
  }

  async setEnabled(name: string, enabled: boolean): Promise<void> {
    await this.sql`UPDATE mcp_servers SET enabled = ${enabled}, updated_at = ${new Date().toISOString()} WHERE name = ${name}`
  }

  async setTools(name: string, tools: RemoteTool[]): Promise<void> {
    await this.sql`UPDATE mcp_servers SET tools = ${JSON.stringify(tools)}, updated_at = ${new Date().toISOString()} WHERE name = ${name}`
  }

  async delete(name: string): Promise<boolean> {
    const rows = await this.sql`DELETE FROM mcp_servers WHERE name = ${name} RETURNING name`
    return rows.length > 0
  }
}
