import { afterAll, describe, expect, test, setDefaultTimeout } from 'bun:test'
import { join } from 'node:path'
import { makeServer, tempDir } from '../../helpers'
import { inventoryHttpServer, inventoryHttpServerOptions } from './fixtures/inventory-server'

// Spawned servers and argon2 logins: seconds on a busy machine.
setDefaultTimeout(30_000)

const FIXTURE = join(import.meta.dir, 'fixtures', 'inventory-server.ts')
const stdioServer = (name = 'inventory', env: Record<string, string> = {}) => ({ name, command: process.execPath, args: [FIXTURE], env })

/** An OpenAI-compatible model server that calls a <server>__stock_level tool when offered one, then answers with what it returned. */
function fakeUpstream() {
  const requests: any[] = []
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const body = (await request.json()) as any
      requests.push(body)
      const reply = (message: object) => Response.json({ choices: [{ message, finish_reason: 'stop' }], usage: { prompt_tokens: 10, completion_tokens: 5 } })
      const offered = (body.tools ?? []).find((t: any) => t.function?.name.endsWith('__stock_level'))
      const results = body.messages.filter((m: any) => m.role === 'tool')
      if (offered && body.tool_choice !== 'none' && results.length === 0) {
        return reply({ role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: offered.function.name, arguments: JSON.stringify({ item: 'widget' }) } }] })
      }
      if (results.length) return reply({ role: 'assistant', content: `Stock: ${JSON.stringify(JSON.parse(results.at(-1).content))}` })
      return reply({ role: 'assistant', content: 'No tools were used.' })
    },
  })
  return { server, requests, url: `http://127.0.0.1:${server.port}` }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe('MCP servers registered by an admin (/mcp/servers)', () => {
  const upstream = fakeUpstream()
  const http = inventoryHttpServer()
  const servers: ReturnType<typeof makeServer>[] = []
  const serverOn = (options: Parameters<typeof makeServer>[0] = {}) => {
    const server = makeServer({ llmUrl: upstream.url, llmModel: 'fake-tools', ...options })
    servers.push(server)
    return server
  }
  afterAll(async () => {
    upstream.server.stop(true)
    http.stop(true)
    for (const server of servers) await server.services.mcp.close()
  })

  test('a stdio server is registered, its tools listed, and an agent calls one during a task', async () => {
    const server = serverOn()
    const { accessToken: token } = await server.login()
    const registered = await server.call('POST', '/mcp/servers', { token, body: stdioServer() })
    expect(registered.status).toBe(200)
    expect(registered.json).toMatchObject({ name: 'inventory', transport: 'stdio', enabled: true, status: 'connected', error: null })
    // A tool name that is not a valid function name is made one; the server's own name is kept beside it.
    expect(registered.json.tools.map((t: any) => t.name)).toEqual(['inventory__stock_level', 'inventory__environment', 'inventory__slow', 'inventory__broken_tool'])
    expect(registered.json.tools[3].tool).toBe('broken.tool')
    const res = await server.call('POST', '/agents/execute', { token, body: { task: 'How many widgets are in stock?', agents: ['analyst'] } })
    expect(res.status).toBe(200)
    const [analyst] = res.json.results
    expect(analyst.toolCalls).toEqual([{ tool: 'inventory__stock_level', arguments: { item: 'widget' }, result: { item: 'widget', units: 42 } }])
    expect(analyst.response).toBe('Stock: {"result":{"item":"widget","units":42}}')
    const offered = upstream.requests.find((r) => r.tools)!.tools.find((t: any) => t.function.name === 'inventory__stock_level')
    expect(offered.function.parameters).toMatchObject({ type: 'object', required: ['item'] })
  })

  test('the tools join the toolbox of the voice autopilot and agents; a tool error is a PLUGIN_ERROR', async () => {
    const server = serverOn()
    const { accessToken: token } = await server.login()
    await server.call('POST', '/mcp/servers', { token, body: stdioServer() })
    const caller = { userId: 'u', roles: ['user'] }
    expect(server.services.tools.list().map((t) => t.name)).toEqual(expect.arrayContaining(['calculator__evaluate', 'inventory__stock_level']))
    expect(await server.services.tools.call('inventory__stock_level', { item: 'gadget' }, caller)).toEqual({ item: 'gadget', units: 7 })
    const failure = await server.services.tools.call('inventory__broken_tool', {}, caller).catch((e: any) => e)
    expect(failure).toMatchObject({ code: 'PLUGIN_ERROR', message: 'inventory__broken_tool: the warehouse database is offline' })
    const refused: any = await server.services.tools.call('inventory__slow', { ms: 'soon' }, caller).catch((e: any) => e)
    expect(refused).toMatchObject({ code: 'VALIDATION_ERROR', message: 'inventory__slow: ms must be a number' })
    expect(await server.services.tools.call('calculator__evaluate', { expression: '2 + 2' }, caller)).toEqual({ value: 4 })
  })

  test('a stdio server sees none of the server\'s own variables, only what it was given', async () => {
    process.env.UAGENT_PROBE_SECRET = 'do-not-leak'
    try {
      const server = serverOn()
      const { accessToken: token } = await server.login()
      await server.call('POST', '/mcp/servers', { token, body: stdioServer('inventory', { WAREHOUSE: 'north' }) })
      const names = String(await server.services.tools.call('inventory__environment', {}, { userId: 'u', roles: [] })).split(',')
      expect(names).toContain('WAREHOUSE')
      expect(names.some((name) => name.startsWith('UAGENT_'))).toBe(false)
      const refused = await server.call('POST', '/mcp/servers', { token, body: stdioServer('other', { UAGENT_JWT_SECRET: 'x' }) })
      expect(refused.status).toBe(400)
      expect(refused.json.message).toContain('body.env.UAGENT_JWT_SECRET')
    } finally {
      delete process.env.UAGENT_PROBE_SECRET
    }
  })

  test('a stdio server is stopped when idle and started again on the next call; a call over the time limit fails alone', async () => {
    const server = serverOn({ mcpIdleMs: 1000, mcpTimeoutMs: 1500 })
    const { accessToken: token } = await server.login()
    await server.call('POST', '/mcp/servers', { token, body: stdioServer() })
    const caller = { userId: 'u', roles: [] }
    await server.services.tools.call('inventory__stock_level', { item: 'widget' }, caller)
    const remote = (server.services.mcp as any).remotes.get('inventory')
    const pid = remote.pid as number
    expect(alive(pid)).toBe(true)
    for (let i = 0; i < 100 && alive(pid); i++) await Bun.sleep(100)
    expect(alive(pid)).toBe(false)
    expect((await server.call('GET', '/mcp/servers/inventory', { token })).json.status).toBe('idle')
    const slow: any = await server.services.tools.call('inventory__slow', { ms: 5000 }, caller).catch((e: any) => e)
    expect(slow).toMatchObject({ code: 'TOOL_UNAVAILABLE' })
    expect(slow.message).toContain('did not answer')
    expect(await server.services.tools.call('inventory__stock_level', { item: 'widget' }, caller)).toEqual({ item: 'widget', units: 42 })
  })

  test('a Streamable HTTP server with headers; when it is down its tools are unavailable and nothing else fails', async () => {
    const server = serverOn()
    const { accessToken: token } = await server.login()
    const url = `http://127.0.0.1:${http.port}/mcp`
    const registered = await server.call('POST', '/mcp/servers', { token, body: { name: 'warehouse', url, headers: { 'x-inventory-key': 'sesame' } } })
    expect(registered.json).toMatchObject({ transport: 'http', url, headerNames: ['x-inventory-key'], status: 'connected' })
    expect(JSON.stringify(registered.json)).not.toContain('sesame')
    const caller = { userId: 'u', roles: [] }
    expect(await server.services.tools.call('warehouse__stock_level', { item: 'widget' }, caller)).toEqual({ item: 'widget', units: 42 })

    const down = await server.call('POST', '/mcp/servers', { token, body: { name: 'gone', url: 'http://127.0.0.1:9/mcp' } })
    expect(down.status).toBe(200)
    expect(down.json.status).toBe('unavailable')
    expect(down.json.error).toContain('gone')
    expect(server.services.tools.list().some((t) => t.plugin === 'gone')).toBe(false)
    expect(server.services.tools.list().some((t) => t.name === 'warehouse__stock_level')).toBe(true)
    const refresh = await server.call('POST', '/mcp/servers/gone/refresh', { token })
    expect(refresh.status).toBe(503)
    expect(refresh.json.code).toBe('TOOL_UNAVAILABLE')
    // Agents still work with the other tools.
    const res = await server.call('POST', '/agents/execute', { token, body: { task: 'How many widgets are in stock?', agents: ['analyst'] } })
    expect(res.status).toBe(200)
    expect(res.json.results[0].toolCalls[0]).toMatchObject({ tool: 'warehouse__stock_level', result: { units: 42 } })
  })

  test('a server that goes down while in use: its tools become unavailable, the rest keep working, and it is taken back once it answers', async () => {
    const server = serverOn({ mcpIdleMs: 60_000 })
    const { accessToken: token } = await server.login()
    let backend = inventoryHttpServer()
    const port = backend.port
    await server.call('POST', '/mcp/servers', { token, body: { name: 'depot', url: `http://127.0.0.1:${port}/mcp`, headers: { 'x-inventory-key': 'sesame' } } })
    const caller = { userId: 'u', roles: [] }
    expect(await server.services.tools.call('depot__stock_level', { item: 'gadget' }, caller)).toEqual({ item: 'gadget', units: 7 })
    backend.stop(true)
    const failed: any = await server.services.tools.call('depot__stock_level', { item: 'gadget' }, caller).catch((e: any) => e)
    expect(failed.code).toBe('TOOL_UNAVAILABLE')
    expect(server.services.tools.list().some((t) => t.plugin === 'depot')).toBe(false)
    expect(await server.services.tools.call('calculator__evaluate', { expression: '1 + 1' }, caller)).toEqual({ value: 2 })
    const shown = await server.call('GET', '/mcp/servers/depot', { token })
    expect(shown.json).toMatchObject({ status: 'unavailable', error: expect.stringContaining('depot') })
    backend = Bun.serve({ ...inventoryHttpServerOptions(), port })
    try {
      const refreshed = await server.call('POST', '/mcp/servers/depot/refresh', { token })
      expect(refreshed.json.status).toBe('connected')
      expect(server.services.tools.list().some((t) => t.name === 'depot__stock_level')).toBe(true)
    } finally {
      backend.stop(true)
    }
  })

  test('list, disable, enable, remove; admin only; names checked', async () => {
    const server = serverOn()
    const { accessToken: token } = await server.login()
    const user = (await server.userSession('user@example.com')).accessToken
    expect((await server.call('POST', '/mcp/servers', { token: user, body: stdioServer() })).status).toBe(403)
    expect((await server.call('GET', '/mcp/servers', { token: user })).status).toBe(403)
    expect((await server.call('POST', '/mcp/servers', { token, body: stdioServer('calculator') })).status).toBe(409)
    const badName = await server.call('POST', '/mcp/servers', { token, body: stdioServer('Bad_Name') })
    expect(badName.status).toBe(400)
    expect(badName.json.message).toContain('body')
    expect((await server.call('POST', '/mcp/servers', { token, body: { name: 'x', url: 'ftp://example/mcp' } })).status).toBe(400)
    expect((await server.call('POST', '/mcp/servers', { token, body: { name: 'x', url: 'http://h/mcp', command: 'ls' } })).status).toBe(400)
    const missing = await server.call('POST', '/mcp/servers', { token, body: { name: 'missing', command: '/nonexistent/mcp-server' } })
    expect(missing.json).toMatchObject({ status: 'unavailable', error: expect.stringContaining('could not be started') })
    expect((await server.call('DELETE', '/mcp/servers/missing', { token })).status).toBe(200)
    expect((await server.call('POST', '/mcp/servers', { token, body: stdioServer() })).status).toBe(200)
    expect((await server.call('POST', '/mcp/servers', { token, body: stdioServer() })).status).toBe(409)
    const listed = await server.call('GET', '/mcp/servers', { token })
    expect(listed.json.total).toBe(1)
    expect(listed.json.servers[0]).toMatchObject({ name: 'inventory', command: process.execPath, args: [FIXTURE], envNames: [] })

    const disabled = await server.call('POST', '/mcp/servers/inventory/disable', { token })
    expect(disabled.json).toMatchObject({ enabled: false, status: 'disabled' })
    expect(server.services.tools.list().some((t) => t.plugin === 'inventory')).toBe(false)
    const refused: any = await server.services.tools.call('inventory__stock_level', { item: 'widget' }, { userId: 'u', roles: [] }).catch((e: any) => e)
    expect(refused.code).toBe('TOOL_UNAVAILABLE')
    const enabled = await server.call('POST', '/mcp/servers/inventory/enable', { token })
    expect(enabled.json).toMatchObject({ enabled: true, status: 'connected' })
    expect(server.services.tools.list().some((t) => t.name === 'inventory__stock_level')).toBe(true)

    expect((await server.call('DELETE', '/mcp/servers/inventory', { token })).json).toEqual({ success: true, name: 'inventory' })
    expect((await server.call('GET', '/mcp/servers/inventory', { token })).status).toBe(404)
    expect(server.services.tools.list().some((t) => t.plugin === 'inventory')).toBe(false)
  })

  test('registered servers and their tools survive a restart (stored in the database)', async () => {
    const dir = tempDir('mcp')
    const first = makeServer({ database: join(dir, 'uagent.db'), dataDir: dir })
    const { accessToken: token } = await first.login()
    await first.call('POST', '/mcp/servers', { token, body: stdioServer() })
    await first.services.mcp.close()
    first.services.db.close()
    const second = serverOn({ database: join(dir, 'uagent.db'), dataDir: dir })
    // Known from the database, without starting the process.
    const remote = (second.services.mcp as any).remotes.get('inventory')
    expect(remote.status).toBe('idle')
    expect(second.services.tools.list().some((t) => t.name === 'inventory__stock_level')).toBe(true)
    expect(await second.services.tools.call('inventory__stock_level', { item: 'widget' }, { userId: 'u', roles: [] })).toEqual({ item: 'widget', units: 42 })
  })
})
