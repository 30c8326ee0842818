import type { Database } from 'bun:sqlite'
import { existsSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs'
import { join, relative, resolve, sep } from 'node:path'
import { AppError } from '../../core/errors'
import type { RagService } from '../rag/service'
import type { RagStore } from '../rag/store'
import { type BuiltinPlugin, builtinPlugins } from './builtin'
import { cleanStaging, type InstallRequest, installPlugin, redactCredentials } from './install'
import { validate, type JsonSchema } from './json-schema'
import { type ActionSpec, type Manifest, ManifestError, parseManifest } from './manifest'
import { findNode, type NodeRuntime, PluginWorker } from './sandbox'
import { type PluginRow, PluginStore } from './store'
import type { ActionCatalog, ToolCaller } from './tools'

export type PluginStatus = 'enabled' | 'disabled' | 'error'

export interface PluginServiceOptions {
  db: Database
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
}

/** The catalog, the executor and the installer of plugins. */
export class PluginService implements ActionCatalog {
  private readonly store: PluginStore
  private readonly builtins: Map<string, BuiltinPlugin>
  private readonly installed = new Map<string, Installed>()
  private readonly installing = new Set<string>()
  private node: NodeRuntime | null = null

  constructor(private readonly options: PluginServiceOptions) {
    this.store = new PluginStore(options.db)
    this.builtins = builtinPlugins(options.rag)
    cleanStaging(options.pluginsDir)
    for (const row of this.store.all()) if (row.source !== 'builtin') this.installed.set(row.name, this.load(row))
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
    try {
      const manifest = parseManifest(JSON.parse(readFileSync(join(dir, 'plugin.json'), 'utf8')))
      if (manifest.name !== row.name) throw new ManifestError(`plugin.json names "${manifest.name}", not "${row.name}"`)
      const main = resolve(dir, manifest.main)
      if (!existsSync(main) || !statSync(main).isFile()) throw new ManifestError(`its main module "${manifest.main}" is missing`)
      return { row, dir, manifest, problem: null, worker: null }
    } catch (error) {
      const problem = error instanceof ManifestError ? error.message : `its folder or plugin.json cannot be read (reinstall it)`
      return { row, dir, manifest: null, problem: `Plugin ${row.name} cannot be loaded: ${problem}`, worker: null }
    }
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
    return this.store.get(name)?.enabled !== 0
  }

  notFound(name: string): AppError {
    return new AppError('NOT_FOUND', `Plugin ${name} not found`)
  }

  /** Every plugin, built-in first, with its real status. */
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
  enabledActions(): { plugin: string; action: string; description: string; parameters: JsonSchema }[] {
    const actions: { plugin: string; action: string; description: string; parameters: JsonSchema }[] = []
    for (const plugin of this.builtins.values()) {
      if (!this.builtinEnabled(plugin.name)) continue
      for (const [action, spec] of Object.entries(plugin.actions)) actions.push({ plugin: plugin.name, action, description: spec.description, parameters: spec.parameters })
    }
    for (const plugin of this.installed.values()) {
      if (!plugin.row.enabled || !plugin.manifest || this.installedProblem(plugin)) continue
      for (const [action, spec] of Object.entries(plugin.manifest.actions)) actions.push({ plugin: plugin.row.name, action, description: spec.description, parameters: spec.parameters })
    }
    return actions
  }

  /**
   * Runs one action: 404 unknown plugin, 409 PLUGIN_DISABLED, 400 UNKNOWN_ACTION, 400
   * VALIDATION_ERROR naming the field, 400 PLUGIN_ERROR with the plugin's message.
   */
  async execute(name: string, action: string, args: unknown, caller: ToolCaller, signal?: AbortSignal): Promise<unknown> {
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
    const { manifest, row } = await installPlugin(request, {
      pluginsDir: this.options.pluginsDir,
      log: this.options.log,
      // Checked again under the lock, right before the folder is moved into place.
      claim: (name) => {
        if (this.builtins.has(name) || this.installed.has(name) || this.store.get(name) || this.installing.has(name)) {
          throw new AppError('CONFLICT', `A plugin named ${name} is already installed; remove it first to reinstall`)
        }
        this.installing.add(name)
      },
      release: (name) => this.installing.delete(name),
      record: (name, version) =>
        this.store.insert({ name, source: request.source, package: request.package, requested_version: request.version, version, enabled: 1 }),
    })
    const plugin = this.load(row)
    this.installed.set(row.name, plugin)
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
    const builtin = this.builtins.get(name)
    if (builtin) {
      this.store.setEnabled(name, enabled, { version: builtin.version })
      return { success: true, plugin: name, status: this.describeBuiltin(builtin).status }
    }
    const plugin = this.installed.get(name)
    if (!plugin) throw this.notFound(name)
    this.store.setEnabled(name, enabled)
    plugin.row = this.store.get(name)!
    if (!enabled) plugin.worker?.stop(`plugin ${name} was disabled`)
    return { success: true, plugin: name, status: this.describeInstalled(plugin).status }
  }

  /** Uninstalls: the worker is stopped, the folder and the row go. Built-ins cannot be removed (409). */
  remove(name: string) {
    if (this.builtins.has(name)) throw new AppError('CONFLICT', `Plugin ${name} is built in and cannot be removed; disable it instead`)
    const plugin = this.installed.get(name)
    if (!plugin) throw this.notFound(name)
    plugin.worker?.stop(`plugin ${name} was removed`)
    this.installed.delete(name)
    this.store.delete(name)
    const root = realpathOrSelf(this.options.pluginsDir)
    const dir = realpathOrSelf(plugin.dir)
    if (dir.startsWith(root + sep) && !relative(root, dir).includes(sep)) rmSync(dir, { recursive: true, force: true })
    return { success: true, plugin: name, message: `Plugin ${name} was removed` }
  }

  /** Stops every worker (server shutdown, tests). */
  close(): void {
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
  return Object.fromEntries(Object.entries(actions).map(([name, spec]) => [name, { description: spec.description, parameters: spec.parameters }]))
}
