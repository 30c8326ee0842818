import { describe, expect, test } from 'bun:test'
import { validate } from '@readme/openapi-parser'
import { makeServer } from '../helpers'
import { isNumeric, numericBodyFields, sample } from './openapi-sample'

// Everything here is driven by /openapi/json, so routes that modules add later are checked too.
const server = makeServer({ rateLimitMax: 1_000_000 })
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const
type Operation = { method: string; path: string; op: Record<string, any> }

async function document() {
  const res = await server.call('GET', '/openapi/json')
  expect(res.status).toBe(200)
  return res.json as { paths: Record<string, Record<string, any>>; openapi: string }
}

function operations(doc: Awaited<ReturnType<typeof document>>): Operation[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({ method, path, op: item[method] })),
  )
}

const isErrorResponse = (schema: any) =>
  schema?.type === 'object' && ['error', 'message', 'code', 'timestamp', 'requestId'].every((key) => schema.required?.includes(key))
/** The OpenAI-compatible routes (/v1) answer errors in OpenAI's shape, which its client libraries read. */
const isOpenAiError = (schema: any) =>
  schema?.type === 'object' && ['message', 'type', 'param', 'code'].every((key) => schema.properties?.error?.required?.includes(key))

/** Every schema node under `value`, with where it is. */
function* schemas(value: unknown, where: string): Generator<[string, Record<string, any>]> {
  if (!value || typeof value !== 'object') return
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) yield* schemas(item, `${where}[${i}]`)
    return
  }
  yield [where, value as Record<string, any>]
  for (const [key, child] of Object.entries(value)) yield* schemas(child, `${where}.${key}`)
}

describe('/openapi/json', () => {
  test('is a valid OpenAPI 3 document (checked by @readme/openapi-parser)', async () => {
    const doc = await document()
    expect(doc.openapi).toStartWith('3.')
    const result = await validate(structuredClone(doc) as never)
    expect(result.valid ? [] : result.errors).toEqual([])
    expect(result.valid).toBe(true)
  })

  test('documents every route of the app', async () => {
    const doc = await document()
    const documented = new Set(operations(doc).map(({ method, path }) => `${method.toUpperCase()} ${path}`))
    const routes = (server.app as unknown as { getGlobalRoutes(): { method: string; path: string; hooks: any }[] }).getGlobalRoutes()
    const missing = routes
      .filter((route) => !route.hooks?.detail?.hide)
      .map((route) => `${route.method === 'WS' ? 'GET' : route.method} ${route.path.replace(/:(\w+)/g, '{$1}')}`)
      .filter((key) => !documented.has(key))
    expect(missing).toEqual([])
  })

  test('every operation has a summary, a tag, its parameters, its body and its responses with ErrorResponse errors', async () => {
    const problems: string[] = []
    for (const { method, path, op } of operations(await document())) {
      const name = `${method.toUpperCase()} ${path}`
      if (!op.summary) problems.push(`${name}: no summary`)
      if (!op.tags?.length) problems.push(`${name}: no tag`)
      for (const param of path.match(/\{(\w+)\}/g) ?? []) {
        const declared = op.parameters?.find((p: any) => p.in === 'path' && `{${p.name}}` === param)
        if (!declared?.schema) problems.push(`${name}: path parameter ${param} undocumented`)
      }
      for (const parameter of op.parameters ?? []) if (!parameter.schema) problems.push(`${name}: parameter ${parameter.name} has no schema`)
      if (op.requestBody) {
        const content = Object.entries<any>(op.requestBody.content ?? {})
        if (!content.length || content.some(([, media]) => !media.schema || !Object.keys(media.schema).length)) problems.push(`${name}: request body without a schema`)
      }
      const responses = Object.entries<any>(op.responses ?? {})
      // A browser sign-in step (OpenID Connect) succeeds with a redirect: no body, a Location header.
      if (!responses.some(([status]) => /^(2\d\d|101|302)$/.test(status))) problems.push(`${name}: no success response`)
      for (const [status, response] of responses) {
        if (status === '101' || status === '204') continue
        if (status === '302') {
          if (!response.headers?.Location?.schema) problems.push(`${name}: redirect without a documented Location header`)
          continue
        }
        const media = Object.values<any>(response.content ?? {})
        if (!media.length || !media[0].schema) problems.push(`${name}: response ${status} has no schema`)
        else if (/^[45]/.test(status) && !(path.startsWith('/v1/') ? isOpenAiError(media[0].schema) : isErrorResponse(media[0].schema))) {
          problems.push(`${name}: response ${status} is not an ErrorResponse`)
        }
      }
      const secured = op.security === undefined || op.security.length > 0
      const takesInput = secured || op.requestBody || op.parameters?.length
      if (takesInput && !responses.some(([status]) => /^4\d\d$/.test(status))) problems.push(`${name}: no error responses`)
      if (secured && !op.responses?.['401']) problems.push(`${name}: needs a token but documents no 401`)
    }
    expect(problems).toEqual([])
  })

  test('numbers are integer or number (never "string or integer"), and every numeric input declares its range', async () => {
    const problems: string[] = []
    const doc = await document()
    for (const [where, node] of schemas(doc.paths, 'paths')) {
      if (Array.isArray(node.anyOf) && node.anyOf.some((m: any) => m?.type === 'string' && (m.format === 'integer' || m.format === 'numeric'))) {
        problems.push(`${where}: string-or-number union`)
      }
    }
    for (const { method, path, op } of operations(doc)) {
      const inputs: [string, any][] = (op.parameters ?? []).map((p: any) => [`${p.in}.${p.name}`, p.schema])
      const body = Object.values<any>(op.requestBody?.content ?? {})[0]?.schema
      for (const field of numericBodyFields(body)) inputs.push([field.name, field.schema])
      for (const [field, schema] of inputs) {
        if (!schema || !isNumeric(schema)) continue
        const node = schema.anyOf?.find((m: any) => m.type === 'integer' || m.type === 'number') ?? schema
        if (typeof (node.minimum ?? schema.minimum) !== 'number' || typeof (node.maximum ?? schema.maximum) !== 'number') {
          problems.push(`${method.toUpperCase()} ${path} ${field}: no minimum/maximum`)
        }
      }
    }
    expect(problems).toEqual([])
  })

  test('describes the /ws protocol: its message types and their shapes', async () => {
    const ws = (await document()).paths['/ws']?.get
    expect(ws.description).toContain('auth_success')
    expect(ws.responses['101']).toBeDefined()
    const client = ws['x-websocket'].client.oneOf.map((s: any) => s.properties.type.const)
    const replies = ws['x-websocket'].server.oneOf.map((s: any) => s.properties.type.const)
    expect(client).toEqual(expect.arrayContaining(['auth', 'stream_chat']))
    expect(replies).toEqual(expect.arrayContaining(['auth_success', 'stream_chunk', 'chat_response', 'error']))
    expect(ws['x-websocket'].messageTypes).toEqual(expect.arrayContaining(['auth', 'stream_chat']))
  })
})

describe('every numeric field of every route', () => {
  const ABSURD = ['1e400', '-1', '99999999999999999999', 'NaN']

  function outOfRange(schema: any, raw: string): boolean {
    const node = schema.anyOf?.find((m: any) => m.type === 'integer' || m.type === 'number') ?? schema
    const value = Number(raw)
    if (!Number.isFinite(value) || Math.abs(value) > Number.MAX_SAFE_INTEGER) return true
    const min = node.minimum ?? schema.minimum
    const max = node.maximum ?? schema.maximum
    return (typeof min === 'number' && value < min) || (typeof max === 'number' && value > max) || (node.type === 'integer' && !Number.isInteger(value))
  }

  test('1e400, -1, 99999999999999999999 and NaN are a 400 naming the field (never a 500) in query strings and JSON bodies', async () => {
    const { accessToken: token } = await server.login()
    const problems: string[] = []
    let probes = 0
    for (const { method, path, op } of operations(await document())) {
      const concrete = path.replace(/\{(\w+)\}/g, 'probe')
      const queryBase = new URLSearchParams()
      for (const p of op.parameters ?? []) if (p.in === 'query' && p.required) queryBase.set(p.name, String(sample(p.schema)))
      const bodySchema = op.requestBody?.content?.['application/json']?.schema
      const targets: { name: string; schema: any; request(raw: string): Promise<{ status: number; json: any }> }[] = []
      for (const p of op.parameters ?? []) {
        if (p.in !== 'query' || !isNumeric(p.schema)) continue
        targets.push({
          name: `query.${p.name}`,
          schema: p.schema,
          request: (raw) => {
            const query = new URLSearchParams(queryBase)
            query.set(p.name, raw)
            return server.call(method.toUpperCase(), `${concrete}?${query}`, { token, ...(bodySchema ? { body: sample(bodySchema) } : {}) })
          },
        })
      }
      for (const field of numericBodyFields(bodySchema)) {
        targets.push({
          name: field.name,
          schema: field.schema,
          request: (raw) => {
            const body = (sample(bodySchema) ?? {}) as Record<string, unknown>
            // JSON has no NaN: a client sends it as text. 1e400 and 99999999999999999999 go as JSON numbers.
            const marker = '__NUMBER__'
            field.set(body, raw === 'NaN' ? 'NaN' : marker)
            const text = JSON.stringify(body).replace(`"${marker}"`, raw)
            return server.call(method.toUpperCase(), `${concrete}${queryBase.size ? `?${queryBase}` : ''}`, { token, body: text })
          },
        })
      }
      for (const target of targets) {
        for (const raw of ABSURD) {
          probes++
          const res = await target.request(raw)
          const name = `${method.toUpperCase()} ${path} ${target.name}=${raw}`
          if (res.status >= 500) problems.push(`${name}: ${res.status}`)
          else if (outOfRange(target.schema, raw)) {
            if (res.status !== 400) problems.push(`${name}: ${res.status} instead of 400`)
            else if (path.startsWith('/v1/') ? !String(res.json?.error?.message).startsWith(target.name) : res.json?.code !== 'VALIDATION_ERROR' || !String(res.json?.message).startsWith(target.name)) {
              problems.push(`${name}: the message does not name the field: ${res.json?.message ?? res.json?.error?.message}`)
            }
          }
        }
      }
    }
    expect(problems).toEqual([])
    // The base routes alone have numeric fields in queries and bodies; a walk that found none is broken.
    expect(probes).toBeGreaterThanOrEqual(4 * 4)
  })
})

describe('every JSON route', () => {
  // JSON.parse takes any depth; what runs after it (validation, the error that describes it) once
  // overflowed the stack on such bodies: a 500.
  const DEPTH = 100_000
  const deepArray = () => `${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}`
  const deepObject = () => `${'{"a":'.repeat(DEPTH)}1${'}'.repeat(DEPTH)}`

  test('a body nested 100,000 levels deep (arrays or objects, whole or in a field) is a 400 VALIDATION_ERROR naming the field', async () => {
    const { accessToken: token } = await server.login()
    const problems: string[] = []
    let routes = 0
    for (const { method, path, op } of operations(await document())) {
      const bodySchema = op.requestBody?.content?.['application/json']?.schema
      if (!bodySchema) continue
      routes++
      const concrete = path.replace(/\{(\w+)\}/g, 'probe')
      const query = new URLSearchParams()
      for (const p of op.parameters ?? []) if (p.in === 'query' && p.required) query.set(p.name, String(sample(p.schema)))
      const url = `${concrete}${query.size ? `?${query}` : ''}`
      // The field: the first required one, else any property the body has.
      const field = bodySchema.required?.[0] ?? Object.keys(bodySchema.properties ?? {})[0] ?? 'x'
      const base = JSON.stringify({ ...((sample(bodySchema) ?? {}) as object), [field]: '__DEEP__' })
      const bodies: [string, string, string][] = [
        ['whole array', deepArray(), 'body.0'],
        ['whole object', deepObject(), 'body.a'],
        [`array in ${field}`, base.replace('"__DEEP__"', deepArray()), `body.${field}`],
        [`object in ${field}`, base.replace('"__DEEP__"', deepObject()), `body.${field}`],
      ]
      for (const [what, body, named] of bodies) {
        const res = await server.call(method.toUpperCase(), url, { token, body })
        const message = path.startsWith('/v1/') ? res.json?.error?.message : res.json?.message
        const code = path.startsWith('/v1/') ? 'VALIDATION_ERROR' : res.json?.code
        if (res.status !== 400 || code !== 'VALIDATION_ERROR' || !String(message).startsWith(`${named}:`)) {
          problems.push(`${method.toUpperCase()} ${path} (${what}): ${res.status} ${message}`)
        }
      }
    }
    expect(problems).toEqual([])
    expect(routes).toBeGreaterThan(20)
  }, 120_000)

  test('free-form values (document metadata) keep up to 100 levels; one more is refused and nothing is stored', async () => {
    const { accessToken: token } = await server.login()
    // body (1) > documents (2) > a document (3) > metadata (4) > 96 objects under tree = 100 levels.
    const nested = (levels: number): unknown => (levels === 0 ? 'bottom' : { deeper: nested(levels - 1) })
    const ingest = (levels: number, id: string) =>
      server.call('POST', '/rag/ingest', { token, body: { collection: 'depth', documents: [{ id, content: 'The harbour office opens at six.', metadata: { title: 'Harbour', tree: nested(levels) } }] } })
    const kept = await ingest(96, 'kept')
    expect(kept.status).toBe(200)
    expect(kept.json.ingested).toBe(1)
    const refused = await ingest(97, 'refused')
    expect(refused.status).toBe(400)
    expect(refused.json.message).toBe('body.documents: arrays and objects nest more than 100 levels deep')
    const found = await server.call('POST', '/rag/search', { token, body: { collection: 'depth', query: 'harbour office', limit: 10 } })
    expect(found.status).toBe(200)
    expect(found.json.results.map((r: { id: string }) => r.id)).toEqual(['kept'])
    let tree = found.json.results[0].metadata.tree
    let levels = 0
    while (tree && typeof tree === 'object') {
      tree = tree.deeper
      levels++
    }
    expect(levels).toBe(96)
  })
})

describe('HTTP methods', () => {
  test('a documented path with a method it does not have answers 405 with Allow listing the methods it has', async () => {
    const { accessToken: token } = await server.login()
    const doc = await document()
    for (const [path, item] of Object.entries(doc.paths)) {
      const concrete = path.replace(/\{(\w+)\}/g, 'probe')
      const methods = METHODS.filter((m) => item[m]).map((m) => m.toUpperCase())
      const unused = ['PUT', 'PATCH', 'DELETE', 'POST'].find((m) => !methods.includes(m))!
      const res = await server.call(unused, concrete, { token })
      expect(`${unused} ${path} ${res.status}`).toBe(`${unused} ${path} 405`)
      if (path.startsWith('/v1/')) expect(res.json.error).toMatchObject({ code: 'method_not_allowed', type: 'invalid_request_error' })
      else expect(res.json).toMatchObject({ error: true, code: 'METHOD_NOT_ALLOWED' })
      const allow = res.headers.get('allow')!.split(', ')
      for (const method of methods) expect(allow).toContain(method)
      expect(allow).not.toContain(unused)
    }
    const options = await server.call('OPTIONS', '/conversations', { token })
    expect(options.status).toBe(204)
    expect(options.headers.get('allow')).toBe('GET, HEAD, OPTIONS, POST')
    const unknown = await server.call('PUT', '/no/such/path', { token })
    expect(unknown.status).toBe(404)
    expect(unknown.headers.get('allow')).toBeNull()
  })
})
