// The MCP SDK loads on first use: with zod and Ajv it weighs ~15 MB of an idle server's memory,
// and a server that no MCP client talks to (and that calls no MCP server) never needs it.

type ServerParts = [
  typeof import('@modelcontextprotocol/sdk/server/index.js'),
  typeof import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'),
  typeof import('@modelcontextprotocol/sdk/types.js'),
  typeof import('@modelcontextprotocol/sdk/validation/ajv'),
]
type ClientParts = [
  typeof import('@modelcontextprotocol/sdk/client/index.js'),
  typeof import('@modelcontextprotocol/sdk/client/stdio.js'),
  typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
  typeof import('@modelcontextprotocol/sdk/types.js'),
]

export type ServerSdk = ServerParts[0] & ServerParts[1] & ServerParts[2] & ServerParts[3]
export type ClientSdk = ClientParts[0] & ClientParts[1] & ClientParts[2] & ClientParts[3]

let server: Promise<ServerSdk> | undefined
let client: Promise<ClientSdk> | undefined
let types: ServerParts[2] | undefined

/** The SDK's server side (the promise is cached, not the result). */
export function loadServerSdk(): Promise<ServerSdk> {
  server ??= Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
    import('@modelcontextprotocol/sdk/validation/ajv'),
  ]).then((parts) => {
    types = parts[2]
    return Object.assign({}, ...parts) as ServerSdk
  })
  return server
}

/** The SDK's client side (the promise is cached, not the result). */
export function loadClientSdk(): Promise<ClientSdk> {
  client ??= Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]).then((parts) => {
    types = parts[3]
    return Object.assign({}, ...parts) as ClientSdk
  })
  return client
}

/** Whether `error` is the SDK's McpError (never, while the SDK has not been loaded). */
export function isMcpError(error: unknown): error is InstanceType<ServerParts[2]['McpError']> {
  return types !== undefined && error instanceof types.McpError
}

/** The protocol's error codes this server tells apart (the SDK's ErrorCode, fixed by MCP and JSON-RPC). */
export const MCP_CONNECTION_CLOSED = -32000
export const MCP_REQUEST_TIMEOUT = -32001
export const MCP_INVALID_PARAMS = -32602
