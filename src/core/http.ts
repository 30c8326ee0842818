import { BlockList, isIP } from 'node:net'
import { Elysia, ValidationError } from 'elysia'
import { AppError, errorBody } from './errors'
import { isOpenAiPath, openAiErrorBody, OpenAiParamError } from './openai-error'
import { CorsPolicy, securityHeaders } from './headers'
import { findAbsurdNumber, findAbsurdQueryNumber, LARGEST_EXACT } from './numbers'
import { type RouteInfo, RouteTable } from './routes'
import { storageFull, STORAGE_FULL_MESSAGE } from './storage'
import { DATABASE_UNAVAILABLE_MESSAGE, databaseUnavailable, UNSTORABLE_TEXT_MESSAGE, unstorableText } from './database'
import { NOT_BLANK } from './schema'
import { findTooDeep, tooDeepMessage } from './json-depth'
import type { RateDecision, RateLimiter } from './rate-limit'
import { rateLimitHeaders } from './rate-limit'

const REQUEST_ID = 'x-request-id'

export interface HttpOptions {
  maxRequestBytes: number
  maxRequestSize: string
  limiter: RateLimiter
  log?: (line: string) => void
  /** Origins allowed to call from a browser (UAGENT_CORS_ORIGINS); none by default. */
  corsOrigins?: string[]
  /** Proxies whose X-Forwarded-For names the client (UAGENT_TRUSTED_PROXIES); none by default. */
  trustedProxies?: string[]
  /** Called when a request failed because PostgreSQL cannot be reached (so /health can say so). */
  onDatabaseLost?: (error: unknown) => void
  /** Called when a write failed because the storage is full (so /health can say so). */
  onStorageFull?: () => void
  /**
   * The server answering requests, for a caller's address (the anonymous rate limit). Read from
   * here, not from the hooks' context: a global hook that names `server` makes Elysia define it on
   * the context of every route, a property accessor per request.
   */
  server?: () => AddressSource | null | undefined
}

/** What tells a request's remote address (Bun's Server). */
export type AddressSource = { requestIP?(req: Request): { address: string } | null }

/** The context's parsed query string, named without a literal Elysia would see (see onBeforeHandle). */
const PARSED_QUERY = 'query'
/** The context's parsed body, named the same way: read by the transform hook of routes that parse one anyway. */
const PARSED_BODY = 'body'

const isJson = (contentType: string | null) => contentType !== null && /^application\/(?:[\w.+-]*\+)?json\s*(?:;|$)/i.test(contentType)
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

type Schema = {
  anyOf?: Schema[]
  const?: unknown
  enum?: unknown[]
  type?: string
  minimum?: number
  maximum?: number
  minLength?: number
  maxLength?: number
  minItems?: number
  maxItems?: number
  format?: string
  pattern?: string
}

const range = (min: number | undefined, max: number | undefined, unit = '') =>
  min !== undefined && max !== undefined
    ? ` from ${min} to ${max}${unit}`
    : min !== undefined
      ? ` of at least ${min}${unit}`
      : max !== undefined
        ? ` of at most ${max}${unit}`
        : ''

/** What a schema accepts, in words: "an integer from 1 to 100", "\"admin\" or \"user\"". */
export function describeSchema(schema: Schema | undefined): string | null {
  if (!schema || typeof schema !== 'object') return null
  if (schema.anyOf) {
    // Elysia accepts numbers also as numeric strings; the number is what the caller should send.
    const members = schema.anyOf.filter((member) => !(member.type === 'string' && (member.format === 'integer' || member.format === 'numeric')))
    const parts = [...new Set(members.map(describeSchema))]
    return parts.includes(null) ? null : parts.join(' or ')
  }
  if ('const' in schema) return JSON.stringify(schema.const)
  if (schema.enum) return schema.enum.map((value) => JSON.stringify(value)).join(' or ')
  switch (schema.type) {
    case 'integer':
    case 'number': {
      const kind = schema.type === 'integer' ? 'an integer' : 'a number'
      const { minimum: min, maximum: max } = schema
      return min !== undefined && max !== undefined ? `${kind} from ${min} to ${max}` : min !== undefined ? `${kind} >= ${min}` : max !== undefined ? `${kind} <= ${max}` : kind
    }
    case 'string':
      if (schema.format === 'email') return 'a valid email address'
      if (schema.format === 'date-time') return 'an ISO 8601 date-time'
      if (schema.pattern === NOT_BLANK) return `a string${range(schema.minLength, schema.maxLength, ' characters')}, not blank`
      if (schema.pattern) return `a string matching ${schema.pattern}`
      return `a string${schema.minLength === 1 && schema.maxLength === undefined ? ' (not empty)' : range(schema.minLength, schema.maxLength, ' characters')}`
    case 'boolean':
      return 'true or false'
    case 'null':
      return 'null'
    case 'array':
      return `an array${range(schema.minItems, schema.maxItems, ' items')}`
    case 'object':
      return 'an object'
    default:
      return null
  }
}

/** Describes the first failing field of a validation error, e.g. "body.limit: must be an integer from 1 to 100". */
function describeValidation(error: ValidationError, request: Request): string {
  // Some schemas carry an `error` of their own that names the field (coerced query numbers).
  if (typeof error.customError === 'string') return error.customError
  const first = error.all[0] as { path?: string; message?: string; summary?: string; schema?: Schema; value?: unknown } | undefined
  let where = error.type === 'body' ? 'body' : error.type
  // A coerced query number that fails its bounds is reported on the value alone ("property"):
  // the query parameter that holds that value is the field.
  if (where === 'property' && first) {
    const params = new URL(request.url).searchParams
    for (const [name, raw] of params) {
      if (raw === first.value || (raw.trim() !== '' && Number(raw) === first.value)) {
        const expected = describeSchema(first.schema)
        return `query.${name}: ${expected ? `must be ${expected}` : (first.summary ?? first.message ?? 'is invalid')}`
      }
    }
    where = 'query'
  }
  if (!first) return `Invalid ${where}`
  // The body as a whole is missing or not an object: say what is expected, not which field is absent.
  if (where === 'body' && (error.value === undefined || error.value === null || typeof error.value !== 'object')) {
    return 'body: a JSON object is expected (send Content-Type: application/json)'
  }
  const field = first.path ? first.path.replace(/^\//, '').replaceAll('/', '.') : ''
  const expected = describeSchema(first.schema)
  const what = field && first.value === undefined ? 'is required' : expected ? `must be ${expected}` : (first.summary ?? first.message ?? 'is invalid')
  return field ? `${where}.${field}: ${what}` : `${where}: ${what}`
}

/** The body field a validation error is about, e.g. "messages.0.content" (null when not a body field). */
function validationParam(error: ValidationError): string | null {
  const first = error.all[0] as { path?: string } | undefined
  return error.type === 'body' && first?.path ? first.path.replace(/^\//, '').replaceAll('/', '.') : null
}

/**
 * The proxies (nginx in front of replicas) whose X-Forwarded-For is believed: addresses or CIDR
 * ranges (UAGENT_TRUSTED_PROXIES). Null when none are configured: the header is then ignored, so
 * that no client can choose its own rate-limit key.
 */
export function trustedProxies(entries: readonly string[]): BlockList | null {
  if (!entries.length) return null
  const list = new BlockList()
  for (const entry of entries) {
    const [address, bits] = entry.split('/') as [string, string | undefined]
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4'
    if (bits === undefined) list.addAddress(address, family)
    else list.addSubnet(address, Number(bits), family)
  }
  return list
}

const familyOf = (address: string) => (isIP(address) === 6 ? 'ipv6' : 'ipv4')

/**
 * Peer address for per-IP limits; "local" for in-process requests (app.handle). When the peer is a
 * trusted proxy, the client is the right-most address of X-Forwarded-For that is not a trusted
 * proxy itself (the left-most ones are whatever the client sent).
 */
export function clientAddress(server: AddressSource | null, request: Request, proxies: BlockList | null = null): string {
  const peer = server?.requestIP?.(request)?.address ?? 'local'
  if (proxies === null || peer === 'local' || !proxies.check(peer, familyOf(peer))) return peer
  const forwarded = request.headers.get('x-forwarded-for')
  if (!forwarded) return peer
  const hops = forwarded.split(',').map((hop) => hop.trim()).filter((hop) => isIP(hop) !== 0)
  for (let i = hops.length - 1; i >= 0; i--) if (!proxies.check(hops[i]!, familyOf(hops[i]!))) return hops[i]!
  return hops[0] ?? peer
}

const REQUEST_ID_OF = Symbol('requestId')

/**
 * The request's id, made on first use and kept on the request: a handler that records it (the
 * audit log) and the response's X-Request-Id carry the same one.
 */
export function requestIdOf(request: Request): string {
  const holder = request as Request & { [REQUEST_ID_OF]?: string }
  return (holder[REQUEST_ID_OF] ??= crypto.randomUUID())
}

/**
 * Request ids, the body-size limit, the anonymous rate limit and the one error handler
 * that turns every failure into the contract's ErrorResponse.
 */
export function httpCore(options: HttpOptions) {
  const log = options.log ?? ((line: string) => console.error(line))
  const cors = new CorsPolicy(options.corsOrigins ?? [])
  const tooLarge = () => new AppError('PAYLOAD_TOO_LARGE', `Request body exceeds the ${options.maxRequestSize} limit`)
  // The whole app's routes (this plugin's getGlobalRoutes answers for the app it is used in),
  // read on first use, once every module is registered: modules added later are covered too.
  const core = new Elysia({ name: 'http-core' })
  const routes = new RouteTable(() => (core as unknown as { getGlobalRoutes(): RouteInfo[] }).getGlobalRoutes())
  const decorate = (headers: Record<string, unknown>, request: Request, pathname: string) => {
    Object.assign(headers, securityHeaders(pathname))
    if (cors.enabled) Object.assign(headers, cors.headersFor(request.headers.get('origin')))
  }
  type TransformContext = { request: Request; path: string; route: string; set: { headers: Record<string, unknown> }; [PARSED_BODY]?: unknown }
  // Anonymous callers are limited per IP before validation, so malformed bodies count too.
  // Authenticated callers are limited per user once their token is verified (auth macro).
  // Health probes are exempt: monitors poll them, and they cost next to nothing.
  const anonymous = (request: Request, path: string) => !request.headers.has('authorization') && path !== '/health'
  const proxies = trustedProxies(options.trustedProxies ?? [])
  const ipKey = (request: Request) => `ip:${clientAddress(options.server?.() ?? null, request, proxies)}`
  const refuseForm = (request: Request, route: string) => {
    // A JSON route sent something else (curl -d sends a form): say so, rather than which field is missing.
    if (BODY_METHODS.has(request.method) && !isJson(request.headers.get('content-type')) && hasBody(request) && routes.takesJson(request.method, route)) {
      throw new AppError('UNSUPPORTED_MEDIA_TYPE', `A JSON body is expected: send it with Content-Type: application/json (got ${request.headers.get('content-type') ?? 'no Content-Type'})`)
    }
  }
  // Runs after the body is parsed and before it is validated: a value nested deeper than the
  // validator (and what describes its errors) can walk is refused here, for every route at once.
  const refuseTooDeep = (body: unknown) => {
    const field = findTooDeep(body)
    if (field !== null) throw new AppError('VALIDATION_ERROR', tooDeepMessage(field ? `body.${field}` : 'body'))
  }
  // A block, not an async arrow: Elysia reads a hook's source to decide whether to await it. The
  // context is never passed whole to a function: Elysia would take it as used whole, and build
  // everything (query, cookies, server) for every route.
  const transform = (context: TransformContext) => {
    const { request, path, route, set } = context
    refuseForm(request, route)
    refuseTooDeep(context[PARSED_BODY])
    if (anonymous(request, path)) Object.assign(set.headers, rateLimitHeaders(options.limiter.hit(ipKey(request)) as RateDecision))
  }
  // With a rate limit shared by replicas (Redis) the count answers later: an awaited hook.
  const sharedTransform = async (context: TransformContext) => {
    const { request, path, route, set } = context
    refuseForm(request, route)
    refuseTooDeep(context[PARSED_BODY])
    if (anonymous(request, path)) Object.assign(set.headers, rateLimitHeaders(await options.limiter.hit(ipKey(request))))
  }
  // No onRequest hook: one makes Elysia read `request.url` and build a full context on every
  // request, for every route (measured: ~20 % of /health throughput). Each check sits in the
  // latest hook that still runs before the work it guards.
  return core
    .onParse({ as: 'global' }, async ({ request }) => {
      // Bodies are refused before they are read: by Content-Length, or by measuring those
      // without it (chunked uploads, in-process requests).
      const length = request.headers.get('content-length')
      if (length !== null) {
        if (Number(length) > options.maxRequestBytes) throw tooLarge()
        return
      }
      if (request.body === null) return
      const size = (await request.clone().arrayBuffer()).byteLength
      if (size > options.maxRequestBytes) throw tooLarge()
    })
    .onTransform({ as: 'global' }, options.limiter.asynchronous ? sharedTransform : transform)
    .onBeforeHandle({ as: 'global' }, (context) => {
      const { body, request, route } = context
      // Validation lets numbers beyond exact range through wherever a schema has no upper bound.
      // The parsed query is read under a computed key on purpose: Elysia infers from a hook's source
      // what every route's context must hold, and a global hook naming the query made every route
      // parse its query string (reading request.url for it), /health included. Read this way, it is
      // there for exactly the routes that parse it anyway (a query schema, or a handler reading it):
      // the only ones whose handlers see query values.
      const inQuery = findAbsurdQueryNumber(context[PARSED_QUERY] as Record<string, unknown> | undefined)
      if (inQuery !== null) throw absurd(`query.${inQuery}`)
      if (body !== undefined && body !== null && typeof body === 'object') {
        const inBody = findAbsurdNumber(body, routes.bodySchema(request.method, route))
        if (inBody !== null) throw absurd(inBody ? `body.${inBody}` : 'body')
      }
    })
    .onAfterHandle({ as: 'global' }, ({ set, request, path }) => {
      set.headers[REQUEST_ID] = requestIdOf(request)
      decorate(set.headers, request, path)
    })
    .onError({ as: 'global' }, ({ code, error, set, request }) => {
      const requestId = (set.headers[REQUEST_ID] as string | undefined) ?? requestIdOf(request)
      const pathname = new URL(request.url).pathname
      set.headers[REQUEST_ID] = requestId
      set.headers['content-type'] = 'application/json'
      decorate(set.headers, request, pathname)
      let status: number
      let body
      let param: string | null = null
      // A failure inside a parse hook (the size check) reaches here wrapped in Elysia's ParseError.
      if (code === 'PARSE' && (error as Error).cause instanceof AppError) error = (error as Error).cause as AppError
      if (error instanceof AppError) {
        status = error.status
        Object.assign(set.headers, error.headers)
        body = error.toResponse(requestId)
      } else if (code === 'VALIDATION' && error instanceof ValidationError) {
        status = 400
        body = errorBody('VALIDATION_ERROR', describeValidation(error, request), requestId)
        param = validationParam(error)
      } else if (code === 'PARSE') {
        status = 400
        body = errorBody('VALIDATION_ERROR', 'body: malformed request body (expected valid JSON)', requestId)
      } else if (code === 'NOT_FOUND') {
        const allowed = routes.allowed(pathname)
        const preflight = cors.preflight(request, allowed)
        if (preflight) return preflight
        if (allowed.length && request.method === 'OPTIONS') {
          // OPTIONS asks what a path allows: the answer is the Allow header.
          set.headers.allow = allowed.join(', ')
          delete set.headers['content-type']
          return new Response(null, { status: 204, headers: set.headers as Record<string, string> })
        }
        if (allowed.length) {
          status = 405
          set.headers.allow = allowed.join(', ')
          body = errorBody('METHOD_NOT_ALLOWED', `${request.method} is not allowed on ${pathname}; allowed: ${allowed.join(', ')}`, requestId)
        } else {
          status = 404
          body = errorBody('NOT_FOUND', `No route for ${request.method} ${pathname}`, requestId)
        }
      } else if (code === 'INVALID_COOKIE_SIGNATURE' || code === 'INVALID_FILE_TYPE') {
        status = 400
        body = errorBody('VALIDATION_ERROR', String((error as Error).message), requestId)
      } else if (unstorableText(error)) {
        status = 400
        body = errorBody('VALIDATION_ERROR', UNSTORABLE_TEXT_MESSAGE, requestId)
      } else if (databaseUnavailable(error)) {
        // PostgreSQL lost while serving: a temporary condition, reported by /health until it answers again.
        options.onDatabaseLost?.(error)
        status = 503
        body = errorBody('DATABASE_UNAVAILABLE', DATABASE_UNAVAILABLE_MESSAGE, requestId)
      } else if (storageFull(error)) {
        // A full disk (or SQLite's page limit) is a temporary condition of the server, not a bug.
        options.onStorageFull?.()
        log(`[${requestId}] ${request.method} ${pathname}: storage full (${(error as Error)?.message ?? String(error)})`)
        status = 507
        body = errorBody('INSUFFICIENT_STORAGE', STORAGE_FULL_MESSAGE, requestId)
      } else if ((error as Error)?.name === 'AbortError' && request.signal.aborted) {
        // The client went away and its work was stopped (the work pool): no one reads this answer,
        // and it is no server fault. 499 is nginx's "client closed request", as request records show it.
        status = 499
        body = errorBody('INTERNAL_ERROR', 'The client closed the request before its answer; its work was stopped', requestId)
      } else {
        status = 500
        log(`[${requestId}] ${request.method} ${pathname} failed: ${(error as Error)?.stack ?? String(error)}`)
        body = errorBody('INTERNAL_ERROR', 'Internal server error', requestId)
      }
      // Kept on the context too: hooks that run after the response (request recording) read it there.
      set.status = status
      // The OpenAI-compatible routes answer in OpenAI's error shape, which its client libraries read.
      if (isOpenAiPath(pathname)) {
        const specific = error instanceof OpenAiParamError ? error : null
        const shaped = openAiErrorBody(status, body.code, body.message, specific?.param ?? param, specific?.openAiCode)
        return new Response(JSON.stringify(shaped), { status, headers: set.headers as Record<string, string> })
      }
      return new Response(JSON.stringify(body), { status, headers: set.headers as Record<string, string> })
    })
}

function hasBody(request: Request): boolean {
  const length = request.headers.get('content-length')
  return length !== null ? Number(length) > 0 : request.body !== null
}

const absurd = (field: string) => new AppError('VALIDATION_ERROR', `${field}: must be a number between ${-LARGEST_EXACT} and ${LARGEST_EXACT}`)
