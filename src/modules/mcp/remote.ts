// One registered MCP server as this server's client sees it: a lazily opened connection (a
// spawned process for stdio, HTTP requests for Streamable HTTP), closed again when idle, every
// request under a time limit, and its state: connected, idle, or unavailable since a failure.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import pkg from '../../../package.json'
import { type ClientSdk, isMcpError, loadClientSdk, MCP_CONNECTION_CLOSED, MCP_REQUEST_TIMEOUT } from './sdk'
import type { McpServerRecord, RemoteTool } from './store'

export type RemoteStatus = 'connected' | 'idle' | 'unavailable' | 'disabled'

export interface RemoteOptions {
  /** Time limit of starting a server (process and handshake) and of each request to it. */
  timeoutMs: number
  /** A connection without requests for this long is closed (a stdio server's process stops). */
  idleMs: number
  /** How long a server that failed is left alone before it is tried again. */
  retryMs: number
  log: (line: string) => void
}

/** The server could not be reached, started, or answered in time: its tools are unavailable. */
export class RemoteUnavailable extends Error {}

/** Only these variables of the server's own environment reach a spawned MCP server: no secret, no UAGENT_*. */
const INHERITED = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TERM', 'TZ', 'TMPDIR']
const STDERR_KEPT = 2000

export function childEnvironment(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {}
  for (const name of INHERITED) if (process.env[name] !== undefined) env[name] = process.env[name]!
  for (const [name, value] of Object.entries(extra)) if (!name.toUpperCase().startsWith('UAGENT_')) env[name] = value
  return env
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error))

export class RemoteServer {
  status: RemoteStatus
  /** Why the server is unavailable. */
  error: string | null = null
  private retryAt = 0
  private client: Client | null = null
  private opening: Promise<Client> | null = null
  private idleTimer: ReturnType<typeof setTimeout> | null = null
  private busy = 0
  private stderr = ''
  /** The process of a connected stdio server. */
  pid: number | null = null

  constructor(
    public record: McpServerRecord,
    private readonly options: RemoteOptions,
  ) {
    this.status = record.enabled ? 'idle' : 'disabled'
  }

  /** Whether a failed server's pause is over, so that it may be tried again. */
  get retryDue(): boolean {
    return this.status === 'unavailable' && Date.now() >= this.retryAt
  }

  private transport(sdk: ClientSdk) {
    const { record } = this
    if (record.transport === 'http') {
      return new sdk.StreamableHTTPClientTransport(new URL(record.url!), { requestInit: { headers: record.headers } })
    }
    const transport = new sdk.StdioClientTransport({
      command: record.command!,
      args: record.args,
      env: childEnvironment(record.env),
      stderr: 'pipe',
    })
    // Read, so the process never blocks on a full pipe; the last lines explain a failed start.
    transport.stderr?.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-STDERR_KEPT)
    })
    return transport
  }

  private async open(): Promise<Client> {
    if (this.client) return this.client
    this.opening ??= (async () => {
      const sdk = await loadClientSdk()
      const client = new sdk.Client({ name: 'universal-agent', version: pkg.version })
      const transport = this.transport(sdk)
      this.stderr = ''
      const timer = setTimeout(() => void transport.close().catch(() => {}), this.options.timeoutMs)
      try {
        await client.connect(transport, { timeout: this.options.timeoutMs })
      } catch (error) {
        await transport.close().catch(() => {})
        const detail = this.stderr.trim().split('\n').at(-1)
        throw new RemoteUnavailable(`${this.describe()} could not be started or reached: ${message(error)}${detail ? ` (${detail})` : ''}`)
      } finally {
        clearTimeout(timer)
      }
      client.onclose = () => {
        if (this.client === client) {
          this.client = null
          this.pid = null
          if (this.status === 'connected') this.status = 'idle'
        }
      }
      this.pid = transport instanceof sdk.StdioClientTransport ? transport.pid : null
      this.client = client
      this.status = 'connected'
      this.error = null
      return client
    })().finally(() => {
      this.opening = null
    })
    return this.opening
  }

  private describe(): string {
    return `MCP server ${this.record.name}`
  }

  private failed(error: unknown): RemoteUnavailable {
    const failure = error instanceof RemoteUnavailable ? error : new RemoteUnavailable(`${this.describe()} failed: ${message(error)}`)
    this.status = 'unavailable'
    this.error = failure.message
    this.retryAt = Date.now() + this.options.retryMs
    this.options.log(`mcp: ${failure.message}`)
    void this.close()
    return failure
  }

  /** Runs `work` on an open connection, counting it against idleness. */
  private async use<T>(work: (client: Client) => Promise<T>): Promise<T> {
    if (this.status === 'disabled') throw new RemoteUnavailable(`${this.describe()} is disabled`)
    if (this.status === 'unavailable' && !this.retryDue) throw new RemoteUnavailable(this.error ?? `${this.describe()} is unavailable`)
    this.busy++
    if (this.idleTimer) clearTimeout(this.idleTimer)
    try {
      const client = await this.open()
      return await work(client)
    } finally {
      this.busy--
      this.armIdle()
    }
  }

  private armIdle(): void {
    if (this.busy || !this.client) return
    if (this.idleTimer) clearTimeout(this.idleTimer)
    this.idleTimer = setTimeout(() => {
      if (!this.busy) void this.close()
    }, this.options.idleMs)
    ;(this.idleTimer as { unref?: () => void }).unref?.()
  }

  /** Connects (starting the process of a stdio server) and lists its tools, every page; `now` tries a failed server before its pause is over. */
  async listTools(now = false): Promise<RemoteTool[]> {
    if (now && this.status === 'unavailable') this.retryAt = 0
    try {
      return await this.use(async (client) => {
        const tools: RemoteTool[] = []
        let cursor: string | undefined
        do {
          const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.options.timeoutMs })
          for (const tool of page.tools) {
            tools.push({ name: tool.name, description: tool.description ?? tool.title ?? tool.name, inputSchema: tool.inputSchema as Record<string, unknown> })
          }
          cursor = page.nextCursor
        } while (cursor && tools.length < 1000)
        return tools
      })
    } catch (error) {
      throw this.refusedOrFailed(error)
    }
  }

  /**
   * Calls one tool. A tool that reports an error answers with `isError`; a server that cannot be
   * reached, or dies, throws RemoteUnavailable (and is left alone for a while); a call over the
   * time limit throws a timeout (and the connection is reopened on the next call).
   */
  async callTool(name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<CallToolResult> {
    try {
      return await this.use(async (client) => {
        const result = await client.callTool({ name, arguments: args }, undefined, { timeout: this.options.timeoutMs, signal })
        return result as CallToolResult
      })
    } catch (error) {
      if (signal?.aborted) throw signal.reason ?? error
      if (isMcpError(error)) {
        if (error.code === MCP_REQUEST_TIMEOUT) {
          // A server that does not answer in time may be stuck: start afresh next time (unless other calls still use it).
          if (!this.busy) void this.close()
          throw new RemoteUnavailable(`${this.describe()} did not answer ${name} within ${this.options.timeoutMs} ms`)
        }
        if (error.code !== MCP_CONNECTION_CLOSED) throw error
      }
      throw this.refusedOrFailed(error)
    }
  }

  /** A refusal without trying (disabled, or still pausing after a failure) as it is; anything else marks the server unavailable. */
  private refusedOrFailed(error: unknown): Error {
    if (this.status === 'disabled') return error as Error
    if (error instanceof RemoteUnavailable && this.status === 'unavailable' && !this.retryDue) return error
    return this.failed(error)
  }

  /** Closes the connection (stopping a stdio server's process); the next use opens it again. */
  async close(): Promise<void> {
    if (this.idleTimer) clearTimeout(this.idleTimer)
    this.idleTimer = null
    const client = this.client
    this.client = null
    this.pid = null
    if (this.status === 'connected') this.status = 'idle'
    await client?.close().catch(() => {})
  }

  setEnabled(enabled: boolean): void {
    this.record = { ...this.record, enabled }
    if (!enabled) {
      this.status = 'disabled'
      void this.close()
    } else if (this.status === 'disabled') {
      this.status = 'idle'
      this.error = null
    }
  }
}
