import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { PluginStore } from '../../../src/modules/plugins/store'
import { PostgresPluginStore } from '../../../src/modules/plugins/store.postgres'
import { SqlitePluginStore } from '../../../src/modules/plugins/store.sqlite'
import { SqliteMcpServerStore } from '../../../src/modules/mcp/store.sqlite'
import { openDatabase } from '../../../src/db'
import { describeBackends, emptyPostgresDatabase, relay, TEST_DATABASE_URL, type TestBackend } from '../../postgres'
import { openPostgres } from '../../../src/db/postgres'
import { twoServers } from '../../two-servers'
import { makeServer } from '../../helpers'
import { SQL } from 'bun'
import { gitRepo, pluginFiles, pluginToolsMissing, writePlugin } from './fixtures'

// Node workers, git and argon2 logins on a busy machine.
setDefaultTimeout(60_000)

const storeOf = (backend: TestBackend): PluginStore => (backend.kind === 'postgres' ? new PostgresPluginStore(backend.sql) : new SqlitePluginStore(backend.db))
const row = (name: string, version = '1.0.0') => ({ name, source: 'git' as const, package: `/repos/${name}`, requested_version: 'v1', version, enabled: 1 })

describeBackends('plugin store', (backend) => {
  test('rows by name; enabled flags of installed plugins and built-ins; a taken name is refused; delete', async () => {
    const store = storeOf(backend())
    const bytes = new Uint8Array([31, 139, 8, 0, 1, 2, 3])
    const pkg = { sha256: createHash('sha256').update(bytes).digest('hex'), bytes, manifest: '{"name":"zeta"}' }
    const zeta = await store.insert(row('zeta'), pkg)
    expect(zeta).toMatchObject({ name: 'zeta', source: 'git', package: '/repos/zeta', requested_version: 'v1', version: '1.0.0', enabled: 1 })
    await store.insert(row('alpha', '2.0.0'), pkg)
    expect((await store.all()).map((r) => r.name)).toEqual(['alpha', 'zeta'])

    await store.setEnabled('zeta', false)
    expect((await store.get('zeta'))!.enabled).toBe(0)
    await store.setEnabled('calculator', false, { version: '1.0.0' })
    expect(await store.get('calculator')).toMatchObject({ source: 'builtin', enabled: 0 })
    await store.setEnabled('calculator', true, { version: '1.0.0' })
    expect((await store.get('calculator'))!.enabled).toBe(1)

    let refused: unknown = null
    try {
      await store.insert(row('alpha', '3.0.0'), pkg)
    } catch (error) {
      refused = error
    }
    expect(refused).not.toBeNull()
    expect((await store.get('alpha'))!.version).toBe('2.0.0')

    if (store.keepsPackages) {
      expect(await store.get('zeta')).toMatchObject({ manifest: '{"name":"zeta"}', package_sha256: pkg.sha256 })
      const kept = (await store.packageOf('zeta'))!
      expect(kept.sha256).toBe(pkg.sha256)
      expect(new Uint8Array(kept.bytes)).toEqual(bytes)
    } else {
      // SQLite: the files are the plugin's folder in the plugins dir.
      expect(await store.packageOf('zeta')).toBeNull()
    }
    await store.delete('zeta')
    expect(await store.get('zeta')).toBeNull()
    expect(await store.packageOf('zeta')).toBeNull()
    expect((await store.all()).map((r) => r.name)).toEqual(['alpha', 'calculator'])
  })
})

const missing = TEST_DATABASE_URL ? pluginToolsMissing() : 'UAGENT_TEST_DATABASE_URL is not set'
describe.skipIf(missing !== null)(`plugins on two servers sharing PostgreSQL${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const repos = mkdtempSync(join(tmpdir(), 'uagent-replica-plugins-'))
  const closers: (() => Promise<void>)[] = []
  afterAll(async () => {
    for (const close of closers) await close()
    rmSync(repos, { recursive: true, force: true })
  })

  test('installed on A, listed and run on B (empty data dir); disable, enable, removal and a reinstall on one are seen by the other', async () => {
    const { a, b, close } = await twoServers()
    closers.push(close)
    const tokenA = (await a.login()).accessToken
    const tokenB = (await b.login()).accessToken
    const user = (await b.userSession('runner@example.com')).accessToken
    const v1 = pluginFiles('greeter', { greet: `async ({ name }) => ({ greeting: require('./lib/words').hello + ', ' + name })` }, { extra: { 'lib/words.js': `exports.hello = 'Hello'` } })
    gitRepo(join(repos, 'v1'), v1, 'v1.0.0')
    const installed = await a.call('POST', '/plugins/install', { token: tokenA, body: { source: 'git', package: join(repos, 'v1'), version: 'v1.0.0' } })
    expect(installed.status).toBe(200)
    expect(installed.json).toMatchObject({ plugin: 'greeter', version: '1.0.0', status: 'enabled' })
    // The name is taken on B at once, for MCP servers too (their tools share the plugins' names).
    const clash = await b.call('POST', '/mcp/servers', { token: tokenB, body: { name: 'greeter', url: 'http://127.0.0.1:9/mcp' } })
    expect(clash.status).toBe(409)
    expect(clash.json.message).toContain('name of a plugin')
    const pluginsB = join(b.dataDir, 'plugins')
    expect(existsSync(join(pluginsB, 'greeter'))).toBe(false)

    const listed = await b.call('GET', '/plugins', { token: user })
    expect(listed.json.plugins.find((p: { name: string }) => p.name === 'greeter')).toMatchObject({ status: 'enabled', source: 'git', version: '1.0.0', description: 'Test plugin greeter' })
    expect((await b.call('GET', '/plugins/greeter', { token: user })).json.actions).toHaveProperty('greet')
    const run = await b.call('POST', '/plugins/greeter/execute', { token: user, body: { action: 'greet', parameters: { name: 'Ada' } } })
    expect(run.status).toBe(200)
    expect(run.json).toMatchObject({ success: true, plugin: 'greeter', result: { greeting: 'Hello, Ada' } })
    // B unpacked it into its own plugins dir, every file of it.
    expect(readFileSync(join(pluginsB, 'greeter', 'lib', 'words.js'), 'utf8')).toBe(`exports.hello = 'Hello'`)
    expect(readdirSync(pluginsB).filter((entry) => entry.startsWith('.staging-'))).toEqual([])
    expect((await b.call('POST', '/plugins/install', { token: tokenB, body: { source: 'git', package: join(repos, 'v1'), version: 'v1.0.0' } })).status).toBe(409)

    expect((await a.call('POST', '/plugins/greeter/disable', { token: tokenA })).json.status).toBe('disabled')
    const refused = await b.call('POST', '/plugins/greeter/execute', { token: user, body: { action: 'greet', parameters: { name: 'Ada' } } })
    expect(refused.status).toBe(409)
    expect(refused.json.code).toBe('PLUGIN_DISABLED')
    expect((await b.call('POST', '/plugins/greeter/enable', { token: tokenB })).json.status).toBe('enabled')
    expect((await a.call('POST', '/plugins/greeter/execute', { token: tokenA, body: { action: 'greet', parameters: { name: 'Bo' } } })).json.result).toEqual({ greeting: 'Hello, Bo' })

    // Built-ins too: calculator disabled on B is disabled on A.
    expect((await b.call('POST', '/plugins/calculator/disable', { token: tokenB })).status).toBe(200)
    expect((await a.call('POST', '/plugins/calculator/execute', { token: tokenA, body: { action: 'evaluate', parameters: { expression: '1+1' } } })).status).toBe(409)
    await a.call('POST', '/plugins/calculator/enable', { token: tokenA })
    expect((await b.call('POST', '/plugins/calculator/execute', { token: user, body: { action: 'evaluate', parameters: { expression: '2*3' } } })).json.result).toEqual({ value: 6 })

    // Removed on B: gone on A, its folder too.
    expect((await b.call('DELETE', '/plugins/greeter', { token: tokenB })).status).toBe(200)
    expect((await a.call('GET', '/plugins/greeter', { token: tokenA })).status).toBe(404)
    expect(existsSync(join(a.dataDir, 'plugins', 'greeter'))).toBe(false)

    // Installed again on A and run on B; then upgraded on A (removed and installed in a new version)
    // while B does not look (its periodic read stopped): B's folder still holds 1.0.0, and B runs 2.0.0.
    expect((await a.call('POST', '/plugins/install', { token: tokenA, body: { source: 'git', package: join(repos, 'v1'), version: 'v1.0.0' } })).status).toBe(200)
    expect((await b.call('POST', '/plugins/greeter/execute', { token: user, body: { action: 'greet', parameters: { name: 'Cy' } } })).json.result).toEqual({ greeting: 'Hello, Cy' })
    clearInterval((b.services.plugins as any).syncTimer)
    // A read the timer started may still be under way: this one starts after it, and both end before A changes anything.
    await b.services.plugins.sync()
    expect((await a.call('DELETE', '/plugins/greeter', { token: tokenA })).status).toBe(200)
    const v2 = pluginFiles('greeter', { greet: `async ({ name }) => ({ greeting: require('./lib/words').hello + ', ' + name })` }, { version: '2.0.0', extra: { 'lib/words.js': `exports.hello = 'Hi'` } })
    gitRepo(join(repos, 'v2'), v2, 'v2.0.0')
    expect((await a.call('POST', '/plugins/install', { token: tokenA, body: { source: 'git', package: join(repos, 'v2'), version: 'v2.0.0' } })).json.version).toBe('2.0.0')
    expect(readFileSync(join(pluginsB, 'greeter', 'lib', 'words.js'), 'utf8')).toBe(`exports.hello = 'Hello'`)
    const upgraded = await b.call('POST', '/plugins/greeter/execute', { token: user, body: { action: 'greet', parameters: { name: 'Di' } } })
    expect(upgraded.json.result).toEqual({ greeting: 'Hi, Di' })
    expect(readFileSync(join(pluginsB, 'greeter', 'lib', 'words.js'), 'utf8')).toBe(`exports.hello = 'Hi'`)
    expect((await b.call('GET', '/plugins/greeter', { token: user })).json.version).toBe('2.0.0')
  })
})

describe.skipIf(missing !== null)(`a server moved from SQLite${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const closers: (() => Promise<void>)[] = []
  afterAll(async () => {
    for (const close of closers) await close()
  })

  test('its plugins, recorded without a package, are stored from its plugins folder at start and run on another server', async () => {
    const { a, b, close } = await twoServers({}, async (postgres, dataDir) => {
      // As `uagent admin migrate-to-postgres` leaves it: the row copied, the folder in the old data dir.
      writePlugin(join(dataDir, 'plugins', 'moved'), pluginFiles('moved', { where: `async () => ({ from: require('./lib/origin').origin })` }, { extra: { 'lib/origin.js': `exports.origin = 'sqlite'` } }))
      await new PostgresPluginStore(postgres).insert(row('moved'))
    })
    closers.push(close)
    const token = (await b.login()).accessToken
    const listed = await b.call('GET', '/plugins/moved', { token })
    expect(listed.json).toMatchObject({ status: 'enabled', version: '1.0.0' })
    const run = await b.call('POST', '/plugins/moved/execute', { token, body: { action: 'where', parameters: {} } })
    expect(run.json.result).toEqual({ from: 'sqlite' })
    expect(readFileSync(join(b.dataDir, 'plugins', 'moved', 'lib', 'origin.js'), 'utf8')).toBe(`exports.origin = 'sqlite'`)
    expect(await a.services.plugins.storeLocalPackages()).toEqual([])
  })

  test('a server that kept its plugins and MCP servers in SQLite moves them to PostgreSQL at its first start there; every server then has them', async () => {
    const tools = [{ name: 'stock_level', description: 'Units in stock', inputSchema: { type: 'object', properties: { item: { type: 'string' } } } }]
    const { a, b, close } = await twoServers({}, async (_postgres, dataDir) => {
      // What an earlier version left in the data dir: the registries in uagent.db, the plugin's folder.
      const db = openDatabase(join(dataDir, 'uagent.db'))
      const plugins = new SqlitePluginStore(db)
      plugins.insert(row('oldie'))
      plugins.setEnabled('calculator', false, { version: '1.0.0' })
      const mcp = new SqliteMcpServerStore(db)
      mcp.insert({ name: 'inventory', transport: 'http', url: 'http://127.0.0.1:9/mcp', headers: { authorization: 'Bearer t' }, command: null, args: [], env: {} })
      mcp.setTools('inventory', tools)
      mcp.setEnabled('inventory', false)
      db.close()
      writePlugin(join(dataDir, 'plugins', 'oldie'), pluginFiles('oldie', { age: `async () => ({ years: 3 })` }))
    })
    closers.push(close)
    const token = (await b.login()).accessToken
    expect((await b.call('POST', '/plugins/oldie/execute', { token, body: { action: 'age', parameters: {} } })).json.result).toEqual({ years: 3 })
    expect((await b.call('GET', '/plugins/calculator', { token })).json.status).toBe('disabled')
    const servers = (await b.call('GET', '/mcp/servers', { token })).json.servers
    expect(servers).toEqual([expect.objectContaining({ name: 'inventory', url: 'http://127.0.0.1:9/mcp', headerNames: ['authorization'], enabled: false, status: 'disabled' })])
    expect(servers[0].tools.map((tool: { tool: string }) => tool.tool)).toEqual(['stock_level'])
    // Moved, not copied: SQLite holds them no more, so a removal in PostgreSQL stays removed after a restart.
    expect(new SqlitePluginStore(a.services.db).all()).toEqual([])
    expect(new SqliteMcpServerStore(a.services.db).all()).toEqual([])
  })
})

test.skipIf(!TEST_DATABASE_URL)('PostgreSQL lost: the plugin and MCP server routes answer 503 DATABASE_UNAVAILABLE, never a 500', async () => {
  const database = await emptyPostgresDatabase()
  const link = await relay(new URL(database.url))
  const viaRelay = new URL(database.url)
  viaRelay.port = String(link.port)
  const postgres = await openPostgres(viaRelay.toString())
  database.track(postgres)
  const server = makeServer({ postgres })
  const { accessToken: token } = await server.login()
  // Every connection dropped, new ones refused.
  await link.cut()
  const calls: [string, string, unknown?][] = [
    ['GET', '/plugins'],
    ['GET', '/plugins/calculator'],
    ['POST', '/plugins/calculator/execute', { action: 'evaluate', parameters: { expression: '1+1' } }],
    ['POST', '/plugins/calculator/disable'],
    ['DELETE', '/plugins/greeter'],
    ['GET', '/mcp/servers'],
    ['POST', '/mcp/servers', { name: 'docs', url: 'http://127.0.0.1:9/mcp' }],
  ]
  for (const [method, path, body] of calls) {
    const res = await server.call(method, path, { token, body })
    expect([method, path, res.status, res.json.code]).toEqual([method, path, 503, 'DATABASE_UNAVAILABLE'])
  }
  server.services.plugins.close()
  await server.services.mcp.close()
  server.services.postgresMonitor?.close()
  link.close()
})
