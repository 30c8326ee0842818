import { UNMATCHED } from './recorder'

interface Node {
  statics: Map<string, Node>
  param?: Node
  /** Patterns by method of routes that end here. */
  routes: Map<string, string>
  /** Patterns by method of routes ending in `*` below this segment. */
  wildcard?: Map<string, string>
}

/** Paths remembered per method, and the longest one remembered. */
const KNOWN_PATHS = 2048
const KNOWN_PATH_LENGTH = 256

const node = (): Node => ({ statics: new Map(), routes: new Map() })

/** The route registered for `method` among `routes`, with the fallbacks Elysia applies (HEAD → GET, ALL, WebSocket upgrades). */
function pick(routes: Map<string, string> | undefined, method: string): string | undefined {
  if (!routes) return undefined
  return routes.get(method) ?? (method === 'HEAD' ? routes.get('GET') : undefined) ?? routes.get('ALL') ?? (method === 'GET' ? routes.get('WS') : undefined)
}

/**
 * The route patterns of an app, to name a request by its pattern (`/agents/task/:taskId`) rather
 * than its path. Matching mirrors Elysia's router: a static segment wins over a parameter, which
 * wins over a wildcard; a trailing slash is ignored. Built once, from the app's route list, the
 * first time it is asked.
 */
export class RouteTable {
  private root: Node | null = null
  /** Patterns of paths already resolved, by method and path (bounded: emptied when full). */
  private readonly known = new Map<string, Map<string, string>>()

  constructor(private readonly list: () => readonly { method: string; path: string }[]) {}

  private build(): Node {
    const root = node()
    for (const { method, path } of this.list()) {
      const segments = path.split('/').filter(Boolean)
      const wildcard = segments.at(-1) === '*'
      let at = root
      for (const segment of wildcard ? segments.slice(0, -1) : segments) {
        if (segment.startsWith(':')) at = at.param ??= node()
        else {
          let next = at.statics.get(segment)
          if (!next) at.statics.set(segment, (next = node()))
          at = next
        }
      }
      if (wildcard) (at.wildcard ??= new Map()).set(method, path)
      else at.routes.set(method, path)
    }
    return root
  }

  /** The pattern of the route a request to `path` reaches, or the fixed UNMATCHED label. */
  resolve(method: string, path: string): string {
    this.root ??= this.build()
    const segments = path.split('/').filter(Boolean)
    return this.match(this.root, segments, 0, method) ?? UNMATCHED
  }

  /**
   * The pattern of the route a request to `url` reaches (see resolve()), remembered for paths
   * seen before: most requests go to a few paths, which then cost a lookup instead of a walk.
   */
  resolveUrl(method: string, url: string): string {
    const path = pathOf(url)
    let paths = this.known.get(method)
    if (!paths) {
      if (this.known.size >= KNOWN_PATHS) this.known.clear()
      this.known.set(method, (paths = new Map()))
    }
    let pattern = paths.get(path)
    if (pattern === undefined) {
      pattern = this.resolve(method, path)
      // Paths with ids or long ones are seldom seen twice: the memory stays bounded.
      if (path.length <= KNOWN_PATH_LENGTH) {
        if (paths.size >= KNOWN_PATHS) paths.clear()
        paths.set(path, pattern)
      }
    }
    return pattern
  }

  private match(at: Node, segments: string[], i: number, method: string): string | undefined {
    if (i === segments.length) return pick(at.routes, method) ?? pick(at.wildcard, method)
    const segment = segments[i]!
    const fixed = at.statics.get(segment)
    const viaStatic = fixed && this.match(fixed, segments, i + 1, method)
    if (viaStatic) return viaStatic
    const viaParam = at.param && this.match(at.param, segments, i + 1, method)
    if (viaParam) return viaParam
    return pick(at.wildcard, method)
  }
}

/** The path of a request URL, without its query string. */
export function pathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  if (start === -1) return '/'
  const query = url.indexOf('?', start)
  return url.slice(start, query === -1 ? undefined : query)
}
