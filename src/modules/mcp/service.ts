import { AppError, notFound } from '../../core/errors'
import type { PluginToolbox, ToolCaller, ToolDefinition } from '../plugins/tools'
import { parseToolName, toolName } from '../plugins/tools'
import { redactCredentials } from '../plugins/install'
import { RemoteServer, RemoteUnavailable } from './remote'
import { isMcpError, MCP_INVALID_PARAMS } from './sdk'
import type { McpServerRecord, McpServerStore, RemoteTool } from './store'
import { toolValue } from './results'
import type { MaybePromise } from '../../db/maybe-promise'
import { SharedRead } from '../../db/shared-read'

/** Server names: as plugin names (no "_", so `<server>__<tool>` splits at its first "__"), at most 32 characters. */
export const SERVER_NAME = /^[a-z0-9][a-z0-9-]{0,31}$/
const RETRY_MS = 30_000
/** OpenAI function names: letters, digits, "_" and "-", at most 64. */
const MAX_TOOL_NAME = 64

export type RegisterRequest =
  | { name: string; url: string; headers?: Record<string, string> }
  | { name: string; command: string; args?: string[]; env?: Record<string, string> }

export interface McpServiceOptions {
  store: McpServerStore
  /** Names a server may not take: the plugins' (their tools share the `<name>__<action>` space), read afresh from a shared registry. */
  reservedNames: () => MaybePromise<Iterable<string>>
  timeoutMs: number
  idleMs: number
  retryMs?: number
  /** With a shared store (PostgreSQL): how often the registry is read again for the toolbox (default 2 s). */
  syncMs?: number
  log: (line: string) => void
}

/** A remote tool under the name agents and models call it by, `<server>__<tool>` made a valid function name. */
interface Offered {
  exposed: string
  tool: RemoteTool
}

function offeredTools(server: string, tools: RemoteTool[]): Offered[] {
  const taken = new Set<string>()
  return tools.map((tool) => {
    const base = toolName(server, tool.name.replace(/[^A-Za-z0-9_-]/g, '_')).slice(0, MAX_TOOL_NAME)
    let exposed = base
    for (let n = 2; taken.has(exposed); n++) exposed = `${base.slice(0, MAX_TOOL_NAME - String(n).length - 1)}_${n}`
    taken.add(exposed)
    return { exposed, tool }
  })
}

/**
 * The MCP servers an admin registered, and their tools as a toolbox: agents, the voice autopilot
 * and every other user of `services.tools` call them as `<server>__<tool>`. A server that is down
 * drops out of the toolbox (and is tried again after a pause); nothing else fails.
 */
export class McpClientService {
  private readonly remotes = new Map<string, RemoteServer>()
  private readonly offered = new Map<string, Offered[]>()
  /** Down servers being tried again in the background. */
  private readonly probing = new Set<string>()
  readonly toolbox: PluginToolbox
  /** Shared store only: reads of the registry started, the newest one applied, and changes made here (a read older than one is dropped). */
  private readsStarted = 0
  private readApplied = 0
  private changes = 0
  private readonly syncTimer: ReturnType<typeof setInterval> | null = null
  /** Concurrent requests share one read of the registry (each gets a read started after it asked). */
  private readonly registryRead = new SharedRead(() => this.readRegistry())

  constructor(private readonly options: McpServiceOptions) {
    if (options.store.asynchronous) {
      // Every route reads the registry first; the toolbox (agents, autopilot) sees another server's changes within syncMs.
      this.syncTimer = setInterval(() => void this.sync().catch(() => {}), options.syncMs ?? 2000)
      ;(this.syncTimer as { unref?: () => void }).unref?.()
    } else {
      for (const record of options.store.all() as McpServerRecord[]) this.track(record)
    }
    this.toolbox = { list: () => this.tools(), call: (name, args, caller, signal) => this.call(name, args, caller, signal) }
  }

  /** The registry as it is now: nothing to do on SQLite; read again from a shared store (another server may have changed it). */
  current(): MaybePromise<void> {
    if (this.options.store.asynchronous) return this.sync()
  }

  /** Reads the shared registry and brings this server's connections in line with it. */
  sync(): Promise<void> {
    return this.registryRead.run()
  }

  private async readRegistry(): Promise<void> {
    const read = ++this.readsStarted
    const changes = this.changes
    const records = await this.options.store.all()
    // A newer read was applied, or this server changed the registry meanwhile: this read is stale.
    if (read < this.readApplied || changes !== this.changes) return
    this.readApplied = read
    const seen = new Set<string>()
    for (const record of records) {
      seen.add(record.name)
      const remote = this.remotes.get(record.name)
      if (!remote || remote.record.createdAt !== record.createdAt) {
        // New, or removed and registered again elsewhere.
        if (remote) void remote.close()
        this.track(record)
        continue
      }
      if (remote.record.updatedAt === record.updatedAt) continue
      if (remote.record.enabled !== record.enabled) remote.setEnabled(record.enabled)
      remote.record = record
      this.offered.set(record.name, offeredTools(record.name, record.tools))
    }
    for (const [name, remote] of this.remotes) {
      if (seen.has(name)) continue
      this.remotes.delete(name)
      this.offered.delete(name)
      void remote.close()
    }
  }

  private track(record: McpServerRecord): RemoteServer {
    const remote = new RemoteServer(record, {
      timeoutMs: this.options.timeoutMs,
      idleMs: this.options.idleMs,
      retryMs: this.options.retryMs ?? RETRY_MS,
      log: this.options.log,
    })
    this.remotes.set(record.name, remote)
    this.offered.set(record.name, offeredTools(record.name, record.tools))
    return remote
  }

  private remote(name: string): RemoteServer {
    const remote = this.remotes.get(name)
    if (!remote) throw notFound(`MCP server ${name}`)
    return remote
  }

  private view(remote: RemoteServer) {
    const { record } = remote
    return {
      name: record.name,
      transport: record.transport,
      ...(record.url !== null ? { url: redactCredentials(record.url) } : {}),
      ...(record.command !== null ? { command: record.command, args: record.args } : {}),
      headerNames: Object.keys(record.headers),
      envNames: Object.keys(record.env),
      enabled: record.enabled,
      status: remote.status,
      error: remote.status === 'unavailable' ? remote.error : null,
      tools: (this.offered.get(record.name) ?? []).map(({ exposed, tool }) => ({ name: exposed, tool: tool.name, description: tool.description })),
      createdAt: record.createdAt,
      updatedAt: record.updatedAt,
    }
  }

  /** The registered servers (read current() first for another server's changes). */
  list() {
    const servers = [...this.remotes.values()].sort((a, b) => a.record.name.localeCompare(b.record.name)).map((remote) => this.view(remote))
    return { servers, total: servers.length }
  }

  show(name: string) {
    return this.view(this.remote(name))
  }

  /**
   * Registers a server and lists its tools (starting a stdio server's process once). A server that
   * cannot be reached is still registered, with status "unavailable" and the reason.
   */
  async register(request: RegisterRequest) {
    const name = request.name
    if (!SERVER_NAME.test(name)) throw new AppError('VALIDATION_ERROR', 'body.name: must be 1 to 32 characters: lowercase letters, digits and "-", starting with a letter or digit')
    const reserved = this.options.reservedNames()
    if ([...(reserved instanceof Promise ? await reserved : reserved)].includes(name)) throw new AppError('CONFLICT', `"${name}" is the name of a plugin: MCP tools are named <server>__<tool> like plugin actions, so choose another name`)
    if (this.options.store.asynchronous) await this.sync()
    if (this.remotes.has(name)) throw new AppError('CONFLICT', `An MCP server named ${name} is already registered`)
    let record: Omit<McpServerRecord, 'createdAt' | 'updatedAt' | 'tools' | 'enabled'>
    if ('url' in request) {
      let url: URL
      try {
        url = new URL(request.url)
      } catch {
        throw new AppError('VALIDATION_ERROR', 'body.url: must be an http(s) URL')
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new AppError('VALIDATION_ERROR', 'body.url: must be an http(s) URL')
      record = { name, transport: 'http', url: url.href, headers: request.headers ?? {}, command: null, args: [], env: {} }
    } else {
      const secret = Object.keys(request.env ?? {}).find((key) => key.toUpperCase().startsWith('UAGENT_'))
      if (secret) throw new AppError('VALIDATION_ERROR', `body.env.${secret}: UAGENT_* variables are the server's own settings and are never passed to an MCP server`)
      record = { name, transport: 'stdio', url: null, headers: {}, command: request.command, args: request.args ?? [], env: request.env ?? {} }
    }
    const inserted = this.options.store.insert(record)
    const remote = this.track(inserted instanceof Promise ? await inserted : inserted)
    this.changes++
    await this.refresh(name).catch(() => {})
    return this.view(remote)
  }

  /** Lists a server's tools again (connecting to it) and keeps them. Throws when it cannot be reached. */
  async refresh(name: string) {
    if (this.options.store.asynchronous) await this.sync()
    const remote = this.remote(name)
    try {
      const tools = await remote.listTools(true)
      await this.options.store.setTools(name, tools)
      this.changes++
      remote.record = { ...remote.record, tools }
      this.offered.set(name, offeredTools(name, tools))
    } catch (error) {
      if (error instanceof RemoteUnavailable) throw new AppError('TOOL_UNAVAILABLE', error.message)
      throw error
    }
    return this.view(remote)
  }

  async setEnabled(name: string, enabled: boolean) {
    if (this.options.store.asynchronous) await this.sync()
    const remote = this.remote(name)
    const stored = this.options.store.setEnabled(name, enabled)
    if (stored instanceof Promise) await stored
    this.changes++
    remote.setEnabled(enabled)
    const record = this.options.store.get(name)
    remote.record = (record instanceof Promise ? await record : record) ?? remote.record
    if (enabled) await this.refresh(name).catch(() => {})
    return this.view(remote)
  }

  async remove(name: string) {
    if (this.options.store.asynchronous) await this.sync()
    const remote = this.remote(name)
    const deleted = this.options.store.delete(name)
    if (deleted instanceof Promise) await deleted
    this.changes++
    this.remotes.delete(name)
    this.offered.delete(name)
    await remote.close()
    return { success: true, name }
  }

  /** The tools of every enabled server that is not known to be down. A down server whose pause is over is tried again in the background. */
  private tools(): ToolDefinition[] {
    const tools: ToolDefinition[] = []
    for (const remote of this.remotes.values()) {
      if (remote.status === 'disabled') continue
      if (remote.status === 'unavailable') {
        const name = remote.record.name
        if (remote.retryDue && !this.probing.has(name)) {
          this.probing.add(name)
          void this.refresh(name)
            .catch(() => {})
            .finally(() => this.probing.delete(name))
        }
        continue
      }
      for (const { exposed, tool } of this.offered.get(remote.record.name) ?? []) {
        tools.push({
          name: exposed,
          plugin: remote.record.name,
          action: tool.name,
          description: tool.description,
          parameters: tool.inputSchema.type === 'object' ? tool.inputSchema : { ...tool.inputSchema, type: 'object' },
        })
      }
    }
    return tools
  }

  /** Whether a tool name belongs to a registered MCP server. */
  handles(name: string): boolean {
    const parsed = parseToolName(name)
    return parsed !== null && this.remotes.has(parsed.plugin)
  }

  private async call(name: string, args: unknown, _caller: ToolCaller, signal?: AbortSignal): Promise<unknown> {
    const parsed = parseToolName(name)
    const remote = parsed ? this.remotes.get(parsed.plugin) : undefined
    if (!parsed || !remote) throw new AppError('UNKNOWN_ACTION', `No tool named ${name} is available`)
    const offered = this.offered.get(parsed.plugin)?.find((entry) => entry.exposed === name)
    if (!offered) throw new AppError('UNKNOWN_ACTION', `MCP server ${parsed.plugin} has no tool ${name}; its tools: ${(this.offered.get(parsed.plugin) ?? []).map((o) => o.exposed).join(', ') || 'none'}`)
    if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args))) throw new AppError('VALIDATION_ERROR', 'arguments: must be an object')
    try {
      const result = await remote.callTool(offered.tool.name, (args ?? {}) as Record<string, unknown>, signal)
      return toolValue(result, name)
    } catch (error) {
      if (error instanceof RemoteUnavailable) throw new AppError('TOOL_UNAVAILABLE', error.message)
      // The server refused the call itself (arguments that fail its schema, a tool it no longer has).
      if (isMcpError(error)) throw new AppError(error.code === MCP_INVALID_PARAMS ? 'VALIDATION_ERROR' : 'PLUGIN_ERROR', `${name}: ${error.message.replace(/^(MCP error -?\d+: )+/, '')}`)
      throw error
    }
  }

  /** Stops every connection (and the processes of stdio servers). */
  async close(): Promise<void> {
    if (this.syncTimer) clearInterval(this.syncTimer)
    await Promise.all([...this.remotes.values()].map((remote) => remote.close()))
  }
}

/** The plugins' tools and the MCP servers' tools as one toolbox (a plugin keeps its name if both claim one). */
export function combineToolboxes(plugins: PluginToolbox, mcp: McpClientService): PluginToolbox {
  return {
    list() {
      const own = plugins.list()
      const names = new Set(own.map((tool) => tool.name))
      return [...own, ...mcp.toolbox.list().filter((tool) => !names.has(tool.name))]
    },
    call(name, args, caller, signal) {
      return mcp.handles(name) ? mcp.toolbox.call(name, args, caller, signal) : plugins.call(name, args, caller, signal)
    },
  }
}
