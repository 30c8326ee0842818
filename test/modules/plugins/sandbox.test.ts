import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { makeServer } from '../../helpers'
import { describeWithPluginTools, gitRepo, pluginFiles } from './fixtures'

// Real processes (Node workers, git, npm, the CLI) on a shared machine: generous per-test limits.
setDefaultTimeout(30_000)

const root = mkdtempSync(join(tmpdir(), 'uagent-plugins-sandbox-'))
const dataDir = join(root, 'data')
const pluginsDir = join(dataDir, 'plugins')
const ENV_SECRET = 'env-secret-that-no-plugin-may-see-0123456789'
const saved = process.env.UAGENT_JWT_SECRET
process.env.UAGENT_JWT_SECRET = ENV_SECRET

// No jwtSecret option: the key is generated into <dataDir>/jwt-secret, as on a real install.
const server = makeServer({ dataDir, database: join(dataDir, 'uagent.db'), pluginsDir, pluginTimeoutMs: 3000, pluginMemoryMb: 32 })
let token = ''
const exec = (plugin: string, action: string, parameters: Record<string, unknown> = {}) =>
  server.call('POST', `/plugins/${plugin}/execute`, { token, body: { action, parameters } })

const tryRead = `({ path }) => { try { return { content: require('fs').readFileSync(path, 'utf8') } } catch (error) { return { error: error.code || error.message } } }`

beforeAll(async () => {
  token = (await server.login()).accessToken
  const plugins = {
    spy: pluginFiles('spy', {
      env: `() => ({ secret: process.env.UAGENT_JWT_SECRET ?? null, keys: Object.keys(process.env).sort() })`,
      read: tryRead,
      readDir: `({ path }) => { try { return { entries: require('fs').readdirSync(path) } } catch (error) { return { error: error.code } } }`,
      spawn: `() => { try { return { output: require('child_process').execSync('id').toString() } } catch (error) { return { error: error.code } } }`,
      write: `() => { try { require('fs').writeFileSync(__dirname + '/written.txt', 'x'); return { wrote: true } } catch (error) { return { error: error.code } } }`,
      own: `() => ({ manifest: JSON.parse(require('fs').readFileSync(__dirname + '/plugin.json', 'utf8')).name })`,
    }),
    vault: pluginFiles('vault', { ok: `() => 'ok'` }, { extra: { 'treasure.txt': 'vault-only secret' } }),
    rogue: pluginFiles('rogue', {
      loop: `() => { while (true) {} }`,
      grow: `() => { const hoard = []; while (true) hoard.push(new Array(100000).fill('x' + hoard.length)) }`,
      buffers: `() => new Promise(() => { const hoard = []; setInterval(() => hoard.push(Buffer.alloc(8 * 1024 * 1024, 1)), 5) })`,
      crash: `() => process.exit(3)`,
      slow: `({ ms }) => new Promise((resolve) => setTimeout(() => resolve({ waited: ms }), ms))`,
      ok: `() => ({ alive: process.pid })`,
      fail: `() => { throw new Error('the plugin says no') }`,
      weird: `() => 10n`,
    }),
  }
  const esm = pluginFiles('esm', { unused: '() => 1' })
  esm.manifest.main = 'index.mjs'
  esm.files['plugin.json'] = JSON.stringify(esm.manifest)
  esm.files['index.mjs'] = `import { readFileSync } from 'node:fs'\nexport const unused = async ({ word }) => ({ upper: String(word).toUpperCase(), own: JSON.parse(readFileSync(new URL('./plugin.json', import.meta.url))).name })\n`
  Object.assign(plugins, { esm })
  if (!Bun.which('git')) return
  for (const [name, plugin] of Object.entries(plugins)) {
    const repo = join(root, 'repos', name)
    gitRepo(repo, plugin, 'v1')
    const res = await server.call('POST', '/plugins/install', { token, body: { source: 'git', package: repo, version: 'v1' } })
    if (res.status !== 200) throw new Error(`install ${name}: ${res.text}`)
  }
})

afterAll(() => {
  server.services.plugins.close()
  if (saved === undefined) delete process.env.UAGENT_JWT_SECRET
  else process.env.UAGENT_JWT_SECRET = saved
  rmSync(root, { recursive: true, force: true })
})

describeWithPluginTools('installed plugins are isolated', () => {
  test('no UAGENT_* variable, nor any other of the server environment', async () => {
    const res = await exec('spy', 'env')
    expect(res.status).toBe(200)
    expect(res.json.result.secret).toBeNull()
    expect(res.json.result.keys.filter((key: string) => key.startsWith('UAGENT_'))).toEqual([])
    expect(res.json.result.keys).toEqual(['HOME', 'LANG', 'NODE_ENV', 'PATH'])
  })

  test('cannot read the JWT key file, the database, another plugin folder or system files; can read its own', async () => {
    const keyFile = join(dataDir, 'jwt-secret')
    expect(existsSync(keyFile)).toBe(true)
    const key = readFileSync(keyFile, 'utf8')
    for (const path of [keyFile, join(dataDir, 'uagent.db'), join(pluginsDir, 'vault', 'treasure.txt'), '/etc/passwd', '/proc/self/environ']) {
      const res = await exec('spy', 'read', { path })
      expect(res.status).toBe(200)
      expect(res.json.result).toEqual({ error: 'ERR_ACCESS_DENIED' })
      expect(res.text).not.toContain(key)
    }
    expect((await exec('spy', 'readDir', { path: dataDir })).json.result).toEqual({ error: 'ERR_ACCESS_DENIED' })
    expect((await exec('spy', 'own')).json.result).toEqual({ manifest: 'spy' })
  })

  test('cannot start processes or write files', async () => {
    expect((await exec('spy', 'spawn')).json.result).toEqual({ error: 'ERR_ACCESS_DENIED' })
    expect((await exec('spy', 'write')).json.result).toEqual({ error: 'ERR_ACCESS_DENIED' })
    expect(existsSync(join(pluginsDir, 'spy', 'written.txt'))).toBe(false)
  })

  test('a thrown error is 400 PLUGIN_ERROR with its message; a result that is not JSON is a PLUGIN_ERROR too', async () => {
    const res = await exec('rogue', 'fail')
    expect(res.status).toBe(400)
    expect(res.json).toMatchObject({ code: 'PLUGIN_ERROR', message: 'the plugin says no' })
    const weird = await exec('rogue', 'weird')
    expect(weird.json.code).toBe('PLUGIN_ERROR')
    expect(weird.json.message).toContain('JSON')
  })
})

describeWithPluginTools('module formats', () => {
  test('an ES module entry works like a CommonJS one', async () => {
    const res = await exec('esm', 'unused', { word: 'esm' })
    expect(res.json).toMatchObject({ success: true, result: { upper: 'ESM', own: 'esm' } })
  })
})

describeWithPluginTools('limits', () => {
  test('an endless loop is stopped at the time limit while the server keeps answering; the next call runs in a new worker', async () => {
    const before = (await exec('rogue', 'ok')).json.result.alive
    let settled = false
    const looping = exec('rogue', 'loop').then((res) => {
      settled = true
      return res
    })
    await Bun.sleep(100)
    // While the plugin spins, the server answers: these come back before the looping call does.
    const [health, calc, other] = await Promise.all([
      server.call('GET', '/health'),
      exec('calculator', 'evaluate', { expression: '1+1' }),
      exec('spy', 'own'),
    ])
    expect(settled).toBe(false)
    expect(health.status).toBe(200)
    expect(calc.json.result).toEqual({ value: 2 })
    expect(other.status).toBe(200)
    const res = await looping
    expect(res.status).toBe(400)
    expect(res.json.code).toBe('PLUGIN_ERROR')
    expect(res.json.message).toContain('within 3000 ms')
    const after = await exec('rogue', 'ok')
    expect(after.status).toBe(200)
    expect(after.json.result.alive).not.toBe(before)
  })

  test('concurrent calls share the warm worker', async () => {
    const [a, b] = await Promise.all([exec('rogue', 'slow', { ms: 200 }), exec('rogue', 'slow', { ms: 100 })])
    expect(a.json.result).toEqual({ waited: 200 })
    expect(b.json.result).toEqual({ waited: 100 })
  })

  test('a plugin that allocates without end is stopped, and runs again afterwards', async () => {
    const res = await exec('rogue', 'grow')
    expect(res.status).toBe(400)
    expect(res.json.code).toBe('PLUGIN_ERROR')
    expect(res.json.message).toContain('memory')
    const buffers = await exec('rogue', 'buffers')
    expect(buffers.status).toBe(400)
    expect(buffers.json.message).toContain('memory')
    expect((await exec('rogue', 'ok')).status).toBe(200)
  })

  test('a crash is a PLUGIN_ERROR and the worker is restarted', async () => {
    const res = await exec('rogue', 'crash')
    expect(res.status).toBe(400)
    expect(res.json.message).toContain('stopped unexpectedly')
    expect((await exec('rogue', 'ok')).status).toBe(200)
  })
})

describeWithPluginTools('warm workers', () => {
  test('consecutive calls reuse one process; a worker idle for UAGENT_PLUGIN_IDLE_MS is stopped and the next call starts another', async () => {
    const idle = makeServer({ dataDir, database: join(dataDir, 'uagent.db'), pluginsDir, pluginIdleMs: 400 })
    const admin = (await idle.login()).accessToken
    const pid = async () => (await idle.call('POST', '/plugins/rogue/execute', { token: admin, body: { action: 'ok', parameters: {} } })).json.result.alive
    const first = await pid()
    expect(await pid()).toBe(first)
    expect(await pid()).toBe(first)
    await Bun.sleep(1200)
    let alive = true
    try {
      process.kill(first, 0)
    } catch {
      alive = false
    }
    expect(alive).toBe(false)
    const next = await pid()
    expect(next).not.toBe(first)
    idle.services.plugins.close()
  })
})

// Needs git (to install), not Node.js.
;(Bun.which('git') ? describe : describe.skip)('without Node.js >= 20', () => {
  test('installed plugins have status "error" with the reason and never run; built-ins still work', async () => {
    const fakeNode = join(root, 'old-node')
    await Bun.write(fakeNode, '#!/bin/sh\necho v18.19.0\n')
    Bun.spawnSync(['chmod', '+x', fakeNode])
    for (const [nodePath, reason] of [
      [fakeNode, 'v18.19.0'],
      [join(root, 'missing-node'), 'Node.js >= 20'],
    ] as const) {
      const other = makeServer({ dataDir, database: join(dataDir, 'uagent.db'), pluginsDir, nodePath })
      const admin = (await other.login()).accessToken
      const listed = (await other.call('GET', '/plugins', { token: admin })).json.plugins
      const spy = listed.find((p: any) => p.name === 'spy')
      expect(spy.status).toBe('error')
      expect(spy.message).toContain(reason)
      const res = await other.call('POST', '/plugins/spy/execute', { token: admin, body: { action: 'env', parameters: {} } })
      expect(res.status).toBe(400)
      expect(res.json.code).toBe('PLUGIN_ERROR')
      expect(res.json.message).toContain(reason)
      expect(other.services.tools.list().some((tool) => tool.plugin === 'spy')).toBe(false)
      const calc = await other.call('POST', '/plugins/calculator/execute', { token: admin, body: { action: 'evaluate', parameters: { expression: '2*3' } } })
      expect(calc.json.result).toEqual({ value: 6 })
    }
  })
})
