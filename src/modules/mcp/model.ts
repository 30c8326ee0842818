import { t } from 'elysia'

const name = t.String({
  pattern: '^[a-z0-9][a-z0-9-]{0,31}$',
  error: 'body.name: must be 1 to 32 characters: lowercase letters, digits and "-", starting with a letter or digit',
  description: 'Its tools are named <name>__<tool>',
})

const HttpServer = t.Object(
  {
    name,
    url: t.String({ minLength: 1, maxLength: 2048, description: 'The Streamable HTTP endpoint, e.g. http://127.0.0.1:8931/mcp' }),
    headers: t.Optional(t.Record(t.String({ maxLength: 200 }), t.String({ maxLength: 8192 }), { description: 'Sent with every request (e.g. Authorization); never shown again' })),
  },
  { additionalProperties: false, title: 'Streamable HTTP server' },
)

const StdioServer = t.Object(
  {
    name,
    command: t.String({ minLength: 1, maxLength: 1024, description: 'The program to start, e.g. npx or /usr/local/bin/my-mcp-server' }),
    args: t.Optional(t.Array(t.String({ maxLength: 4096 }), { maxItems: 100 })),
    env: t.Optional(
      t.Record(t.String({ maxLength: 200 }), t.String({ maxLength: 8192 }), {
        description: 'Its environment beyond PATH, HOME, LANG, TERM, TZ (the server\'s own variables are never passed; UAGENT_* are refused)',
      }),
    ),
  },
  { additionalProperties: false, title: 'stdio server (a command)' },
)

export const RegisterServerRequest = t.Union([HttpServer, StdioServer], {
  error:
    'body: expected {name, url, headers?} for a Streamable HTTP server or {name, command, args?, env?} for a stdio server, with name 1 to 32 characters: lowercase letters, digits and "-"',
})

export const ServerParams = t.Object({ name: t.String({ minLength: 1, maxLength: 200 }) })

export const McpServerView = t.Object({
  name: t.String(),
  transport: t.Union([t.Literal('http'), t.Literal('stdio')]),
  url: t.Optional(t.String({ description: 'Credentials in it are shown as ***' })),
  command: t.Optional(t.String()),
  args: t.Optional(t.Array(t.String())),
  headerNames: t.Array(t.String(), { description: 'Names of the headers sent (their values are never shown)' }),
  envNames: t.Array(t.String(), { description: 'Names of the variables set (their values are never shown)' }),
  enabled: t.Boolean(),
  status: t.Union([t.Literal('connected'), t.Literal('idle'), t.Literal('unavailable'), t.Literal('disabled')], {
    description: 'connected (open now), idle (opened on the next call), unavailable (failed: its tools are not offered until it answers again), disabled',
  }),
  error: t.Nullable(t.String({ description: 'Why it is unavailable' })),
  tools: t.Array(t.Object({ name: t.String({ description: 'As agents and models call it: <server>__<tool>' }), tool: t.String({ description: "The server's own name for it" }), description: t.String() })),
  createdAt: t.String({ format: 'date-time' }),
  updatedAt: t.String({ format: 'date-time' }),
})

export const McpServersResponse = t.Object({ servers: t.Array(McpServerView), total: t.Integer() })
export const RemovedServer = t.Object({ success: t.Boolean(), name: t.String() })

/** POST /mcp takes a JSON-RPC message (or a batch): documented, checked by the MCP transport itself. */
export const JsonRpcBody = t.Union([t.Record(t.String(), t.Unknown()), t.Array(t.Record(t.String(), t.Unknown()))], {
  description: 'A JSON-RPC 2.0 message of the Model Context Protocol (initialize, tools/list, tools/call, resources/list, resources/read, …)',
})
