import type { McpServerStore } from './store'
import type { SqliteMcpServerStore } from './store.sqlite'

/**
 * Moves the MCP servers a server kept in its SQLite database (before they lived in PostgreSQL) into
 * the shared store: each is copied with its enabled flag and last tool list unless the shared store
 * has that name already (its record wins), then deleted from SQLite. Returns the names moved and
 * those the shared store had.
 */
export async function moveMcpServers(from: SqliteMcpServerStore, to: McpServerStore): Promise<{ moved: string[]; kept: string[] }> {
  const moved: string[] = []
  const kept: string[] = []
  for (const record of from.all()) {
    if (await to.get(record.name)) kept.push(record.name)
    else {
      const { name, transport, url, headers, command, args, env } = record
      await to.insert({ name, transport, url, headers, command, args, env })
      if (!record.enabled) await to.setEnabled(name, false)
      if (record.tools.length) await to.setTools(name, record.tools)
      moved.push(name)
    }
    from.delete(record.name)
  }
  return { moved, kept }
}
