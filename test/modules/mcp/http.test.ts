import { beforeAll, describe, expect, test, setDefaultTimeout } from 'bun:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import { makeServer } from '../../helpers'
import { agentServer, TokenGenerator } from '../agents/fakes'

// Spawned servers and argon2 logins: seconds on a busy machine.
setDefaultTimeout(30_000)

/** The SDK's own client over Streamable HTTP, its requests answered in-process by app.handle. */
async function connect(server: ReturnType<typeof makeServer>, token: string) {
  const transport = new StreamableHTTPClientTransport(new URL('http://localhost/mcp'), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
    fetch: (url, init) => server.app.handle(new Request(url, init)),
  })
  const client = new Client({ name: 'test-client', version: '1.0.0' })
  await client.connect(transport)
  return client
}

const text = (result: any) => result.content.map((block: any) => block.text).join('\n')

const DOCS = [
  { id: 'vpn', content: 'To connect to the office VPN, install WireGuard and import the profile from the IT portal.', metadata: { title: 'VPN setup' } },
  { id: 'guides/printer', content: 'The third floor printer needs the PaperCut client; jams are cleared from tray two.', metadata: { title: 'Printer' } },
]

describe('MCP over Streamable HTTP (/mcp)', () => {
  const server = makeServer()
  let admin: string
  let other: string
  let client: Client

  beforeAll(async () => {
    admin = (await server.login()).accessToken
    other = (await server.userSession('other@example.com')).accessToken
    const ingest = await server.call('POST', '/rag/ingest', { token: admin, body: { collection: 'docs', documents: DOCS } })
    expect(ingest.status).toBe(200)
    client = await connect(server, admin)
  })

  test('without a token: 401 ErrorResponse', async () => {
    const res = await server.call('POST', '/mcp', {
      headers: { accept: 'application/json, text/event-stream' },
      body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } },
    })
    expect(res.status).toBe(401)
    expect(res.json).toMatchObject({ error: true, code: 'UNAUTHORIZED' })
    expect(res.headers.get('x-request-id')).toBe(res.json.requestId)
  })

  test('an Accept header without event streams is 406, as an ErrorResponse', async () => {
    const res = await server.call('POST', '/mcp', { token: admin, headers: { accept: 'application/json' }, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } })
    expect(res.status).toBe(406)
    expect(res.json).toMatchObject({ error: true, code: 'VALIDATION_ERROR' })
  })

  test('a plain JSON-RPC POST: JSON answer with the request id and rate-limit headers; malformed bodies are ErrorResponses', async () => {
    const headers = { accept: 'application/json, text/event-stream' }
    const res = await server.call('POST', '/mcp', { token: admin, headers, body: { jsonrpc: '2.0', id: 7, method: 'tools/list' } })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('application/json')
    expect(res.json.id).toBe(7)
    expect(res.json.result.tools.length).toBeGreaterThan(4)
    expect(res.headers.get('x-request-id')).toBeTruthy()
    expect(res.headers.get('x-ratelimit-limit')).toBeTruthy()
    const notification = await server.call('POST', '/mcp', { token: admin, headers, body: { jsonrpc: '2.0', method: 'notifications/initialized' } })
    expect(notification.status).toBe(202)
    const malformed = await server.call('POST', '/mcp', { token: admin, headers, body: '{"jsonrpc": ' })
    expect(malformed.status).toBe(400)
    expect(malformed.json).toMatchObject({ error: true, code: 'VALIDATION_ERROR' })
    const notRpc = await server.call('POST', '/mcp', { token: admin, headers, body: { hello: 'world' } })
    expect(notRpc.status).toBe(400)
    expect(notRpc.json).toMatchObject({ error: true, code: 'VALIDATION_ERROR' })
    const form = await server.call('POST', '/mcp', { token: admin, headers: { ...headers, 'content-type': 'text/plain' }, body: 'tools/list' })
    expect(form.status).toBe(415)
    expect(form.json.error).toBe(true)
    const get = await server.call('GET', '/mcp', { token: admin, headers })
    expect(get.status).toBe(405)
    expect(get.headers.get('allow')).toContain('POST')
  })

  test('lists the tools, each with an object schema', async () => {
    const { tools } = await client.listTools()
    const names = tools.map((tool) => tool.name)
    expect(names).toEqual(expect.arrayContaining(['rag_search', 'rag_answer', 'list_collections', 'agents_run', 'calculator__evaluate', 'datetime__now', 'text__stats', 'knowledge__search']))
    for (const tool of tools) expect(tool.inputSchema.type).toBe('object')
    const search = tools.find((tool) => tool.name === 'rag_search')!
    expect(search.inputSchema.required).toEqual(['collection', 'query'])
    expect(tools.find((tool) => tool.name === 'calculator__evaluate')!.inputSchema.properties).toHaveProperty('expression')
    // Built-in plugin actions are declared read-only, and say so.
    expect(tools.find((tool) => tool.name === 'calculator__evaluate')!.annotations).toEqual({ readOnlyHint: true })
  })

  test('rag_search finds what POST /rag/search finds', async () => {
    const result: any = await client.callTool({ name: 'rag_search', arguments: { collection: 'docs', query: 'printer jams', limit: 2 } })
    expect(result.isError).toBeUndefined()
    const rest = await server.call('POST', '/rag/search', { token: admin, body: { collection: 'docs', query: 'printer jams', limit: 2 } })
    expect(result.structuredContent.results.map((r: any) => r.id)).toEqual(rest.json.results.map((r: any) => r.id))
    expect(result.structuredContent.results[0].id).toBe('guides/printer')
    expect(JSON.parse(text(result)).results[0].content).toContain('PaperCut')
  })

  test('rag_answer answers from the collection and cites its source', async () => {
    const result: any = await client.callTool({ name: 'rag_answer', arguments: { collection: 'docs', question: 'How do I connect to the VPN?' } })
    expect(result.isError).toBeUndefined()
    expect(result.structuredContent.sources.map((s: any) => s.title)).toContain('VPN setup')
  })

  test('list_collections and a plugin tool', async () => {
    const listed: any = await client.callTool({ name: 'list_collections', arguments: {} })
    expect(listed.structuredContent.collections.map((c: any) => c.name)).toEqual(['docs'])
    const computed: any = await client.callTool({ name: 'calculator__evaluate', arguments: { expression: '12 * (3 + 4)' } })
    expect(computed.structuredContent).toEqual({ value: 84 })
  })

  test('bad arguments give a tool result with isError and a clear message', async () => {
    const missing: any = await client.callTool({ name: 'rag_search', arguments: { collection: 'docs' } })
    expect(missing.isError).toBe(true)
    expect(text(missing)).toContain('arguments.query: is required')
    const tooMany: any = await client.callTool({ name: 'rag_search', arguments: { collection: 'docs', query: 'vpn', limit: 1000 } })
    expect(tooMany.isError).toBe(true)
    expect(text(tooMany)).toContain('arguments.limit: must be at most 100')
    const plugin: any = await client.callTool({ name: 'calculator__evaluate', arguments: { expression: 42 } })
    expect(plugin.isError).toBe(true)
    expect(text(plugin)).toContain('VALIDATION_ERROR')
    const unknownCollection: any = await client.callTool({ name: 'rag_search', arguments: { collection: 'nope', query: 'vpn' } })
    expect(unknownCollection.isError).toBe(true)
    expect(text(unknownCollection)).toContain('NOT_FOUND')
  })

  test('an unknown tool is a protocol error', async () => {
    const error = await client.callTool({ name: 'no_such_tool', arguments: {} }).catch((e) => e)
    expect(error).toBeInstanceOf(McpError)
    expect((error as McpError).code).toBe(-32602)
    expect((error as McpError).message).toContain('Unknown tool: no_such_tool')
  })

  test('documents are resources: listed and read', async () => {
    const { resources } = await client.listResources()
    expect(resources.map((r) => r.uri).sort()).toEqual(['uagent://collections/docs/documents/guides%2Fprinter', 'uagent://collections/docs/documents/vpn'])
    expect(resources.find((r) => r.uri.endsWith('/vpn'))!.title).toBe('VPN setup')
    const read = await client.readResource({ uri: 'uagent://collections/docs/documents/guides%2Fprinter' })
    expect((read.contents[0] as any).text).toContain('PaperCut')
    const missing = await client.readResource({ uri: 'uagent://collections/docs/documents/nope' }).catch((e) => e)
    expect(missing).toBeInstanceOf(McpError)
    expect((missing as McpError).code).toBe(-32002)
    const { resourceTemplates } = await client.listResourceTemplates()
    expect(resourceTemplates[0]!.uriTemplate).toBe('uagent://collections/{name}/documents/{id}')
  })

  test("another user's collections are invisible", async () => {
    const theirs = await connect(server, other)
    const listed: any = await theirs.callTool({ name: 'list_collections', arguments: {} })
    expect(listed.structuredContent.collections).toEqual([])
    const search: any = await theirs.callTool({ name: 'rag_search', arguments: { collection: 'docs', query: 'printer' } })
    expect(search.isError).toBe(true)
    expect(text(search)).toContain('NOT_FOUND')
    expect(text(search)).not.toContain('PaperCut')
    expect((await theirs.listResources()).resources).toEqual([])
    const read = await theirs.readResource({ uri: 'uagent://collections/docs/documents/vpn' }).catch((e) => e)
    expect((read as McpError).code).toBe(-32002)
    await theirs.close()
  })

  test('a personal API key is accepted', async () => {
    const key = await server.call('POST', '/auth/api-keys', { token: admin, body: { name: 'editor' } })
    const viaKey = await connect(server, key.json.key)
    const result: any = await viaKey.callTool({ name: 'rag_search', arguments: { collection: 'docs', query: 'VPN' } })
    expect(result.structuredContent.results[0].id).toBe('vpn')
    await viaKey.close()
  })

  test('agents_run reports progress and returns the task', async () => {
    const progress: number[] = []
    const result: any = await client.callTool({ name: 'agents_run', arguments: { task: 'Summarize how to set up the VPN.', agents: ['researcher', 'summarizer'] } }, undefined, {
      onprogress: (p) => progress.push(p.progress),
      timeout: 60_000,
    })
    expect(result.isError).toBeUndefined()
    expect(result.structuredContent.status).toBe('completed')
    expect(result.structuredContent.results.map((r: any) => r.agent)).toEqual(['researcher', 'summarizer'])
    expect(result.structuredContent.results[1].response.length).toBeGreaterThan(0)
    // Sent as the task moves; the SDK's client may handle the last one after the response it precedes.
    expect(progress.length).toBeGreaterThan(0)
    expect(progress).toEqual([...progress].sort((a, b) => a - b))
    const bad: any = await client.callTool({ name: 'agents_run', arguments: { task: 'x', agents: ['nobody'] } })
    expect(bad.isError).toBe(true)
    expect(text(bad)).toContain('arguments.agents[0]')
  })
})

describe('agents_run progress', () => {
  test('each agent that finishes is reported before the result; cancelling the call cancels the task', async () => {
    const server = agentServer(new TokenGenerator(300))
    const token = (await server.login()).accessToken
    const client = await connect(server, token)
    const progress: { progress: number; message?: string }[] = []
    const result: any = await client.callTool({ name: 'agents_run', arguments: { task: 'Plan the move.', agents: ['planner', 'writer'] } }, undefined, {
      onprogress: (p) => progress.push(p),
    })
    expect(result.structuredContent.status).toBe('completed')
    expect(progress.some((p) => p.progress > 0 && p.progress < 100)).toBe(true)
    expect(progress.some((p) => p.message?.includes('running'))).toBe(true)

    const controller = new AbortController()
    const call = client.callTool({ name: 'agents_run', arguments: { task: 'Plan the move.', agents: ['planner', 'writer'] } }, undefined, { signal: controller.signal, onprogress: () => {} })
    await Bun.sleep(100)
    controller.abort()
    expect(await call.catch(() => 'aborted')).toBe('aborted')
    // The HTTP request ends with the abort; the task it started is cancelled, not left running.
    let tasks: any
    for (let i = 0; i < 50; i++) {
      tasks = (await server.call('GET', '/agents/tasks', { token })).json
      if (tasks.tasks.every((t: any) => t.status !== 'running' && t.status !== 'queued')) break
      await Bun.sleep(100)
    }
    expect(tasks.tasks.map((t: any) => t.status).sort()).toEqual(['cancelled', 'completed'])
  })
})
