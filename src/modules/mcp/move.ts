import { moveByName } from '../../db/move-by-name'
import type { McpServerStore } from './store'
import type { SqliteMcpServerStore } from './store.sqlite'

/**
 * Moves the MCP servers a server kept in its SQLite database (before they lived in PostgreSQL) into
 * the shared store (see moveByName), each with its enabled flag and last tool list.
 */
export function moveMcpServers(from: SqliteMcpServerStore, to: McpServerStore): Promise<{ moved: string[]; kept: string[] }> {
  return moveByName(from.all(), {
    exists: (name) => Promise.resolve(to.get(name)),
    copy: async (record) => {
      const { name, transport, url, headers, command, args, env } = record
      await to.insert({ name, transport, url, headers, command, args, env })
      if (!record.enabled) await to.setEnabled(name, false)
      if (record.tools.length) await to.setTools(name, record.tools)
    },
    remove: (name) => from.delete(name),
  })
}
