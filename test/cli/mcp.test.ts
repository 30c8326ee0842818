import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from 'bun:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ADMIN, makeServer } from '../helpers'

// Spawned servers and argon2 logins: seconds on a busy machine.
setDefaultTimeout(30_000)

const CLI = join(import.meta.dir, '../../cli/index.ts')
const FIXTURE = join(import.meta.dir, '../modules/mcp/fixtures/inventory-server.ts')
const server = makeServer()
let base = ''
let stop = () => {}
const config = mkdtempSync(join(tmpdir(), 'uagent-cli-mcp-'))

function environment(extra: Record<string, string> = {}) {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('UAGENT_') && value !== undefined) env[key] = value
  return { ...env, XDG_CONFIG_HOME: config, NO_COLOR: '1', ...extra }
}

async function run(args: string[]) {
  const proc = Bun.spawn(['bun', CLI, '--url', base, ...args], { env: environment(), stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { stdout, stderr, code }
}

/** The SDK's client, speaking stdio to `uagent mcp` (which relays to the live server). */
async function stdioClient(args: string[] = []) {
  const transport = new StdioClientTransport({ command: 'bun', args: [CLI, '--url', base, ...args, 'mcp'], env: environment(), stderr: 'pipe' })
  const client = new Client({ name: 'cli-test', version: '1.0.0' })
  await client.connect(transport)
  return client
}

const text = (result: any) => result.content.map((block: any) => block.text).join('\n')

beforeAll(async () => {
  const app = server.app.listen({ port: 0 })
  base = `http://127.0.0.1:${app.server!.port}`
  stop = () => app.stop(true)
})
afterAll(async () => {
  await server.services.mcp.close()
  stop()
  rmSync(config, { recursive: true, force: true })
})

describe('uagent mcp (stdio)', () => {
  test('without a login, the client is told why', async () => {
    const error = await stdioClient().catch((e: any) => e)
    expect(error).toBeInstanceOf(Error)
    expect(String(error.message)).toContain('UNAUTHORIZED')
  })

  test('with the stored login: tools with object schemas, rag_search and a plugin tool, bad arguments as isError', async () => {
    expect((await run(['login', '--email', ADMIN.email, '--password', ADMIN.password])).code).toBe(0)
    const { accessToken } = await server.login()
    await server.call('POST', '/rag/ingest', { token: accessToken, body: { collection: 'handbook', documents: [{ id: 'leave', content: 'Annual leave is 25 days; ask your manager two weeks ahead.' }] } })
    const client = await stdioClient()
    try {
      const { tools } = await client.listTools()
      expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['rag_search', 'rag_answer', 'list_collections', 'agents_run', 'calculator__evaluate']))
      for (const tool of tools) expect(tool.inputSchema.type).toBe('object')
      const found: any = await client.callTool({ name: 'rag_search', arguments: { collection: 'handbook', query: 'annual leave days' } })
      expect(found.structuredContent.results[0]).toMatchObject({ id: 'leave' })
      const computed: any = await client.callTool({ name: 'calculator__evaluate', arguments: { expression: '25 * 2' } })
      expect(computed.structuredContent).toEqual({ value: 50 })
      const bad: any = await client.callTool({ name: 'rag_search', arguments: { collection: 'handbook', query: '' } })
      expect(bad.isError).toBe(true)
      expect(text(bad)).toContain('arguments.query')
      const progress: number[] = []
      const task: any = await client.callTool({ name: 'agents_run', arguments: { task: 'How much annual leave do we get?', agents: ['researcher'] } }, undefined, { onprogress: (p) => progress.push(p.progress) })
      expect(task.structuredContent.status).toBe('completed')
      // The last notification may reach the SDK's client after the response it precedes (it handles notifications a tick later).
      expect(progress.length).toBeGreaterThan(0)
    } finally {
      await client.close()
    }
  })

  test("another user's token (an API key) sees only their own collections", async () => {
    const other = await server.userSession('mcp-other@example.com')
    const key = await server.call('POST', '/auth/api-keys', { token: other.accessToken, body: { name: 'editor' } })
    const client = await stdioClient(['--token', key.json.key])
    try {
      const listed: any = await client.callTool({ name: 'list_collections', arguments: {} })
      expect(listed.structuredContent.collections).toEqual([])
      const search: any = await client.callTool({ name: 'rag_search', arguments: { collection: 'handbook', query: 'leave' } })
      expect(search.isError).toBe(true)
      expect(text(search)).toContain('NOT_FOUND')
    } finally {
      await client.close()
    }
  })
})

describe('uagent mcp servers', () => {
  test('add, list, show, disable, enable, refresh, remove', async () => {
    const added = await run(['mcp', 'servers', 'add', 'inventory', '-e', 'WAREHOUSE=north', '--', process.execPath, FIXTURE])
    expect(added.stderr).toBe('')
    expect(added.code).toBe(0)
    expect(added.stdout).toContain('inventory__stock_level')
    expect(added.stdout).toContain('WAREHOUSE')
    const listed = await run(['mcp', 'servers', 'list'])
    expect(listed.stdout).toContain('inventory')
    expect(listed.stdout).toContain('stdio')
    const json = JSON.parse((await run(['--json', 'mcp', 'servers', 'show', 'inventory'])).stdout)
    expect(json).toMatchObject({ name: 'inventory', command: process.execPath, args: [FIXTURE], envNames: ['WAREHOUSE'] })
    expect((await run(['mcp', 'servers', 'disable', 'inventory'])).stdout).toContain('disabled')
    expect((await run(['mcp', 'servers', 'enable', 'inventory'])).stdout).toContain('connected')
    expect((await run(['mcp', 'servers', 'refresh', 'inventory'])).code).toBe(0)
    expect((await run(['mcp', 'servers', 'remove', 'inventory'])).stdout).toContain('MCP server inventory removed')
    const gone = await run(['mcp', 'servers', 'show', 'inventory'])
    expect(gone.code).toBe(1)
    expect(gone.stderr).toContain('NOT_FOUND')
    expect((await run(['mcp', 'servers', 'add', 'x'])).code).toBe(2)
    expect((await run(['mcp', 'servers', 'add', 'x', '--endpoint', 'http://127.0.0.1:9/mcp', '-e', 'A=b'])).code).toBe(2)
    // A Streamable HTTP server with a header: --url stays this server's address.
    const http = await run(['--json', 'mcp', 'servers', 'add', 'remote', '--endpoint', 'http://127.0.0.1:9/mcp', '-H', 'Authorization: Bearer abc'])
    expect(http.code).toBe(0)
    expect(JSON.parse(http.stdout)).toMatchObject({ name: 'remote', transport: 'http', url: 'http://127.0.0.1:9/mcp', headerNames: ['Authorization'], status: 'unavailable' })
    expect((await run(['mcp', 'servers', 'remove', 'remote'])).code).toBe(0)
  })
})
