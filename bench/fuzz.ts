// A fuzz of every route in /openapi/json against `bun run start`'s server: for each operation,
// requests built from its schemas (path, query and body), most of them bent out of shape (wrong
// types, missing and extra fields, odd strings, non-JSON bodies, arrays and objects nested up to
// 100,000 levels deep), sent 8 at a time by an admin, a
// plain user or nobody. Counts the answers with status >= 500 (goal: none), over BENCH_FUZZ_RUNS
// runs (default 5), each on a new server with its own seed.
import { startServerProcess } from './server'

const RUNS = Number(process.env.BENCH_FUZZ_RUNS ?? 5)
const PER_OPERATION = Number(process.env.BENCH_FUZZ_PER_OPERATION ?? 32)
const root = process.env.BENCH_SERVER_ROOT ?? `${import.meta.dir}/..`

type Schema = { type?: string | string[]; properties?: Record<string, Schema>; required?: string[]; items?: Schema; enum?: unknown[]; anyOf?: Schema[]; minimum?: number; maximum?: number; minLength?: number; maxLength?: number; $ref?: string }

/** mulberry32: a small seeded generator, so that a run can be repeated. */
function seeded(seed: number) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const ODD_STRINGS = ['', ' ', 'a', '\u0000', '\ud800 lone surrogate', '../../etc/passwd', '%2e%2e%2f', '🙂 emoji', "'; DROP TABLE users; --", '<script>alert(1)</script>', 'null', '-1', '1e309', 'NaN', 'x'.repeat(5000), 'ü'.repeat(300), '\n\r\t', '{"a":1}', 'calculator', 'kb']

export async function benchFuzz() {
  console.log(`\n== Fuzz of every route (${RUNS} runs, ${PER_OPERATION} requests per operation, 8 at a time; goal: 0 answers >= 500)`)
  let total5xx = 0
  for (let run = 1; run <= RUNS; run++) {
    const random = seeded(run * 7919)
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!
    const server = await startServerProcess({ root, env: { UAGENT_RATE_LIMIT_MAX: '100000000' } })
    try {
      const base = server.base
      const json = async (path: string, body: unknown, token?: string) =>
        (await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) })).json() as Promise<any>
      const login = (email: string, password: string) => json('/auth/login', { email, password })
      let admin = (await login('bench@example.com', 'bench-password')).accessToken as string
      await json('/auth/users', { email: 'user@example.com', password: 'user-password-1', roles: ['user'] }, admin)
      let user = (await login('user@example.com', 'user-password-1')).accessToken as string
      await json('/rag/ingest', { collection: 'kb', documents: [{ id: 'doc1', content: 'The harbour office opens at six. Keys are at the front desk.', metadata: { title: 'Harbour' } }] }, admin)
      const chat = await json('/chat', { message: 'Hello there' }, admin)
      const task = await json('/agents/execute', { task: 'Plan a small offsite', agents: ['planner'], async: true }, admin)
      const me = (await (await fetch(`${base}/auth/me`, { headers: { authorization: `Bearer ${admin}` } })).json()) as { id: string }
      const tts = await json('/voice/tts', { text: 'Hello', voice: 'en-us', language: 'en', speed: 1, format: 'wav' }, admin)
      const known = ['kb', 'doc1', 'calculator', chat?.metadata?.conversationId, task?.taskId, me.id, String(tts?.audioUrl ?? '').split('/').pop(), 'builtin/extractive'].filter(Boolean) as string[]
      const doc = (await (await fetch(`${base}/openapi/json`)).json()) as { paths: Record<string, Record<string, { parameters?: { name: string; in: string; schema?: Schema }[]; requestBody?: { content?: Record<string, { schema?: Schema }> } }>>; components?: { schemas?: Record<string, Schema> } }
      const resolve = (schema: Schema | undefined): Schema | undefined => (schema?.$ref ? doc.components?.schemas?.[schema.$ref.split('/').pop()!] : schema)

      const junk = (): unknown => pick([() => pick(ODD_STRINGS), () => Math.floor(random() * 2e9) - 1e9, () => random() * 1e6, () => null, () => true, () => [], () => [pick(ODD_STRINGS)], () => ({}), () => ({ nested: { deeper: [1, 'two', null] } }), () => -0.5])()
      const valueOf = (raw: Schema | undefined, depth = 0): unknown => {
        const schema = resolve(raw)
        if (!schema || depth > 4 || random() < 0.15) return junk()
        if (schema.enum) return random() < 0.8 ? pick(schema.enum) : junk()
        if (schema.anyOf) return valueOf(pick(schema.anyOf), depth + 1)
        const type = Array.isArray(schema.type) ? pick(schema.type) : schema.type
        switch (type) {
          case 'object': {
            const out: Record<string, unknown> = {}
            for (const [key, property] of Object.entries(schema.properties ?? {})) {
              const required = schema.required?.includes(key)
              if (required ? random() < 0.9 : random() < 0.5) out[key] = valueOf(property, depth + 1)
            }
            if (random() < 0.1) out[pick(['extra', '__proto__', 'constructor'])] = junk()
            return out
          }
          case 'array':
            return Array.from({ length: Math.floor(random() * 4) }, () => valueOf(schema.items, depth + 1))
          case 'string':
            return random() < 0.5 ? pick(known) : pick(ODD_STRINGS)
          case 'integer':
          case 'number': {
            const low = schema.minimum ?? -10
            const high = schema.maximum ?? 1000
            return random() < 0.7 ? Math.round(low + random() * (high - low)) : pick([low - 1, high + 1, 0.5, -1, 1e12])
          }
          case 'boolean':
            return random() < 0.8 ? random() < 0.5 : junk()
          default:
            return junk()
        }
      }

      const failures: string[] = []
      let sent = 0
      const jobs: (() => Promise<void>)[] = []
      for (const [path, operations] of Object.entries(doc.paths)) {
        for (const [method, operation] of Object.entries(operations)) {
          if (path === '/ws') continue
          // Random installs would ask the npm registry for made-up names: only bodies that cannot start one.
          const count = path === '/admin/backup' ? 2 : PER_OPERATION
          for (let i = 0; i < count; i++) {
            jobs.push(async () => {
              let url = path.replace(/\{(\w+)\}/g, () => encodeURIComponent((random() < 0.6 ? pick(known) : String(junk())).toWellFormed()))
              const query = new URLSearchParams()
              for (const parameter of operation.parameters ?? []) if (parameter.in === 'query' && random() < 0.7) query.set(parameter.name, String(valueOf(parameter.schema)))
              if (query.size) url += `?${query}`
              const who = random()
              const token = who < 0.7 ? admin : who < 0.9 ? user : undefined
              const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {}
              let body: BodyInit | undefined
              const content = operation.requestBody?.content ?? {}
              if (content['multipart/form-data']) {
                const form = new FormData()
                if (random() < 0.8) form.append(pick(['file', 'files', 'audio']), new Blob([random() < 0.5 ? 'plain text body' : new Uint8Array(64).map(() => random() * 256)]), pick(['a.txt', 'b.pdf', 'c.docx', 'd.wav', '../e.md']))
                if (random() < 0.5) form.append(pick(['metadata', 'mode', 'collection']), String(junk()))
                body = form
              } else if (content['application/json']) {
                const shape = random()
                if (shape < 0.08) {
                  headers['content-type'] = 'application/json'
                  body = pick(['{', 'not json', '[1,2', '"\\ud800"', ''])
                } else if (shape < 0.12) {
                  headers['content-type'] = pick(['text/plain', 'application/x-www-form-urlencoded', 'application/xml'])
                  body = 'a=1&b=2'
                } else if (shape < 0.18) {
                  // Arrays or objects nested deep (a stack overflow once), as the whole body or in a field.
                  headers['content-type'] = 'application/json'
                  const depth = pick([101, 1000, 100_000])
                  const deep = random() < 0.5 ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`
                  const value = valueOf(operation.requestBody!.content!['application/json']!.schema)
                  const fields = value && typeof value === 'object' && !Array.isArray(value) ? Object.keys(value) : []
                  body = random() < 0.3 || !fields.length ? deep : JSON.stringify({ ...(value as object), [pick(fields)]: '__DEEP__' }).replace('"__DEEP__"', deep)
                } else {
                  headers['content-type'] = 'application/json'
                  let value = valueOf(operation.requestBody!.content!['application/json']!.schema)
                  if (path === '/plugins/install' && value && typeof value === 'object') value = { ...(value as object), source: pick(['nope', 1, null]) }
                  body = JSON.stringify(value)
                }
              }
              try {
                const response = await fetch(`${base}${url}`, { method: method.toUpperCase(), headers, body, signal: AbortSignal.timeout(30_000) })
                await response.arrayBuffer()
                sent++
                if (response.status >= 500 && response.status !== 503) failures.push(`${method.toUpperCase()} ${path} -> ${response.status}`)
              } catch (error) {
                sent++
                failures.push(`${method.toUpperCase()} ${path} -> ${(error as Error).name}: ${(error as Error).message}`)
              }
            })
          }
        }
      }
      // Shuffled, 8 at a time; the tokens are renewed if a request signed them out.
      for (let i = jobs.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1))
        ;[jobs[i], jobs[j]] = [jobs[j]!, jobs[i]!]
      }
      let next = 0
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < jobs.length) {
            await jobs[next++]!()
            if (next % 200 === 0) {
              admin = (await login('bench@example.com', 'bench-password')).accessToken ?? admin
              user = (await login('user@example.com', 'user-password-1')).accessToken ?? user
            }
          }
        }),
      )
      total5xx += failures.length
      const distinct = [...new Set(failures)]
      console.log(`run ${run}: ${sent} requests, ${failures.length} answers >= 500 (503 excepted: a declared unavailability)${distinct.length ? `: ${distinct.slice(0, 8).join('; ')}` : ''}`)
    } finally {
      await server.stop()
    }
  }
  console.log(`all runs: ${total5xx} answers >= 500  ${total5xx === 0 ? 'ok' : 'MISSED'}`)
}

if (import.meta.main) await benchFuzz()
