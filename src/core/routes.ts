/** What the HTTP core needs to know of the app's routes, read once they are all registered. */
export interface RouteInfo {
  method: string
  path: string
  hooks?: { body?: unknown; parse?: { fn: unknown }[] }
}

type Matcher = { pattern: RegExp; methods: Set<string> }

/** Whether a schema (TypeBox / JSON Schema) takes files, so that its body is multipart, not JSON. */
export function takesFiles(schema: unknown, depth = 0): boolean {
  if (!schema || typeof schema !== 'object' || depth > 8) return false
  const node = schema as Record<string | symbol, unknown>
  if (node.format === 'binary' || node.type === 'File' || node.type === 'Files') return true
  const kind = node[Symbol.for('TypeBox.Kind')]
  if (kind === 'File' || kind === 'Files' || (typeof node.default === 'string' && node.default === 'File')) return true
  for (const key of ['properties', 'items', 'anyOf', 'oneOf', 'allOf']) {
    const child = node[key]
    if (Array.isArray(child) ? child.some((c) => takesFiles(c, depth + 1)) : child && typeof child === 'object' && (key === 'items' ? takesFiles(child, depth + 1) : Object.values(child).some((c) => takesFiles(c, depth + 1)))) return true
  }
  return false
}

/**
 * The route table of the whole app: which methods a path answers to (for 405 and `Allow`), and
 * which routes take a JSON body (for 415). Built on first use, when every module is registered.
 */
export class RouteTable {
  private matchers: Matcher[] | null = null
  private jsonBodies: Set<string> | null = null
  private bodies: Map<string, unknown> | null = null

  constructor(private readonly source: () => RouteInfo[]) {}

  private build() {
    const byPath = new Map<string, Set<string>>()
    const json = new Set<string>()
    const bodies = new Map<string, unknown>()
    for (const route of this.source()) {
      const method = route.method === 'WS' ? 'GET' : route.method.toUpperCase()
      const methods = byPath.get(route.path) ?? new Set<string>()
      methods.add(method)
      byPath.set(route.path, methods)
      const namedParsers = (route.hooks?.parse ?? []).filter((parser) => typeof parser.fn === 'string')
      if (route.hooks?.body) bodies.set(`${method} ${route.path}`, route.hooks.body)
      if (route.hooks?.body && !namedParsers.length && !takesFiles(route.hooks.body)) json.add(`${method} ${route.path}`)
    }
    this.matchers = [...byPath].map(([path, methods]) => ({
      pattern: new RegExp(
        `^${path
          .split('/')
          .map((part) => (part === '*' ? '.*' : part.startsWith(':') ? (part.endsWith('?') ? '[^/]*' : '[^/]+') : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
          .join('/')}/?$`,
      ),
      methods,
    }))
    this.jsonBodies = json
    this.bodies = bodies
  }

  /** The methods a concrete path answers to; empty when no route has that path. */
  allowed(pathname: string): string[] {
    if (!this.matchers) this.build()
    const methods = new Set<string>()
    for (const matcher of this.matchers!) if (matcher.pattern.test(pathname)) for (const method of matcher.methods) methods.add(method)
    if (methods.has('ALL')) return []
    if (methods.has('GET')) methods.add('HEAD')
    if (methods.size) methods.add('OPTIONS')
    return [...methods].sort()
  }

  /** Whether the route (method + registered path) declares a JSON body. */
  takesJson(method: string, routePath: string): boolean {
    if (!this.jsonBodies) this.build()
    return this.jsonBodies!.has(`${method} ${routePath}`)
  }

  /** The body schema a route declares, if any. */
  bodySchema(method: string, routePath: string): unknown {
    if (!this.bodies) this.build()
    return this.bodies!.get(`${method} ${routePath}`)
  }
}
