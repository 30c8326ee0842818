import type { PluginStore } from './store'
import type { SqlitePluginStore } from './store.sqlite'

/**
 * Moves the plugin registry a server kept in its SQLite database (before plugins lived in
 * PostgreSQL) into the shared store: each row is copied unless the shared store has that name
 * already (its row wins), then deleted from SQLite, so that a later removal is not undone at the
 * next start. The plugins' folders stay where they are; their packages are stored from them next
 * (PluginService.storeLocalPackages). Returns the names moved and those the shared store had.
 */
export async function movePluginRegistry(from: SqlitePluginStore, to: PluginStore): Promise<{ moved: string[]; kept: string[] }> {
  const moved: string[] = []
  const kept: string[] = []
  for (const row of from.all()) {
    if (await to.get(row.name)) kept.push(row.name)
    else {
      if (row.source === 'builtin') await to.setEnabled(row.name, row.enabled === 1, { version: row.version })
      else await to.insert({ name: row.name, source: row.source, package: row.package, requested_version: row.requested_version, version: row.version, enabled: row.enabled })
      moved.push(row.name)
    }
    from.delete(row.name)
  }
  return { moved, kept }
}
