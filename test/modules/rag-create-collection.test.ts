import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { ADMIN, makeServer, tempDir } from '../helpers'

const { app, call, login, userSession } = makeServer({ rateLimitMax: 100_000 })

describe('POST /rag/collections', () => {
  test('creates an empty collection, listed with no documents, that uploads and ingests then fill', async () => {
    const { accessToken: token } = await login()
    const created = await call('POST', '/rag/collections', { token, body: { name: 'handbook' } })
    expect(created.status).toBe(200)
    expect(created.json.collection).toMatchObject({ name: 'handbook', documents: 0, chunks: 0 })
    expect(created.json.collection.dimensions).toBeGreaterThan(0)
    const listed = await call('GET', '/rag/collections', { token })
    expect(listed.json.collections.map((c: { name: string }) => c.name)).toEqual(['handbook'])
    expect((await call('GET', '/rag/collections/handbook/documents', { token })).json.documents).toEqual([])
    const ingest = await call('POST', '/rag/ingest', { token, body: { collection: 'handbook', documents: [{ id: 'hours', content: 'The office opens at nine.' }] } })
    expect(ingest.json.ingested).toBe(1)
    const search = await call('POST', '/rag/search', { token, body: { collection: 'handbook', query: 'office opens' } })
    expect(search.json.results[0].id).toBe('hours')
  })

  test('a taken name is 409; a blank or too long one is 400; each user has their own names', async () => {
    const { accessToken: token } = await login()
    await call('POST', '/rag/collections', { token, body: { name: 'twice' } })
    const again = await call('POST', '/rag/collections', { token, body: { name: 'twice' } })
    expect(again.status).toBe(409)
    expect(again.json).toMatchObject({ error: true, code: 'CONFLICT' })
    expect(again.json.message).toContain('twice')
    for (const name of ['', '   ', 'x'.repeat(65)]) {
      const bad = await call('POST', '/rag/collections', { token, body: { name } })
      expect(bad.status).toBe(400)
      expect(bad.json.code).toBe('VALIDATION_ERROR')
    }
    const other = await userSession('other@example.com')
    expect((await call('POST', '/rag/collections', { token: other.accessToken, body: { name: 'twice' } })).status).toBe(200)
    expect((await call('GET', '/rag/collections', { token: other.accessToken })).json.collections.map((c: { name: string }) => c.name)).toEqual(['twice'])
    expect((await call('POST', '/rag/collections', { body: { name: 'anon' } })).status).toBe(401)
  })
})

describe('uagent rag create', () => {
  const CLI = join(import.meta.dir, '../../cli/index.ts')
  const config = tempDir('cli-rag-create')
  let base = ''
  let stop = () => {}
  const run = async (args: string[]) => {
    const env: Record<string, string> = {}
    for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('UAGENT_') && value !== undefined) env[key] = value
    const proc = Bun.spawn(['bun', CLI, '--url', base, ...args], { env: { ...env, XDG_CONFIG_HOME: config, NO_COLOR: '1' }, stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' })
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    return { stdout, stderr, code }
  }
  beforeAll(async () => {
    const server = app.listen({ port: 0 })
    base = `http://127.0.0.1:${server.server!.port}`
    stop = () => server.stop(true)
    expect((await run(['login', '--email', ADMIN.email, '--password', ADMIN.password])).code).toBe(0)
  })
  afterAll(() => stop())

  test('creates a collection, says so, and refuses a taken name in words', async () => {
    const made = await run(['rag', 'create', 'notes'])
    expect(made.code).toBe(0)
    expect(made.stdout).toContain('Created collection notes')
    const listed = await run(['rag', 'collections', '--json'])
    expect(JSON.parse(listed.stdout).collections.map((c: { name: string }) => c.name)).toContain('notes')
    const taken = await run(['rag', 'create', 'notes'])
    expect(taken.code).not.toBe(0)
    expect(taken.stderr).toContain('already have a collection named notes')
  })
})
