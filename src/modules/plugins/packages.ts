import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { AppError } from '../../core/errors'
import { STAGING_PREFIX } from './install'
import type { NewPluginRow, PluginRow, PluginStore } from './store'
import { extractTgz, packTgz } from './tar'

/** An installed plugin as far as its files go: its row, its folder here, and the package that folder holds. */
export interface UnpackedPlugin {
  row: PluginRow
  dir: string
  /** The SHA-256 of the package this server's folder holds (null: not unpacked here yet). */
  unpacked: string | null
}

const sha256Of = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

/**
 * The packages of a store that keeps them (PostgreSQL): an install packs the plugin's folder into
 * the store; any server unpacks it into its own plugins dir when the plugin first runs there, and
 * again when its SHA-256 changed (removed and installed again elsewhere). A marker beside each
 * folder (`.<name>.sha256`; plugin names never start with ".") says which package it holds, so a
 * restarted server does not unpack again.
 */
export class PluginPackages {
  /** The unpacking under way per plugin: one at a time, and two calls unpack once. */
  private readonly unpacking = new Map<string, Promise<void>>()

  constructor(
    private readonly store: PluginStore,
    private readonly pluginsDir: string,
    /** Called before anything is written into the plugins dir. */
    private readonly beforeWrite: () => void = () => {},
  ) {}

  private markerOf(name: string): string {
    return join(this.pluginsDir, `.${name}.sha256`)
  }

  /** Packs the folder an install put in place and records the plugin with it. */
  async record(row: NewPluginRow): Promise<PluginRow> {
    const dir = join(this.pluginsDir, row.name)
    this.forget(row.name)
    const bytes = packTgz(dir)
    const sha256 = sha256Of(bytes)
    const stored = await this.store.insert(row, { sha256, bytes, manifest: readFileSync(join(dir, 'plugin.json'), 'utf8') })
    writeFileSync(this.markerOf(row.name), sha256)
    return stored
  }

  /**
   * A plugin recorded without a package (copied from a SQLite server's database) whose folder this
   * server has: packs the folder and stores it, so that every server can run it. False when there is
   * no such folder.
   */
  async attach(plugin: UnpackedPlugin): Promise<boolean> {
    if (plugin.row.package_sha256 || !existsSync(join(plugin.dir, 'plugin.json'))) return false
    const bytes = packTgz(plugin.dir)
    const sha256 = sha256Of(bytes)
    await this.store.attachPackage(plugin.row.name, { sha256, bytes, manifest: readFileSync(join(plugin.dir, 'plugin.json'), 'utf8') })
    writeFileSync(this.markerOf(plugin.row.name), sha256)
    return true
  }

  /** The folder of `name` no longer holds a known package (removed, or being replaced). */
  forget(name: string): void {
    rmSync(this.markerOf(name), { force: true })
  }

  /** Makes this server's folder of the plugin hold its current package, fetching and unpacking it (checked against its SHA-256) when needed. */
  async unpack(plugin: UnpackedPlugin): Promise<void> {
    const sha256 = plugin.row.package_sha256
    if (!sha256) throw new AppError('PLUGIN_ERROR', `Plugin ${plugin.row.name} has no package in the database; reinstall it`)
    if (plugin.unpacked === sha256) return
    const name = plugin.row.name
    const before = this.unpacking.get(name) ?? Promise.resolve()
    const next = before.catch(() => {}).then(() => this.unpackNow(plugin, sha256))
    this.unpacking.set(name, next)
    try {
      await next
    } finally {
      if (this.unpacking.get(name) === next) this.unpacking.delete(name)
    }
  }

  private async unpackNow(plugin: UnpackedPlugin, sha256: string): Promise<void> {
    const { name } = plugin.row
    const marker = this.markerOf(name)
    const noted = existsSync(marker) ? readFileSync(marker, 'utf8').trim() : null
    if (noted === sha256 && existsSync(join(plugin.dir, 'plugin.json'))) {
      plugin.unpacked = sha256
      return
    }
    const pkg = await this.store.packageOf(name)
    if (!pkg || pkg.sha256 !== sha256) throw new AppError('PLUGIN_ERROR', `Plugin ${name} was reinstalled or removed by another server while it was being fetched; try again`)
    if (sha256Of(pkg.bytes) !== sha256) throw new AppError('PLUGIN_ERROR', `Plugin ${name}: its package in the database does not match its SHA-256; reinstall it`)
    this.beforeWrite()
    mkdirSync(this.pluginsDir, { recursive: true })
    const staging = mkdtempSync(join(this.pluginsDir, STAGING_PREFIX))
    try {
      const unpacked = join(staging, 'src')
      mkdirSync(unpacked)
      extractTgz(pkg.bytes, unpacked)
      this.forget(name)
      rmSync(plugin.dir, { recursive: true, force: true })
      renameSync(unpacked, plugin.dir)
      writeFileSync(marker, sha256)
    } finally {
      rmSync(staging, { recursive: true, force: true })
    }
    plugin.unpacked = sha256
  }
}
