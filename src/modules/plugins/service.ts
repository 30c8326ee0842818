import type { Database } from 'bun:sqlite'
import { existsSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs'
import { join, relative, resolve, sep } from 'node:path'
import { AppError } from '../../core/errors'
import type { MaybePromise } from '../../db/maybe-promise'
import { SharedRead } from '../../db/shared-read'
import type { RagService } from '../rag/service'
import type { RagStore } from '../rag/store'
import { type BuiltinPlugin, builtinPlugins } from './builtin'
import { cleanStaging, type InstallRequest, installPlugin, redactCredentials } from './install'
import { validate, type JsonSchema } from './json-schema'
import { type ActionSpec, type Manifest, ManifestError, parseManifest } from './manifest'
import { findNode, type NodeRuntime, PluginWorker } from './sandbox'
import type { PluginRow, PluginStore } from './store'
import { SqlitePluginStore } from './store.sqlite'
import { PluginPackages } from './packages'
import type { ActionCatalog, ToolCaller } from './tools'

export type PluginStatus = 'enabled' | 'disabled' | 'error'

export interface PluginServiceOptions {
  db: Database
  /** The plugin registry (default: the SQLite database `db`). A store that keeps packages (PostgreSQL) is shared by every server on it. */
  store?: PluginStore
  /** With a shared store: how often the registry is read again for the toolbox (default 2 s). */
  syncMs?: number
  /** The data dir's free-space floor: an install is refused with 507 below it. */
  storage?: { assertRoom(bytes: number): void }
  rag: RagService<RagStore>
  /** Where installed plugins live, one folder each. */
  pluginsDir: string
  /** The folder is temporary (in-memory database): removed by close() and at process exit. */
  ephemeral?: boolean
  nodePath?: string
  timeoutMs: number
  memoryMb: number
  idleMs: number
  log: (line: string) => void
}

/** An installed plugin as loaded from its row and its folder. */
interface Installed {
  row: PluginRow
  dir: string
  manifest: Manifest | null
  /** Why it cannot run (folder or manifest broken); null when it can. */
  problem: string | null
  worker: PluginWorker | null
  /** Shared store: the package SHA-256 this server's folder holds for it (null: not unpacked here yet). */
  unpacked: string | null
}

/** The catalog, the executor and the installer of plugins. */
export class PluginService implements ActionCatalog {
  private readonly store: PluginStore
  private readonly builtins: Map<string, BuiltinPlugin>
  private readonly installed = new Map<string, Installed>()
  private readonly installing = new Set<string>()
  private node: NodeRuntime | null = null
  /** Shared store: the built-ins' rows (their enabled flag) as last read. */
  private builtinRows = new Map<string, PluginRow>()
  /** Shared store: reads of the registry started, the newest one applied, and changes made here (a read older than one is dropped). */
  private readsStarted = 0
  private readApplied = 0
  private changes = 0
  /** Shared store: installed plugins' packages, packed at install and unpacked here on demand. */
  private readonly packages: PluginPackages | null
  private readonly syncTimer: ReturnType<typeof setInterval> | null = null
  /** Concurrent requests share one read of the registry (each gets a read started after it asked). */
  private readonly registryRead = new SharedRead(() => this.readRegistry())

  constructor(private readonly options: PluginServiceOptions) {
    this.store = options.store ?? new SqlitePluginStore(options.db)
    this.packages = this.store.keepsPackages
      ? new PluginPackages(this.store, options.pluginsDir, () => {
          if (options.ephemeral) removeAtExit(options.pluginsDir)
        })
      : null
    this.builtins = builtinPlugins(options.rag)
    cleanStaging(options.pluginsDir)
    if (this.store.asynchronous) {
      // Every route reads the registry first; the toolbox (agents, autopilot, MCP) sees another server's changes within syncMs.
      this.syncTimer = setInterval(() => void this.sync().catch(() => {}), options.syncMs ?? 2000)
      ;(this.syncTimer as { unref?: () => void }).unref?.()
    } else {
      for (const row of this.store.all() as PluginRow[]) if (row.source !== 'builtin') this.installed.set(row.name, this.load(row))
    }
  }

  /** The registry as it is now: nothing to do on SQLite; read again from a shared store (another server may have changed it). */
  current(): MaybePromise<void> {
    if (this.store.asynchronous) return this.sync()
  }

  /**
   * Reads the shared registry and brings this server in line with it: plugins installed elsewhere
   * appear (their files are unpacked when first run), reinstalled ones are replaced, disabled ones
   * stop their worker, removed ones go with their folder.
   */
  sync(): Promise<void> {
    return this.registryRead.run()
  }

  private async readRegistry(): Promise<void> {
    const read = ++this.readsStarted
    const changes = this.changes
    const rows = await this.store.all()
    // A newer read was applied, or this server changed the registry meanwhile: this read is stale.
    if (read < this.readApplied || changes !== this.changes) return
    this.readApplied = read
    this.builtinRows = new Map(rows.filter((row) => row.source === 'builtin').map((row) => [row.name, row]))
    const seen = new Set<string>()
    for (const row of rows) {
      if (row.source === 'builtin') continue
      seen.add(row.name)
      const current = this.installed.get(row.name)
      if (current && current.row.installed_at === row.installed_at && current.row.package_sha256 === row.package_sha256) {
        if (current.row.enabled && !row.enabled) current.worker?.stop(`plugin ${row.name} was disabled`)
        current.row = row
        continue
      }
      current?.worker?.stop(`plugin ${row.name} was installed again`)
      this.installed.set(row.name, this.load(row))
    }
    for (const [name, plugin] of this.installed) {
      if (seen.has(name) || this.installing.has(name)) continue
      plugin.worker?.stop(`plugin ${name} was removed`)
      this.installed.delete(name)
      this.removeFolder(plugin)
    }
  }

  /**
   * Shared store: stores the folders of plugins recorded without a package (a server moved from
   * SQLite with `uagent admin migrate-to-postgres` keeps its plugins folder) so that every server
   * can run them. Returns the names stored.
   */
  async storeLocalPackages(): Promise<string[]> {
    if (!this.packages) return []
    await this.sync()
    const stored: string[] = []
    for (const plugin of this.installed.values()) {
      if (await this.packages.attach(plugin)) stored.push(plugin.row.name)
    }
    if (stored.length) {
      this.options.log(`Plugins ${stored.join(', ')}: their folders in this data dir are now stored in PostgreSQL, for every server on it`)
      await this.sync()
    }
    return stored
  }

  get pluginsDir(): string {
    return this.options.pluginsDir
  }

  /** Node.js for installed plugins, looked for once, when first needed. */
  private runtime(): NodeRuntime {
    this.node ??= findNode(this.options.nodePath)
    return this.node
  }

  private load(row: PluginRow): Installed {
    const dir = join(this.options.pluginsDir, row.name)
    if (this.packages) return this.loadShared(row, dir)
    try {
      const manifest = parseManifest(JSON.parse(readFileSync(join(dir, 'plugin.json'), 'utf8')))
      if (manifest.name !== row.name) throw new ManifestError(`plugin.json names "${manifest.name}", not "${row.name}"`)
      const main = resolve(dir, manifest.main)
      if (!existsSync(main) || !statSync(main).isFile()) throw new ManifestError(`its main module "${manifest.main}" is missing`)
      return { row, dir, manifest, problem: null, worker: null, unpacked: null }
    } catch (error) {
      const problem = error instanceof ManifestError ? error.message : `its folder or plugin.json cannot be read (reinstall it)`
      return { row, dir, manifest: null, problem: `Plugin ${row.name} cannot be loaded: ${problem}`, worker: null, unpacked: null }
    }
  }

  /** A plugin of a shared store: described from the manifest kept with its row; its files are unpacked when it first runs here. */
  private loadShared(row: PluginRow, dir: string): Installed {
    try {
      if (!row.manifest || !row.package_sha256) throw new ManifestError('its package is not in the database (reinstall it)')
      const manifest = parseManifest(JSON.parse(row.manifest))
      if (manifest.name !== row.name) throw new ManifestError(`plugin.json names "${manifest.name}", not "${row.name}"`)
      return { row, dir, manifest, problem: null, worker: null, unpacked: null }
    } catch (error) {
      const problem = error instanceof ManifestError ? error.message : 'its plugin.json in the database cannot be read (reinstall it)'
      return { row, dir, manifest: null, problem: `Plugin ${row.name} cannot be loaded: ${problem}`, worker: null, unpacked: null }
    }
  }

  /** Removes an installed plugin's folder (and, for a shared store, its marker). */
  private removeFolder(plugin: Installed): void {
    this.packages?.forget(plugin.row.name)
    const root = realpathOrSelf(this.options.pluginsDir)
    const dir = realpathOrSelf(plugin.dir)
    if (dir.startsWith(root + sep) && !relative(root, dir).includes(sep)) rmSync(dir, { recursive: true, force: true })
  }

  /** Why an installed plugin cannot run, or null. */
  private installedProblem(plugin: Installed): string | null {
    if (plugin.problem) return plugin.problem
    const node = this.runtime()
    if (!node.ok) return node.reason
    // Node.js reads "," as a list separator and "*" as a wildcard in --allow-fs-read.
    if (/[,*]/.test(plugin.dir)) return 'The plugins folder path holds "," or "*", which Node.js cannot confine a plugin to; choose another UAGENT_PLUGINS_DIR'
    return null
  }

  private builtinEnabled(name: string): boolean {
    if (this.store.asynchronous) return this.builtinRows.get(name)?.enabled !== 0
    return (this.store.get(name) as PluginRow | null)?.enabled !== 0
  }

  notFound(name: string): AppError {
    return new AppError('NOT_FOUND', `Plugin ${name} not found`)
  }

  /** Every plugin, built-in first, with its real status (read current() first for another server's changes). */
  list() {
    const plugins = [
      ...[...this.builtins.values()].map((plugin) => this.describeBuiltin(plugin)),
      ...[...this.installed.values()].map((plugin) => this.describeInstalled(plugin)),
    ]
    return { plugins, total: plugins.length }
  }

  private describeBuiltin(plugin: BuiltinPlugin) {
    return {
      name: plugin.name,
      version: plugin.version,
      description: plugin.description,
      category: plugin.category,
      status: (this.builtinEnabled(plugin.name) ? 'enabled' : 'disabled') as PluginStatus,
      permissions: plugin.permissions,
      source: 'builtin' as string,
      builtin: true,
    }
  }

  private describeInstalled(plugin: Installed) {
    const problem = this.installedProblem(plugin)
    const status: PluginStatus = !plugin.row.enabled ? 'disabled' : problem ? 'error' : 'enabled'
    return {
      name: plugin.row.name,
      version: plugin.manifest?.version ?? plugin.row.version,
      description: plugin.manifest?.description ?? '',
      category: plugin.manifest?.category ?? 'unknown',
      status,
      permissions: plugin.manifest?.permissions ?? [],
      source: plugin.row.source as string,
      builtin: false,
      ...(problem ? { message: problem } : {}),
    }
  }

  /** One plugin with its actions and their parameter schemas: how to call it. */
  show(name: string) {
    const builtin = this.builtins.get(name)
    if (builtin) return { ...this.describeBuiltin(builtin), actions: publicActions(builtin.actions) }
    const plugin = this.installed.get(name)
    if (!plugin) throw this.notFound(name)
    return {
      ...this.describeInstalled(plugin),
      package: redactCredentials(plugin.row.package),
      installedAt: plugin.row.installed_at,
      actions: plugin.manifest ? publicActions(plugin.manifest.actions) : {},
    }
  }

  /** Every action of every enabled plugin that can run. */
  enabledActions(): { plugin: string; action: string; description: string; parameters: JsonSchema; readOnly?: boolean }[] {
    const actions: { plugin: string; action: string; description: string; parameters: JsonSchema; readOnly?: boolean }[] = []
    const entry = (plugin: string, action: string, spec: ActionSpec) => ({
      plugin,
      action,
      description: spec.description,
      parameters: spec.parameters,
      ...(spec.readOnly !== undefined ? { readOnly: spec.readOnly } : {}),
    })
    for (const plugin of this.builtins.values()) {
      if (!this.builtinEnabled(plugin.name)) continue
      for (const [action, spec] of Object.entries(plugin.actions)) actions.push(entry(plugin.name, action, spec))
    }
    for (const plugin of this.installed.values()) {
      if (!plugin.row.enabled || !plugin.manifest || this.installedProblem(plugin)) continue
      for (const [action, spec] of Object.entries(plugin.manifest.actions)) actions.push(entry(plugin.row.name, action, spec))
    }
    return actions
  }

  /**
   * Runs one action: 404 unknown plugin, 409 PLUGIN_DISABLED, 400 UNKNOWN_ACTION, 400
   * VALIDATION_ERROR naming the field, 400 PLUGIN_ERROR with the plugin's message.
   */
  async execute(name: string, action: string, args: unknown, caller: ToolCaller, signal?: AbortSignal): Promise<unknown> {
    if (this.store.asynchronous) await this.sync()
    const builtin = this.builtins.get(name)
    const plugin = builtin ? undefined : this.installed.get(name)
    if (!builtin && !plugin) throw this.notFound(name)
    const enabled = builtin ? this.builtinEnabled(name) : plugin!.row.enabled === 1
    if (!enabled) throw new AppError('PLUGIN_DISABLED', `Plugin ${name} is disabled; an admin can enable it with POST /plugins/${name}/enable`)
    const actions: Record<string, ActionSpec> = builtin ? builtin.actions : (plugin!.manifest?.actions ?? {})
    if (plugin) {
      const problem = this.installedProblem(plugin)
      if (problem) throw new AppError('PLUGIN_ERROR', problem)
    }
    if (!Object.hasOwn(actions, action)) {
      throw new AppError('UNKNOWN_ACTION', `Plugin ${name} has no action "${action}"; its actions: ${Object.keys(actions).join(', ')}`)
    }
    const checked = validate(actions[action]!.parameters, args ?? {}, 'parameters')
    if (!checked.ok) throw new AppError('VALIDATION_ERROR', checked.message)
    if (builtin) return builtin.actions[action]!.run(checked.value, { userId: caller.userId, signal })
    if (this.packages) await this.packages.unpack(plugin!)
    return this.worker(plugin!).call(action, checked.value, signal)
  }

  private worker(plugin: Installed): PluginWorker {
    const node = this.runtime()
    if (!node.ok || !plugin.manifest) throw new AppError('PLUGIN_ERROR', this.installedProblem(plugin) ?? 'Plugin cannot run')
    plugin.worker ??= new PluginWorker({
      plugin: plugin.row.name,
      dir: plugin.dir,
      main: resolve(plugin.dir, plugin.manifest.main),
      node,
      memoryMb: this.options.memoryMb,
      timeoutMs: this.options.timeoutMs,
      idleMs: this.options.idleMs,
      log: this.options.log,
    })
    return plugin.worker
  }

  /** Installs from npm, git or a .tgz URL; 409 when the name exists, 400 INSTALL_FAILED with the reason otherwise. */
  async install(request: InstallRequest) {
    // A package and its dependencies take a few MB; below the floor the install is refused before anything is fetched.
    this.options.storage?.assertRoom(16 * 1024 * 1024)
    if (this.options.ephemeral) removeAtExit(this.options.pluginsDir)
    if (this.store.asynchronous) await this.sync()
    const { manifest, row } = await installPlugin(request, {
      pluginsDir: this.options.pluginsDir,
      log: this.options.log,
      // Checked again under the lock, right before the folder is moved into place.
      claim: (name) => {
        const stored = this.store.asynchronous ? null : this.store.get(name)
        if (this.builtins.has(name) || this.installed.has(name) || stored || this.installing.has(name)) {
          throw new AppError('CONFLICT', `A plugin named ${name} is already installed; remove it first to reinstall`)
        }
        this.installing.add(name)
      },
      release: (name) => this.installing.delete(name),
      record: (name, version) => {
        const row = { name, source: request.source, package: request.package, requested_version: request.version, version, enabled: 1 }
        return this.packages ? this.packages.record(row) : this.store.insert(row)
      },
    })
    const plugin = this.load(row)
    // The folder installPlugin put in place is this package.
    if (this.packages) plugin.unpacked = row.package_sha256 ?? null
    this.installed.set(row.name, plugin)
    this.changes++
    const status = this.describeInstalled(plugin).status
    return {
      success: true,
      plugin: manifest.name,
      version: manifest.version,
      status,
      message:
        status === 'enabled'
          ? `Installed ${manifest.name} ${manifest.version} from ${request.source} with ${Object.keys(manifest.actions).length} action(s)`
          : `Installed ${manifest.name} ${manifest.version}, but it cannot run: ${this.installedProblem(plugin)}`,
    }
  }

  setEnabled(name: string, enabled: boolean) {
    if (this.store.asynchronous) return this.setEnabledShared(name, enabled)
    const builtin = this.builtins.get(name)
    if (builtin) {
      this.store.setEnabled(name, enabled, { version: builtin.version })
      return { success: true, plugin: name, status: this.describeBuiltin(builtin).status }
    }
    const plugin = this.installed.get(name)
    if (!plugin) throw this.notFound(name)
    this.store.setEnabled(name, enabled)
    plugin.row = this.store.get(name) as PluginRow
    if (!enabled) plugin.worker?.stop(`plugin ${name} was disabled`)
    return { success: true, plugin: name, status: this.describeInstalled(plugin).status }
  }

  private async setEnabledShared(name: string, enabled: boolean) {
    await this.sync()
    const builtin = this.builtins.get(name)
    const plugin = builtin ? undefined : this.installed.get(name)
    if (!builtin && !plugin) throw this.notFound(name)
    await this.store.setEnabled(name, enabled, builtin ? { version: builtin.version } : undefined)
    const row = await this.store.get(name)
    this.changes++
    if (builtin) {
      if (row) this.builtinRows.set(name, row)
      return { success: true, plugin: name, status: this.describeBuiltin(builtin).status }
    }
    if (!row) throw this.notFound(name)
    plugin!.row = row
    if (!enabled) plugin!.worker?.stop(`plugin ${name} was disabled`)
    return { success: true, plugin: name, status: this.describeInstalled(plugin!).status }
  }

  /** Uninstalls: the worker is stopped, the folder and the row go. Built-ins cannot be removed (409). */
  remove(name: string) {
    if (this.store.asynchronous) return this.removeShared(name)
    if (this.builtins.has(name)) throw new AppError('CONFLICT', `Plugin ${name} is built in and cannot be removed; disable it instead`)
    const plugin = this.installed.get(name)
    if (!plugin) throw this.notFound(name)
    plugin.worker?.stop(`plugin ${name} was removed`)
    this.installed.delete(name)
    this.store.delete(name)
    this.removeFolder(plugin)
    return { success: true, plugin: name, message: `Plugin ${name} was removed` }
  }

  private async removeShared(name: string) {
    await this.sync()
    if (this.builtins.has(name)) throw new AppError('CONFLICT', `Plugin ${name} is built in and cannot be removed; disable it instead`)
    const plugin = this.installed.get(name)
    if (!plugin) throw this.notFound(name)
    plugin.worker?.stop(`plugin ${name} was removed`)
    await this.store.delete(name)
    this.installed.delete(name)
    this.changes++
    this.removeFolder(plugin)
    return { success: true, plugin: name, message: `Plugin ${name} was removed` }
  }

  /** Stops every worker (server shutdown, tests). */
  close(): void {
    if (this.syncTimer) clearInterval(this.syncTimer)
    for (const plugin of this.installed.values()) plugin.worker?.stop('the server is stopping')
    if (this.options.ephemeral) rmSync(this.options.pluginsDir, { recursive: true, force: true })
  }
}

const temporaryFolders = new Set<string>()

/** Temporary plugin folders go when the process exits (one listener for all of them). */
function removeAtExit(dir: string): void {
  if (temporaryFolders.size === 0) process.once('exit', () => temporaryFolders.forEach((path) => rmSync(path, { recursive: true, force: true })))
  temporaryFolders.add(dir)
}

function realpathOrSelf(path: string): string {
  try {
    return realpathSync(path)
  } catch {
    return resolve(path)
  }
}

function publicActions(actions: Record<string, ActionSpec>) {
  return Object.fromEntries(
    Object.entries(actions).map(([name, spec]) => [name, { description: spec.description, parameters: spec.parameters, ...(spec.readOnly !== undefined ? { readOnly: spec.readOnly } : {}) }]),
  )
}
