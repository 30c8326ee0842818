import { AppError } from '../../core/errors'
import type { Postgres } from '../../db/postgres'
import type { NewPluginRow, PluginPackage, PluginRow, PluginStore } from './store'

const COLUMNS = 'name, source, package, requested_version, version, enabled, installed_at, updated_at, manifest, package_sha256'

/** The plugin registry in PostgreSQL (UAGENT_DATABASE_URL), with each installed plugin's package (bytea). */
export class PostgresPluginStore implements PluginStore {
  readonly asynchronous = true
  readonly keepsPackages = true

  constructor(private readonly sql: Postgres) {}

  async all(): Promise<PluginRow[]> {
    return [...(await this.sql.unsafe(`SELECT ${COLUMNS} FROM plugins ORDER BY name`))]
  }

  async get(name: string): Promise<PluginRow | null> {
    const rows: PluginRow[] = await this.sql.unsafe(`SELECT ${COLUMNS} FROM plugins WHERE name = $1`, [name])
    return rows[0] ?? null
  }

  async insert(row: NewPluginRow, pkg?: PluginPackage & { manifest: string }): Promise<PluginRow> {
    const now = new Date().toISOString()
    return this.sql.begin(async (tx) => {
      const inserted: PluginRow[] = await tx`
        INSERT INTO plugins (name, source, package, requested_version, version, enabled, installed_at, updated_at, manifest, package_sha256)
        VALUES (${row.name}, ${row.source}, ${row.package}, ${row.requested_version}, ${row.version}, ${row.enabled}, ${now}, ${now}, ${pkg?.manifest ?? null}, ${pkg?.sha256 ?? null})
        ON CONFLICT (name) DO NOTHING
        RETURNING name, source, package, requested_version, version, enabled, installed_at, updated_at, manifest, package_sha256`
      // Another server installed (or an admin disabled a built-in of) that name first.
      if (!inserted[0]) throw new AppError('CONFLICT', `A plugin named ${row.name} is already installed; remove it first to reinstall`)
      if (pkg) await tx`INSERT INTO plugin_packages (name, sha256, bytes) VALUES (${row.name}, ${pkg.sha256}, ${pkg.bytes})`
      return inserted[0]
    })
  }

  async setEnabled(name: string, enabled: boolean, builtin?: { version: string }): Promise<void> {
    const now = new Date().toISOString()
    const flag = enabled ? 1 : 0
    if (builtin) {
      await this.sql`
        INSERT INTO plugins (name, source, package, requested_version, version, enabled, installed_at, updated_at)
        VALUES (${name}, 'builtin', ${name}, ${builtin.version}, ${builtin.version}, ${flag}, ${now}, ${now})
        ON CONFLICT (name) DO UPDATE SET enabled = excluded.enabled, updated_at = excluded.updated_at`
    } else {
      await this.sql`UPDATE plugins SET enabled = ${flag}, updated_at = ${now} WHERE name = ${name}`
    }
  }

  async delete(name: string): Promise<void> {
    // The package goes with its row (ON DELETE CASCADE).
    await this.sql`DELETE FROM plugins WHERE name = ${name}`
  }

  async attachPackage(name: string, pkg: PluginPackage & { manifest: string }): Promise<void> {
    await this.sql.begin(async (tx) => {
      const updated = await tx`
        UPDATE plugins SET manifest = ${pkg.manifest}, package_sha256 = ${pkg.sha256}, updated_at = ${new Date().toISOString()}
        WHERE name = ${name} AND source <> 'builtin' AND package_sha256 IS NULL RETURNING name`
      if (updated.length) await tx`INSERT INTO plugin_packages (name, sha256, bytes) VALUES (${name}, ${pkg.sha256}, ${pkg.bytes})`
    })
  }

  async packageOf(name: string): Promise<PluginPackage | null> {
    const rows: PluginPackage[] = await this.sql`SELECT sha256, bytes FROM plugin_packages WHERE name = ${name}`
    return rows[0] ?? null
  }
}
