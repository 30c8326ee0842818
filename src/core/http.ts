import { Elysia, ValidationError } from 'elysia'
import { AppError, errorBody } from './errors'
import { NOT_BLANK } from './schema'
import type { RateLimiter } from './rate-limit'
import { rateLimitHeaders } from './rate-limit'

const REQUEST_ID = 'x-request-id'

export interface HttpOptions {
  maxRequestBytes: number
  maxRequestSize: string
  limiter: RateLimiter
  log?: (line: string) => void
}

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
function describeValidation(error: ValidationError): string {
  // Some schemas carry an `error` of their own that names the field (coerced query numbers).
  if (typeof error.customError === 'string') return error.customError
  const first = error.all[0] as { path?: string; message?: string; summary?: string; schema?: Schema; value?: unknown } | undefined
  const where = error.type === 'body' ? 'body' : error.type
  if (!first) return `Invalid ${where}`
  const field = first.path ? first.path.replace(/^\//, '').replaceAll('/', '.') : ''
  const expected = describeSchema(first.schema)
  const what = field && first.value === undefined ? 'is required' : expected ? `must be ${expected}` : (first.summary ?? first.message ?? 'is invalid')
  return field ? `${where}.${field}: ${what}` : `${where}: ${what}`
}

/** Peer address for per-IP limits; "local" for in-process requests (app.handle). */
export function clientAddress(server: { requestIP?(req: Request): { address: string } | null } | null, request: Request): string {
  return server?.requestIP?.(request)?.address ?? 'local'
}

/**
 * Request ids, the body-size limit, the anonymous rate limit and the one error handler
 * that turns every failure into the contract's ErrorResponse.
 */
export function httpCore(options: HttpOptions) {
  const log = options.log ?? ((line: string) => console.error(line))
  const tooLarge = () => new AppError('PAYLOAD_TOO_LARGE', `Request body exceeds the ${options.maxRequestSize} limit`)
  // No onRequest hook: one makes Elysia read `request.url` and build a full context on every
  // request, for every route (measured: ~20 % of /health throughput). Each check sits in the
  // latest hook that still runs before the work it guards.
  return new Elysia({ name: 'http-core' })
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
    .onTransform({ as: 'global' }, ({ request, path, server, set }) => {
      // Anonymous callers are limited per IP before validation, so malformed bodies count too.
      // Authenticated callers are limited per user once their token is verified (auth macro).
      // Health probes are exempt: monitors poll them, and they cost next to nothing.
      if (request.headers.has('authorization') || path === '/health') return
      Object.assign(set.headers, rateLimitHeaders(options.limiter.hit(`ip:${clientAddress(server, request)}`)))
    })
    .onAfterHandle({ as: 'global' }, ({ set }) => {
      set.headers[REQUEST_ID] = crypto.randomUUID()
    })
    .onError({ as: 'global' }, ({ code, error, set, request }) => {
      const requestId = (set.headers[REQUEST_ID] as string | undefined) ?? crypto.randomUUID()
      set.headers[REQUEST_ID] = requestId
      set.headers['content-type'] = 'application/json'
      let status: number
      let body
      // A failure inside a parse hook (the size check) reaches here wrapped in Elysia's ParseError.
      if (code === 'PARSE' && (error as Error).cause instanceof AppError) error = (error as Error).cause as AppError
      if (error instanceof AppError) {
        status = error.status
        Object.assign(set.headers, error.headers)
        body = error.toResponse(requestId)
      } else if (code === 'VALIDATION' && error instanceof ValidationError) {
        status = 400
        body = errorBody('VALIDATION_ERROR', describeValidation(error), requestId)
      } else if (code === 'PARSE') {
        status = 400
        body = errorBody('VALIDATION_ERROR', 'body: malformed request body (expected valid JSON)', requestId)
      } else if (code === 'NOT_FOUND') {
        status = 404
        body = errorBody('NOT_FOUND', `No route for ${request.method} ${new URL(request.url).pathname}`, requestId)
      } else if (code === 'INVALID_COOKIE_SIGNATURE' || code === 'INVALID_FILE_TYPE') {
        status = 400
        body = errorBody('VALIDATION_ERROR', String((error as Error).message), requestId)
      } else {
        status = 500
        log(`[${requestId}] ${request.method} ${new URL(request.url).pathname} failed: ${(error as Error)?.stack ?? String(error)}`)
        body = errorBody('INTERNAL_ERROR', 'Internal server error', requestId)
      }
      // Kept on the context too: hooks that run after the response (request recording) read it there.
      set.status = status
      return new Response(JSON.stringify(body), { status, headers: set.headers as Record<string, string> })
    })
}
