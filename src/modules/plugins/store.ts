import type { MaybePromise } from '../../db/maybe-promise'

export type PluginSource = 'builtin' | 'npm' | 'git' | 'url'

export interface PluginRow {
  name: string
  source: PluginSource
  package: string
  requested_version: string
  version: string
  enabled: number
  installed_at: string
  updated_at: string
  /** A store that keeps packages: the installed plugin.json, and the SHA-256 of its package (null for a built-in's row). */
  manifest?: string | null
  package_sha256?: string | null
}

/** An installed plugin's files as one .tgz (what packTgz made of its folder), and the archive's SHA-256 (hex). */
export interface PluginPackage {
  sha256: string
  bytes: Uint8Array
}

export type NewPluginRow = Omit<PluginRow, 'installed_at' | 'updated_at' | 'manifest' | 'package_sha256'>

/**
 * The plugin registry: installed plugins, and the enabled flag of built-ins an admin changed. The
 * SQLite adapter answers at once (`asynchronous: false`), as before, and the files of installed
 * plugins are only the folders in the plugins dir. The PostgreSQL adapter answers with promises and
 * keeps each installed plugin's files too (`keepsPackages`), so that every server sharing the
 * database can unpack and run it.
 */
export interface PluginStore {
  readonly asynchronous: boolean
  readonly keepsPackages: boolean
  /** Every row, by name (without the packages' bytes). */
  all(): MaybePromise<PluginRow[]>
  get(name: string): MaybePromise<PluginRow | null>
  /** Records an installed plugin (with its package and manifest when the store keeps packages); CONFLICT when the name is taken. */
  insert(row: NewPluginRow, pkg?: PluginPackage & { manifest: string }): MaybePromise<PluginRow>
  /** Sets the enabled flag; a built-in without a row gets one. */
  setEnabled(name: string, enabled: boolean, builtin?: { version: string }): MaybePromise<void>
  delete(name: string): MaybePromise<void>
  /** The package of an installed plugin (null: not kept, or removed). */
  packageOf(name: string): MaybePromise<PluginPackage | null>
  /**
   * Gives an installed plugin recorded without a package (copied from a SQLite server) the package
   * of its folder; a plugin that has one keeps it. Nothing to do for a store that keeps no packages.
   */
  attachPackage(name: string, pkg: PluginPackage & { manifest: string }): MaybePromise<void>
}
