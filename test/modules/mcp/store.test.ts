import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import type { McpServerStore } from '../../../src/modules/mcp/store'
import { PostgresMcpServerStore } from '../../../src/modules/mcp/store.postgres'
import { SqliteMcpServerStore } from '../../../src/modules/mcp/store.sqlite'
import { describeBackends, POSTGRES_SKIPPED, TEST_DATABASE_URL, type TestBackend } from '../../postgres'
import { twoServers } from '../../two-servers'

// Spawned MCP servers and argon2 logins on a busy machine.
setDefaultTimeout(30_000)

const FIXTURE = join(import.meta.dir, 'fixtures', 'inventory-server.ts')

const storeOf = (backend: TestBackend): McpServerStore => (backend.kind === 'postgres' ? new PostgresMcpServerStore(backend.sql) : new SqliteMcpServerStore(backend.db))

describeBackends('MCP server store', (backend) => {
  test('insert, get, all in name order; enable flag and tools kept; a taken name is refused; delete', async () => {
    const store = storeOf(backend())
    const stdio = await store.insert({ name: 'inventory', transport: 'stdio', url: null, headers: {}, command: '/usr/bin/env', args: ['node', 'x.js'], env: { TOKEN: 't' } })
    expect(stdio).toMatchObject({ name: 'inventory', transport: 'stdio', command: '/usr/bin/env', args: ['node', 'x.js'], env: { TOKEN: 't' }, enabled: true, tools: [] })
    await store.insert({ name: 'docs', transport: 'http', url: 'https://mcp.example/mcp', headers: { authorization: 'Bearer x' }, command: null, args: [], env: {} })
    expect((await store.all()).map((record) => record.name)).toEqual(['docs', 'inventory'])
    expect(await store.get('docs')).toMatchObject({ url: 'https://mcp.example/mcp', headers: { authorization: 'Bearer x' }, command: null })
    expect(await store.get('nothing')).toBeNull()

    await store.setEnabled('inventory', false)
    const tools = [{ name: 'stock_level', description: 'Units in stock', inputSchema: { type: 'object', properties: { item: { type: 'string' } } } }]
    await store.setTools('inventory', tools)
    const changed = (await store.get('inventory'))!
    expect(changed).toMatchObject({ enabled: false, tools })
    expect(changed.updatedAt >= stdio.updatedAt).toBe(true)
    expect(changed.createdAt).toBe(stdio.createdAt)

    let refused: unknown = null
    try {
      await store.insert({ name: 'docs', transport: 'http', url: 'https://other/mcp', headers: {}, command: null, args: [], env: {} })
    } catch (error) {
      refused = error
    }
    expect(refused).not.toBeNull()
    expect((await store.get('docs'))!.url).toBe('https://mcp.example/mcp')

    expect(await store.delete('docs')).toBe(true)
    expect(await store.delete('docs')).toBe(false)
    expect((await store.all()).map((record) => record.name)).toEqual(['inventory'])
  })
})

describe.skipIf(!TEST_DATABASE_URL)(`MCP servers on two servers sharing PostgreSQL${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  const closers: (() => Promise<void>)[] = []
  afterAll(async () => {
    for (const close of closers) await close()
  })

  test('a server registered on A is listed and its tools called on B; disable and removal on B are seen by A', async () => {
    const { a, b, close } = await twoServers()
    closers.push(close)
    const tokenA = (await a.login()).accessToken
    const tokenB = (await b.login()).accessToken
    const registered = await a.call('POST', '/mcp/servers', { token: tokenA, body: { name: 'inventory', command: process.execPath, args: [FIXTURE] } })
    expect(registered.status).toBe(200)
    expect(registered.json.status).toBe('connected')

    const listed = await b.call('GET', '/mcp/servers', { token: tokenB })
    expect(listed.status).toBe(200)
    expect(listed.json.servers).toEqual([expect.objectContaining({ name: 'inventory', command: process.execPath, args: [FIXTURE], enabled: true, status: 'idle' })])
    expect(listed.json.servers[0].tools.map((tool: { name: string }) => tool.name)).toContain('inventory__stock_level')
    // B starts its own process of the stdio server on its first call.
    expect(await b.services.tools.call('inventory__stock_level', { item: 'widget' }, { userId: 'u', roles: [] })).toEqual({ item: 'widget', units: 42 })
    expect((await b.call('POST', '/mcp/servers', { token: tokenB, body: { name: 'inventory', command: process.execPath, args: [FIXTURE] } })).status).toBe(409)

    expect((await b.call('POST', '/mcp/servers/inventory/disable', { token: tokenB })).json).toMatchObject({ enabled: false, status: 'disabled' })
    expect((await a.call('GET', '/mcp/servers/inventory', { token: tokenA })).json).toMatchObject({ enabled: false, status: 'disabled' })
    expect(a.services.tools.list().some((tool) => tool.plugin === 'inventory')).toBe(false)

    expect((await b.call('DELETE', '/mcp/servers/inventory', { token: tokenB })).status).toBe(200)
    expect((await a.call('GET', '/mcp/servers/inventory', { token: tokenA })).status).toBe(404)
    expect((await a.call('GET', '/mcp/servers', { token: tokenA })).json).toEqual({ servers: [], total: 0 })
    expect((await a.call('DELETE', '/mcp/servers/inventory', { token: tokenA })).status).toBe(404)
  })
})
