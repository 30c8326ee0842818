import { Elysia } from 'elysia'
import { authPlugin } from '../../core/auth'
import type { RateLimiter } from '../../core/rate-limit'
import type { AuthService } from '../auth/service'
import type { RequestAudit } from '../audit/context'
import { andThen } from '../../db/maybe-promise'
import { ErrorResponse } from '../system/model'
import { JsonRpcBody, McpServersResponse, McpServerView, RegisterServerRequest, RemovedServer, ServerParams } from './model'
import type { McpEndpoint } from './server'
import type { McpClientService } from './service'

// Documented only: the transport writes the answer (JSON or an event stream), so no schema is checked at run time.
const endpointResponses = {
  200: {
    description: 'The JSON-RPC response (application/json), or an event stream of progress notifications and the response (text/event-stream)',
    content: { 'application/json': { schema: JsonRpcBody as object }, 'text/event-stream': { schema: { type: 'string' as const } } },
  },
  ...Object.fromEntries(
    [400, 401, 406, 413, 415, 429].map((status) => [status, { description: 'ErrorResponse', content: { 'application/json': { schema: ErrorResponse as object } } }]),
  ),
}

const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 429: ErrorResponse, 503: ErrorResponse }

/**
 * The Model Context Protocol both ways: `/mcp` serves the caller's knowledge base, the plugins and
 * the agents to MCP clients; `/mcp/servers` (admin) registers MCP servers whose tools the agents use.
 */
export function mcpModule(endpoint: McpEndpoint, servers: McpClientService, auth: AuthService, limiter: RateLimiter, audit: RequestAudit) {
  return new Elysia({ name: 'module:mcp', prefix: '/mcp', tags: ['MCP'] })
    .use(authPlugin(auth, limiter))
    .post('', ({ request, body, principal }) => endpoint.handle(request, body, { userId: principal.user.id, roles: principal.user.roles }, principal.sessionId), {
      auth: true,
      body: JsonRpcBody,
      detail: {
        responses: endpointResponses,
        summary: 'MCP server (Streamable HTTP, stateless): tools rag_search, rag_answer, list_collections, agents_run and <plugin>__<action>; your documents as resources',
        description:
          'Send JSON-RPC messages with Accept: application/json, text/event-stream. The answer is JSON, or an event stream for a tool call that asked for progress; a notification is answered 202 with no body. Authenticated like the API (access token or API key). GET (a standing event stream) is 405: the server is stateless.',
      },
    })
    .post('/servers', async ({ body, principal, request }) => {
      const server = await servers.register(body)
      // Never its headers, environment or arguments: they carry the server's credentials.
      audit.record(request, principal, { action: 'mcp_server.added', target: server.name, details: { transport: server.transport, ...(server.url ? { url: server.url } : {}), ...(server.command ? { command: server.command } : {}) } })
      return server
    }, {
      admin: true,
      body: RegisterServerRequest,
      response: { 200: McpServerView, ...errors },
      detail: { summary: 'Register an MCP server (admin): {name, url, headers?} for Streamable HTTP or {name, command, args?, env?} for stdio; its tools are listed at once' },
    })
    .get('/servers', () => andThen(servers.current(), () => servers.list()), {
      admin: true,
      response: { 200: McpServersResponse, ...errors },
      detail: { summary: 'Registered MCP servers with their status and tools (admin)' },
    })
    .get('/servers/:name', ({ params }) => andThen(servers.current(), () => servers.show(params.name)), {
      admin: true,
      params: ServerParams,
      response: { 200: McpServerView, ...errors },
      detail: { summary: 'One registered MCP server (admin)' },
    })
    .post('/servers/:name/refresh', ({ params }) => servers.refresh(params.name), {
      admin: true,
      params: ServerParams,
      response: { 200: McpServerView, ...errors },
      detail: { summary: 'List a server\'s tools again (admin); 503 TOOL_UNAVAILABLE when it cannot be reached' },
    })
    .post('/servers/:name/enable', ({ params }) => servers.setEnabled(params.name, true), {
      admin: true,
      params: ServerParams,
      response: { 200: McpServerView, ...errors },
      detail: { summary: 'Enable an MCP server: its tools are offered again (admin)' },
    })
    .post('/servers/:name/disable', ({ params }) => servers.setEnabled(params.name, false), {
      admin: true,
      params: ServerParams,
      response: { 200: McpServerView, ...errors },
      detail: { summary: 'Disable an MCP server: its tools are no longer offered, its process is stopped (admin)' },
    })
    .delete('/servers/:name', async ({ params, principal, request }) => {
      const removed = await servers.remove(params.name)
      audit.record(request, principal, { action: 'mcp_server.removed', target: removed.name })
      return removed
    }, {
      admin: true,
      params: ServerParams,
      response: { 200: RemovedServer, ...errors },
      detail: { summary: 'Remove an MCP server (admin)' },
    })
}
