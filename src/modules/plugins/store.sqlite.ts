import type { Database } from 'bun:sqlite'
import type { NewPluginRow, PluginRow, PluginStore } from './store'

/** The `plugins` table (bun:sqlite); installed plugins' files are their folders in the plugins dir. */
export class SqlitePluginStore implements PluginStore {
  readonly asynchronous = false
  readonly keepsPackages = false

  constructor(private readonly db: Database) {}

  all(): PluginRow[] {
    return this.db.query<PluginRow, []>('SELECT * FROM plugins ORDER BY name').all()
  }

  get(name: string): PluginRow | null {
    return this.db.query<PluginRow, [string]>('SELECT * FROM plugins WHERE name = ?').get(name)
  }

  insert(row: NewPluginRow): PluginRow {
    const now = new Date().toISOString()
    this.db
      .query('INSERT INTO plugins (name, source, package, requested_version, version, enabled, installed_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
      .run(row.name, row.source, row.package, row.requested_version, row.version, row.enabled, now, now)
    return this.get(row.name)!
  }

  setEnabled(name: string, enabled: boolean, builtin?: { version: string }): void {
    const now = new Date().toISOString()
    if (builtin) {
      this.db
        .query(
          `INSERT INTO plugins (name, source, package, requested_version, version, enabled, installed_at, updated_at)
           VALUES (?, 'builtin', ?, ?, ?, ?, ?, ?)
           ON CONFLICT (name) DO UPDATE SET enabled = excluded.enabled, updated_at = excluded.updated_at`,
        )
        .run(name, name, builtin.version, builtin.version, enabled ? 1 : 0, now, now)
    } else {
      this.db.query('UPDATE plugins SET enabled = ?, updated_at = ? WHERE name = ?').run(enabled ? 1 : 0, now, name)
    }
  }

  delete(name: string): void {
    this.db.query('DELETE FROM plugins WHERE name = ?').run(name)
  }

  packageOf(): null {
    return null
  }

  /** The folder is the package. */
  attachPackage(): void {}
}
