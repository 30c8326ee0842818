// This server as an MCP server: the caller's knowledge base, the plugins' actions and the agents,
// over Streamable HTTP at /mcp. Stateless: every HTTP request gets a fresh MCP server bound to the
// caller it authenticated, so one user's session can never see another's data.
import type { Server } from '@modelcontextprotocol/sdk/server/index.js'
import type { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv'
import type { CallToolResult, Resource, ServerNotification } from '@modelcontextprotocol/sdk/types.js'
import pkg from '../../../package.json'
import { AppError } from '../../core/errors'
import { validate } from '../plugins/json-schema'
import type { PluginToolbox, ToolCaller } from '../plugins/tools'
import type { DocumentLibrary } from '../rag/documents/library'
import { collectionRef, type RagService } from '../rag/service'
import type { RagStore } from '../rag/store'
import { toolError, toolResult } from './results'
import { loadServerSdk, type ServerSdk } from './sdk'
import type { ServedTool } from './tools'

/** The SDK, once the first request to /mcp has loaded it (every use below comes after that). */
let sdk: ServerSdk

/** MCP's "resource not found" error code. */
const RESOURCE_NOT_FOUND = -32002
const RESOURCES_PAGE = 100
const DOCUMENT_URI = /^uagent:\/\/collections\/([^/]+)\/documents\/(.+)$/

export const documentUri = (collection: string, id: string) => `uagent://collections/${encodeURIComponent(collection)}/documents/${encodeURIComponent(id)}`

export interface McpEndpointDeps {
  rag: RagService<RagStore>
  library: DocumentLibrary
  /** The plugins' actions only: the tools of registered MCP servers are not passed on. */
  plugins: PluginToolbox
  served: ServedTool[]
  log: (line: string) => void
}

const INSTRUCTIONS =
  'Universal Agent: search and ask your own document collections (list_collections, rag_search, rag_answer), run the server\'s plugins (<plugin>__<action>) and multi-agent tasks (agents_run). Each document is also a resource: uagent://collections/{name}/documents/{id}.'

interface Cursor {
  /** Collection index in the caller's list, and offset of its documents. */
  c: number
  o: number
}

const encodeCursor = (cursor: Cursor) => Buffer.from(JSON.stringify(cursor)).toString('base64url')

function decodeCursor(text: string | undefined): Cursor {
  if (!text) return { c: 0, o: 0 }
  try {
    const cursor = JSON.parse(Buffer.from(text, 'base64url').toString()) as Cursor
    if (Number.isInteger(cursor.c) && Number.isInteger(cursor.o) && cursor.c >= 0 && cursor.o >= 0) return cursor
  } catch {}
  throw new sdk.McpError(sdk.ErrorCode.InvalidParams, 'Invalid cursor: pass the nextCursor of the previous page')
}

/** The endpoint behind POST /mcp: one MCP server per request, for the request's caller. */
export class McpEndpoint {
  // Only elicitation uses the SDK's validator; one instance serves every request (each makes an Ajv).
  private validator: AjvJsonSchemaValidator | undefined
  private readonly served: Map<string, ServedTool>
  /**
   * Tool calls running, by caller session and JSON-RPC id. Stateless requests share no MCP session,
   * so a client's notifications/cancelled (a POST of its own) finds the call it names here.
   */
  private readonly running = new Map<string, AbortController>()

  constructor(private readonly deps: McpEndpointDeps) {
    this.served = new Map(deps.served.map((tool) => [tool.name, tool]))
  }

  /** Answers one Streamable HTTP POST (a JSON-RPC message or batch already parsed into `body`). */
  async handle(request: Request, body: unknown, caller: ToolCaller, session: string): Promise<Response> {
    const accept = request.headers.get('accept') ?? ''
    if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
      throw new AppError('VALIDATION_ERROR', 'Accept must list both application/json and text/event-stream (MCP Streamable HTTP)', { status: 406 })
    }
    if (!/^application\/json\b/i.test(request.headers.get('content-type') ?? '')) {
      throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'A JSON-RPC message is expected: send it with Content-Type: application/json')
    }
    for (const message of Array.isArray(body) ? body : [body]) {
      const cancelled = message as { method?: unknown; params?: { requestId?: unknown } } | null
      if (cancelled?.method === 'notifications/cancelled') this.running.get(`${session}:${String(cancelled.params?.requestId)}`)?.abort(new Error('Cancelled by the client'))
    }
    sdk ??= await loadServerSdk()
    this.validator ??= new sdk.AjvJsonSchemaValidator()
    const server = this.server(caller, session, request.signal)
    // Streamed (SSE) only when the client may be sent notifications meanwhile: a tool call that asked for progress.
    const transport = new sdk.WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !wantsProgress(body) })
    await server.connect(transport)
    const response = await transport.handleRequest(request, { parsedBody: body })
    if (!response.ok) {
      const detail = ((await response.json().catch(() => null)) as { error?: { message?: string } } | null)?.error?.message ?? response.statusText
      void server.close()
      throw new AppError(response.status === 413 ? 'PAYLOAD_TOO_LARGE' : 'VALIDATION_ERROR', detail, { status: response.status })
    }
    return response
  }

  private server(caller: ToolCaller, session: string, httpSignal: AbortSignal): Server {
    // The low-level Server: tools are described by JSON Schema (the plugins' own), not zod.
    const server = new sdk.Server(
      { name: 'universal-agent', title: 'Universal Agent', version: pkg.version },
      { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS, jsonSchemaValidator: this.validator },
    )
    server.setRequestHandler(sdk.ListToolsRequestSchema, () => ({ tools: this.listTools() }))
    server.setRequestHandler(sdk.CallToolRequestSchema, async (request, extra) => {
      const { name } = request.params
      const args = request.params.arguments ?? {}
      const key = `${session}:${String(extra.requestId)}`
      const cancel = new AbortController()
      this.running.set(key, cancel)
      try {
        return await this.call(name, args, caller, AbortSignal.any([extra.signal, httpSignal, cancel.signal]), request.params._meta?.progressToken, extra.sendNotification)
      } finally {
        if (this.running.get(key) === cancel) this.running.delete(key)
      }
    })
    server.setRequestHandler(sdk.ListResourcesRequestSchema, (request) => this.listResources(caller, request.params?.cursor))
    server.setRequestHandler(sdk.ListResourceTemplatesRequestSchema, () => ({
      resourceTemplates: [
        {
          uriTemplate: 'uagent://collections/{name}/documents/{id}',
          name: 'document',
          title: 'A document of one of your collections',
          description: 'Its full extracted text; {id} is the document id, percent-encoded',
          mimeType: 'text/plain',
        },
      ],
    }))
    server.setRequestHandler(sdk.ReadResourceRequestSchema, (request) => this.readResource(caller, request.params.uri))
    return server
  }

  private async call(
    name: string,
    args: Record<string, unknown>,
    caller: ToolCaller,
    signal: AbortSignal,
    token: string | number | undefined,
    notify: (notification: ServerNotification) => Promise<void>,
  ): Promise<CallToolResult> {
    const builtin = this.served.get(name)
    if (builtin) {
      const checked = validate(builtin.inputSchema, args, 'arguments')
      if (!checked.ok) return toolError(new AppError('VALIDATION_ERROR', checked.message))
      const progress = async (value: number, message?: string) => {
        if (token === undefined) return
        await notify({ method: 'notifications/progress', params: { progressToken: token, progress: value, total: 100, ...(message ? { message } : {}) } })
      }
      return this.run(() => builtin.run(checked.value as Record<string, unknown>, { caller, signal, progress }), name)
    }
    if (!this.deps.plugins.list().some((tool) => tool.name === name)) {
      throw new sdk.McpError(sdk.ErrorCode.InvalidParams, `Unknown tool: ${name}. tools/list names the tools you can call`)
    }
    return this.run(() => this.deps.plugins.call(name, args, caller, signal), name)
  }

  private listTools() {
    const tools: { name: string; title?: string; description: string; inputSchema: { type: 'object'; [key: string]: unknown }; annotations?: { readOnlyHint: boolean } }[] = []
    for (const tool of this.served.values()) tools.push({ name: tool.name, title: tool.title, description: tool.description, inputSchema: tool.inputSchema })
    for (const tool of this.deps.plugins.list()) {
      tools.push({
        name: tool.name,
        title: `${tool.plugin}: ${tool.action}`,
        description: tool.description,
        inputSchema: { ...tool.parameters, type: 'object' },
        // A plugin action declared read-only (every built-in one; a manifest's readOnly) says so to MCP clients.
        ...(tool.readOnly !== undefined ? { annotations: { readOnlyHint: tool.readOnly } } : {}),
      })
    }
    return tools
  }

  /** A tool's outcome as a result; any failure (bad arguments, unknown collection, plugin error) is `isError`, never a protocol error. */
  private async run(work: () => Promise<unknown>, name: string): Promise<CallToolResult> {
    try {
      return toolResult(await work())
    } catch (error) {
      if (!(error instanceof AppError)) this.deps.log(`mcp: tool ${name} failed: ${(error as Error)?.stack ?? String(error)}`)
      return toolError(error)
    }
  }

  private async listResources(caller: ToolCaller, cursorText: string | undefined) {
    const cursor = decodeCursor(cursorText)
    const collections = (await this.deps.rag.listCollections(caller.userId)).collections
    const resources: Resource[] = []
    let { c, o } = cursor
    while (c < collections.length && resources.length < RESOURCES_PAGE) {
      const collection = collections[c]!
      const ref = collectionRef(collection)
      const page = await this.deps.library.list(caller.userId, ref, { limit: RESOURCES_PAGE - resources.length, offset: o, view: 'full' })
      for (const document of page.documents as unknown as { id: string; title: string; bytes: number; type: string }[]) {
        resources.push({
          uri: documentUri(ref, document.id),
          name: `${ref}/${document.id}`,
          title: document.title,
          description: `${document.type} document in collection ${ref}`,
          mimeType: 'text/plain',
          ...(document.bytes ? { size: document.bytes } : {}),
        })
      }
      if (page.hasMore) o += page.documents.length
      else {
        c++
        o = 0
      }
    }
    return { resources, ...(c < collections.length ? { nextCursor: encodeCursor({ c, o }) } : {}) }
  }

  private async readResource(caller: ToolCaller, uri: string) {
    const match = DOCUMENT_URI.exec(uri)
    if (!match) throw new sdk.McpError(RESOURCE_NOT_FOUND, `Resource not found: ${uri} (documents are uagent://collections/{name}/documents/{id})`, { uri })
    let collection: string
    let id: string
    try {
      collection = decodeURIComponent(match[1]!)
      id = decodeURIComponent(match[2]!)
    } catch {
      throw new sdk.McpError(RESOURCE_NOT_FOUND, `Resource not found: ${uri}`, { uri })
    }
    try {
      const document = await this.deps.library.get(caller.userId, collection, id)
      return { contents: [{ uri, mimeType: 'text/plain', text: document.text }] }
    } catch (error) {
      if (error instanceof AppError && error.code === 'NOT_FOUND') throw new sdk.McpError(RESOURCE_NOT_FOUND, `Resource not found: ${uri}`, { uri })
      throw error
    }
  }
}

/** Whether a POSTed message is a tool call that asked for progress notifications. */
function wantsProgress(body: unknown): boolean {
  const messages = Array.isArray(body) ? body : [body]
  return messages.some((m) => {
    const message = m as { method?: unknown; params?: { _meta?: { progressToken?: unknown } } } | null
    return message?.method === 'tools/call' && message.params?._meta?.progressToken !== undefined
  })
}
