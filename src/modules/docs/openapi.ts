import { toOpenAPISchema } from '@elysiajs/openapi'
import { takesFiles, type RouteInfo } from '../../core/routes'
import { ErrorResponse } from '../system/model'
import { ClientMessages, ServerMessages, WS_DESCRIPTION } from '../ws/protocol'

type Node = Record<string, unknown>
type AppLike = { getGlobalRoutes(): RouteInfo[]; getGlobalDefinitions?(): unknown }

/** The keys of a JSON Schema that hold sub-schemas. */
const CHILDREN = ['items', 'additionalProperties', 'not'] as const
const LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'] as const
const MAPS = ['properties', 'patternProperties'] as const

const isNumericString = (node: Node) => node.type === 'string' && (node.format === 'integer' || node.format === 'numeric')

/**
 * Cleans a schema for readers: Elysia's coercible numbers (`numeric string | integer`) become the
 * number they stand for (the document said "string or integer" and showed "0" as the example),
 * and our custom `error` messages, meaningful only to the validator, are dropped.
 */
export function cleanSchema(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(cleanSchema)
  if (!value || typeof value !== 'object') return value
  let node = { ...(value as Node) }
  if (Array.isArray(node.anyOf)) {
    const members = (node.anyOf as Node[]).filter((member) => !(member && typeof member === 'object' && isNumericString(member)))
    if (members.length !== (node.anyOf as Node[]).length) {
      const { anyOf: _, ...outer } = node
      node = members.length === 1 ? { ...outer, ...members[0] } : { ...outer, anyOf: members }
    }
  }
  delete node.error
  for (const key of CHILDREN) if (node[key] && typeof node[key] === 'object') node[key] = cleanSchema(node[key])
  for (const key of LISTS) if (Array.isArray(node[key])) node[key] = (node[key] as unknown[]).map(cleanSchema)
  for (const key of MAPS) {
    if (node[key] && typeof node[key] === 'object') node[key] = Object.fromEntries(Object.entries(node[key] as Node).map(([k, v]) => [k, cleanSchema(v)]))
  }
  return node
}

function cleanOperation(operation: Node, hooks: RouteInfo['hooks'] | undefined): void {
  for (const parameter of (operation.parameters as Node[] | undefined) ?? []) parameter.schema = cleanSchema(parameter.schema)
  const body = operation.requestBody as { content?: Record<string, { schema?: unknown }> } | undefined
  if (body?.content) {
    const schema = Object.values(body.content)[0]?.schema ?? hooks?.body
    // A JSON route answers 415 to anything but JSON; a file upload is multipart.
    if (schema) body.content = { [takesFiles(schema) ? 'multipart/form-data' : 'application/json']: { schema: cleanSchema(schema) } }
  }
  // Responses with no body (a redirect's Location) are declared in `detail.responses`, which the generator drops.
  const declared = ((hooks as { detail?: { responses?: Node } } | undefined)?.detail)?.responses
  if (declared) operation.responses = { ...declared, ...((operation.responses as Node | undefined) ?? {}) }
  for (const response of Object.values((operation.responses as Record<string, Node> | undefined) ?? {})) {
    const content = response.content as Record<string, { schema?: unknown }> | undefined
    if (content) for (const media of Object.values(content)) if (media.schema) media.schema = cleanSchema(media.schema)
  }
}

const wsOperation = (types: string[]) => ({
  tags: ['WebSocket'],
  summary: 'WebSocket channel: auth, stream_chat, voice_command, plugin_execute, agent_task',
  description: WS_DESCRIPTION,
  operationId: 'websocket',
  security: [],
  parameters: [
    { name: 'Upgrade', in: 'header', required: true, schema: { type: 'string', enum: ['websocket'] } },
    { name: 'Connection', in: 'header', required: true, schema: { type: 'string' } },
  ],
  responses: {
    '101': { description: 'Switching Protocols: the socket is open; authenticate with an auth message' },
    '400': { description: 'Not a WebSocket upgrade request', content: { 'application/json': { schema: cleanSchema(ErrorResponse) } } },
  },
  'x-websocket': {
    messageTypes: types,
    client: { oneOf: Object.values(ClientMessages).map(cleanSchema), discriminator: { propertyName: 'type' } },
    server: { oneOf: Object.values(ServerMessages).map(cleanSchema), discriminator: { propertyName: 'type' } },
  },
})

/**
 * The OpenAPI document of the whole app. The body-size check is a global parse hook, which
 * @elysiajs/openapi takes for "this route parses its own body" and so drops every body schema
 * (elysia issue 1720): the routes are handed over without unnamed parse hooks.
 */
export function buildOpenApiDocument(app: AppLike, documentation: Node, socketTypes: string[]): Node {
  const routes = app.getGlobalRoutes()
  const hooksByRoute = new Map(routes.map((route) => [`${route.method.toLowerCase()} ${route.path}`, route.hooks]))
  const view = {
    getGlobalRoutes: () =>
      routes
        .filter((route) => route.method !== 'WS')
        .map((route) => {
          const parse = (route.hooks?.parse ?? []).filter((parser) => typeof parser.fn === 'string')
          return { ...route, hooks: { ...route.hooks, parse: parse.length ? parse : undefined } }
        }),
    getGlobalDefinitions: () => app.getGlobalDefinitions?.(),
  }
  const generated = toOpenAPISchema(view as never, undefined, undefined, undefined, '3.1.0') as { paths: Record<string, Record<string, Node>>; components?: { schemas?: Node } }
  for (const [path, item] of Object.entries(generated.paths)) {
    const elysiaPath = path.replace(/\{([^}]+)\}/g, ':$1')
    for (const [method, operation] of Object.entries(item)) cleanOperation(operation, hooksByRoute.get(`${method} ${elysiaPath}`))
  }
  if (routes.some((route) => route.method === 'WS' && route.path === '/ws')) generated.paths['/ws'] = { get: wsOperation(socketTypes) }
  const components = (documentation.components ?? {}) as Node
  return {
    openapi: '3.1.0',
    ...documentation,
    paths: generated.paths,
    components: { ...components, schemas: { ...((generated.components?.schemas as Node) ?? {}), ...((components.schemas as Node) ?? {}) } },
  }
}
