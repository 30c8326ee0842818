import { Elysia } from 'elysia'
import { authPlugin } from '../../core/auth'
import type { RateLimiter } from '../../core/rate-limit'
import type { AuthService } from '../auth/service'
import { ErrorResponse } from '../system/model'
import { JsonRpcBody, McpServersResponse, McpServerView, RegisterServerRequest, RemovedServer, ServerParams } from './model'
import type { McpEndpoint } from './server'
import type { McpClientService } from './service'

const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 429: ErrorResponse, 503: ErrorResponse }

/**
 * The Model Context Protocol both ways: `/mcp` serves the caller's knowledge base, the plugins and
 * the agents to MCP clients; `/mcp/servers` (admin) registers MCP servers whose tools the agents use.
 */
export function mcpModule(endpoint: McpEndpoint, servers: McpClientService, auth: AuthService, limiter: RateLimiter) {
  return new Elysia({ name: 'module:mcp', prefix: '/mcp', tags: ['MCP'] })
    .use(authPlugin(auth, limiter))
    .post('', ({ request, body, principal }) => endpoint.handle(request, body, { userId: principal.user.id, roles: principal.user.roles }, principal.sessionId), {
      auth: true,
      body: JsonRpcBody,
      response: { 400: ErrorResponse, 401: ErrorResponse, 406: ErrorResponse, 413: ErrorResponse, 415: ErrorResponse, 429: ErrorResponse },
      detail: {
        summary: 'MCP server (Streamable HTTP, stateless): tools rag_search, rag_answer, list_collections, agents_run and <plugin>__<action>; your documents as resources',
        description:
          'Send JSON-RPC messages with Accept: application/json, text/event-stream. The answer is JSON, or an event stream for a tool call that asked for progress. Authenticated like the API (access token or API key).',
        responses: { 200: { description: 'The JSON-RPC response (application/json or text/event-stream)' }, 202: { description: 'A notification or response was accepted' } },
      },
    })
    .post('/servers', ({ body }) => servers.register(body), {
      admin: true,
      body: RegisterServerRequest,
      response: { 200: McpServerView, ...errors },
      detail: { summary: 'Register an MCP server (admin): {name, url, headers?} for Streamable HTTP or {name, command, args?, env?} for stdio; its tools are listed at once' },
    })
    .get('/servers', () => servers.list(), {
      admin: true,
      response: { 200: McpServersResponse, ...errors },
      detail: { summary: 'Registered MCP servers with their status and tools (admin)' },
    })
    .get('/servers/:name', ({ params }) => servers.show(params.name), {
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
    .delete('/servers/:name', ({ params }) => servers.remove(params.name), {
      admin: true,
      params: ServerParams,
      response: { 200: RemovedServer, ...errors },
      detail: { summary: 'Remove an MCP server (admin)' },
    })
}
