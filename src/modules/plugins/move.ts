import { moveByName } from '../../db/move-by-name'
import type { PluginStore } from './store'
import type { SqlitePluginStore } from './store.sqlite'

/**
 * Moves the plugin registry a server kept in its SQLite database (before plugins lived in
 * PostgreSQL) into the shared store (see moveByName). The plugins' folders stay where they are;
 * their packages are stored from them next (PluginService.storeLocalPackages).
 */
export function movePluginRegistry(from: SqlitePluginStore, to: PluginStore): Promise<{ moved: string[]; kept: string[] }> {
  return moveByName(from.all(), {
    exists: (name) => Promise.resolve(to.get(name)),
    copy: async (row) => {
      if (row.source === 'builtin') await to.setEnabled(row.name, row.enabled === 1, { version: row.version })
      else await to.insert({ name: row.name, source: row.source, package: row.package, requested_version: row.requested_version, version: row.version, enabled: row.enabled })
    },
    remove: (name) => from.delete(name),
  })
}
