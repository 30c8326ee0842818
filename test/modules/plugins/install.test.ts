import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ADMIN, makeServer } from '../../helpers'
import { describeWithPluginTools, gitRepo, makeTgz, pluginFiles, tgzOf } from './fixtures'

// Real processes (Node workers, git, npm, the CLI) on a shared machine: generous per-test limits.
setDefaultTimeout(30_000)

const root = mkdtempSync(join(tmpdir(), 'uagent-plugins-install-'))
const pluginsDir = join(root, 'plugins')
const marker = join(root, 'install-script-ran')
const files = new Map<string, Uint8Array>()
let base = ''
let http: ReturnType<typeof Bun.serve>
const savedRegistry = process.env.npm_config_registry

function sha1(bytes: Uint8Array) {
  return createHash('sha1').update(bytes).digest('hex')
}
function integrity(bytes: Uint8Array) {
  return `sha512-${createHash('sha512').update(bytes).digest('base64')}`
}

/** A tiny npm registry: a packument per package and its tarballs, as npm expects them. */
function publish(name: string, version: string, tarball: Uint8Array, dependencies: Record<string, string> = {}) {
  const path = `/${name}/-/${name}-${version}.tgz`
  files.set(path, tarball)
  files.set(
    `/${name}`,
    new TextEncoder().encode(
      JSON.stringify({
        name,
        'dist-tags': { latest: version },
        versions: { [version]: { name, version, dependencies, dist: { tarball: `${base}${path}`, shasum: sha1(tarball), integrity: integrity(tarball) } } },
      }),
    ),
  )
}

beforeAll(() => {
  http = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(request) {
      const path = decodeURIComponent(new URL(request.url).pathname)
      const body = files.get(path)
      if (!body) return new Response('{"error":"not found"}', { status: 404, headers: { 'content-type': 'application/json' } })
      return new Response(body as BodyInit, { headers: { 'content-type': path.endsWith('.tgz') ? 'application/octet-stream' : 'application/json' } })
    },
  })
  base = `http://127.0.0.1:${http.port}`
  process.env.npm_config_registry = `${base}/`
})

afterAll(() => {
  http.stop(true)
  if (savedRegistry === undefined) delete process.env.npm_config_registry
  else process.env.npm_config_registry = savedRegistry
  rmSync(root, { recursive: true, force: true })
})

const dataDir = join(root, 'data')
let server = makeServer({ pluginsDir, database: join(root, 'uagent.db'), dataDir, jwtSecret: 'k'.repeat(40) })
let token = ''
const install = (body: Record<string, unknown>, auth = token) => server.call('POST', '/plugins/install', { token: auth, body })
const exec = (plugin: string, action: string, parameters: Record<string, unknown> = {}) =>
  server.call('POST', `/plugins/${plugin}/execute`, { token, body: { action, parameters } })
/** What is in the plugins folder: installed plugins' folders only, never a staging leftover. */
const folders = () => readdirSync(pluginsDir).sort()

beforeAll(async () => {
  token = (await server.login()).accessToken
})
afterAll(() => server.services.plugins.close())

describeWithPluginTools('POST /plugins/install', () => {
  test('git: a local repository at a tag, then executed', async () => {
    const repo = join(root, 'git-repo')
    gitRepo(repo, pluginFiles('git-hello', { greet: `async ({ name }) => ({ greeting: 'Hello, ' + name + ' from git' })` }, { version: '1.2.0' }), 'v1.2.0')
    const res = await install({ source: 'git', package: repo, version: 'v1.2.0' })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ success: true, plugin: 'git-hello', version: '1.2.0', status: 'enabled' })
    const run = await exec('git-hello', 'greet', { name: 'Ada' })
    expect(run.status).toBe(200)
    expect(run.json).toMatchObject({ success: true, plugin: 'git-hello', action: 'greet', result: { greeting: 'Hello, Ada from git' } })
    expect(existsSync(join(pluginsDir, 'git-hello', '.git'))).toBe(false)
    const listed = await server.call('GET', '/plugins', { token })
    expect(listed.json.plugins.find((p: any) => p.name === 'git-hello')).toMatchObject({ status: 'enabled', source: 'git', version: '1.2.0' })
  }, 60_000)

  test('git: an unknown tag is 400 INSTALL_FAILED and leaves nothing', async () => {
    const res = await install({ source: 'git', package: join(root, 'git-repo'), version: 'v9.9.9' })
    expect(res.status).toBe(400)
    expect(res.json.code).toBe('INSTALL_FAILED')
    expect(res.json.message).toContain('v9.9.9')
    expect(folders()).toEqual(['git-hello'])
  }, 60_000)

  test('url: a .tgz over HTTP with a matching sha256 installs; a mismatching one is refused before unpacking', async () => {
    const archive = tgzOf(pluginFiles('url-hello', { add: `({ a, b }) => ({ sum: a + b })` }, { version: '0.3.0' }), 'package/')
    files.set('/archives/url-hello.tgz', archive)
    const sha256 = createHash('sha256').update(archive).digest('hex')
    const wrong = await install({ source: 'url', package: `${base}/archives/url-hello.tgz`, version: '0.3.0', sha256: 'a'.repeat(64) })
    expect(wrong.status).toBe(400)
    expect(wrong.json.code).toBe('INSTALL_FAILED')
    expect(wrong.json.message).toContain('sha256 mismatch')
    expect(folders()).toEqual(['git-hello'])
    const res = await install({ source: 'url', package: `${base}/archives/url-hello.tgz`, version: '0.3.0', sha256 })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ plugin: 'url-hello', version: '0.3.0', status: 'enabled' })
    expect((await exec('url-hello', 'add', { a: 2, b: 40 })).json.result).toEqual({ sum: 42 })
  }, 60_000)

  test('npm: packed from the configured registry; dependencies installed without running their install scripts', async () => {
    const dep = makeTgz([
      { path: 'package/package.json', content: JSON.stringify({ name: 'tiny-shout', version: '1.0.0', main: 'index.js', scripts: { install: `node -e "require('fs').writeFileSync('${marker}', 'ran')"` } }) },
      { path: 'package/index.js', content: `module.exports = (text) => String(text).toUpperCase() + '!'` },
    ])
    publish('tiny-shout', '1.0.0', dep)
    const plugin = pluginFiles('npm-hello', { shout: `async ({ text }) => ({ text: require('tiny-shout')(text) })` }, { version: '2.0.0', dependencies: { 'tiny-shout': '^1.0.0' } })
    publish('npm-hello', '2.0.0', tgzOf(plugin, 'package/'), { 'tiny-shout': '^1.0.0' })
    const res = await install({ source: 'npm', package: 'npm-hello', version: '2.0.0' })
    expect(res.json).toMatchObject({ success: true, plugin: 'npm-hello', version: '2.0.0', status: 'enabled' })
    expect(res.status).toBe(200)
    expect((await exec('npm-hello', 'shout', { text: 'hi' })).json.result).toEqual({ text: 'HI!' })
    expect(existsSync(marker)).toBe(false)
    const missing = await install({ source: 'npm', package: 'no-such-package', version: '1.0.0' })
    expect(missing.status).toBe(400)
    expect(missing.json.code).toBe('INSTALL_FAILED')
  }, 60_000)

  test('a name that exists is 409 (installed or built-in)', async () => {
    const again = await install({ source: 'git', package: join(root, 'git-repo'), version: 'v1.2.0' })
    expect(again.status).toBe(409)
    expect(again.json.code).toBe('CONFLICT')
    files.set('/archives/calculator.tgz', tgzOf(pluginFiles('calculator', { evaluate: `() => ({ value: 666 })` })))
    const builtin = await install({ source: 'url', package: `${base}/archives/calculator.tgz`, version: '1' })
    expect(builtin.status).toBe(409)
    expect((await exec('calculator', 'evaluate', { expression: '1+1' })).json.result).toEqual({ value: 2 })
  }, 60_000)

  test('archives with ../ entries, absolute paths or symlinks pointing out are refused and leave no folder', async () => {
    const good = pluginFiles('evil', { run: `() => 1` })
    const cases: Record<string, Parameters<typeof makeTgz>[0]> = {
      dotdot: [...Object.entries(good.files).map(([path, content]) => ({ path, content })), { path: '../evil.txt', content: 'escaped' }],
      nested: [...Object.entries(good.files).map(([path, content]) => ({ path, content })), { path: 'lib/../../../evil.txt', content: 'escaped' }],
      absolute: [...Object.entries(good.files).map(([path, content]) => ({ path, content })), { path: `${root}/absolute-evil.txt`, content: 'escaped' }],
      symlink: [...Object.entries(good.files).map(([path, content]) => ({ path, content })), { path: 'secret', type: 'symlink', link: '../../data/jwt-secret' }],
      symlinkAbsolute: [...Object.entries(good.files).map(([path, content]) => ({ path, content })), { path: 'passwd', type: 'symlink', link: '/etc/passwd' }],
      throughSymlink: [
        ...Object.entries(good.files).map(([path, content]) => ({ path, content })),
        { path: 'here', type: 'symlink', link: '.' },
        { path: 'here/here/here/out', type: 'symlink', link: '../../../escaped' },
      ],
    }
    for (const [name, entries] of Object.entries(cases)) {
      files.set(`/archives/${name}.tgz`, makeTgz(entries))
      const res = await install({ source: 'url', package: `${base}/archives/${name}.tgz`, version: '1' })
      expect({ name, status: res.status, code: res.json.code }).toEqual({ name, status: 400, code: 'INSTALL_FAILED' })
      expect(res.json.message).not.toContain(root)
    }
    expect(folders()).toEqual(['git-hello', 'npm-hello', 'url-hello'])
    expect(existsSync(join(root, 'evil.txt'))).toBe(false)
    expect(existsSync(join(root, 'absolute-evil.txt'))).toBe(false)
    expect(existsSync(join(root, 'escaped'))).toBe(false)
  }, 60_000)

  test('a bad manifest, a bad URL and a bad source are 400s', async () => {
    files.set('/archives/no-manifest.tgz', makeTgz([{ path: 'index.js', content: 'exports.x = () => 1' }]))
    const noManifest = await install({ source: 'url', package: `${base}/archives/no-manifest.tgz`, version: '1' })
    expect(noManifest.json).toMatchObject({ code: 'INSTALL_FAILED' })
    expect(noManifest.json.message).toContain('plugin.json')
    const badName = pluginFiles('Bad_Name', { x: '() => 1' })
    files.set('/archives/bad-name.tgz', tgzOf(badName))
    expect((await install({ source: 'url', package: `${base}/archives/bad-name.tgz`, version: '1' })).json.message).toContain('name')
    files.set('/archives/garbage.tgz', new TextEncoder().encode('this is not gzip'))
    expect((await install({ source: 'url', package: `${base}/archives/garbage.tgz`, version: '1' })).json.code).toBe('INSTALL_FAILED')
    expect((await install({ source: 'url', package: 'file:///etc/passwd', version: '1' })).json.code).toBe('INSTALL_FAILED')
    expect((await install({ source: 'npm', package: '../../etc', version: '1' })).json.code).toBe('INSTALL_FAILED')
    expect((await install({ source: 'ftp', package: 'x', version: '1' })).status).toBe(400)
    expect((await install({ source: 'git', package: 'ext::sh -c touch% /tmp/pwned', version: 'v1' })).json.code).toBe('INSTALL_FAILED')
    expect(folders()).toEqual(['git-hello', 'npm-hello', 'url-hello'])
  }, 60_000)

  test('non-admins get 403 for install, enable, disable and remove; any user may execute', async () => {
    const user = await server.userSession('plugin-user@example.com')
    expect((await install({ source: 'git', package: join(root, 'git-repo'), version: 'v1.2.0' }, user.accessToken)).status).toBe(403)
    for (const path of ['/plugins/url-hello/enable', '/plugins/url-hello/disable']) {
      const res = await server.call('POST', path, { token: user.accessToken })
      expect(res.status).toBe(403)
      expect(res.json.code).toBe('FORBIDDEN')
    }
    expect((await server.call('DELETE', '/plugins/url-hello', { token: user.accessToken })).status).toBe(403)
    const run = await server.call('POST', '/plugins/url-hello/execute', { token: user.accessToken, body: { action: 'add', parameters: { a: 1, b: 1 } } })
    expect(run.json.result).toEqual({ sum: 2 })
  }, 60_000)

  test('installed plugins and their status survive a restart; disabled is 409; remove deletes the folder', async () => {
    expect((await server.call('POST', '/plugins/url-hello/disable', { token })).json.status).toBe('disabled')
    expect((await exec('url-hello', 'add', { a: 1, b: 2 })).status).toBe(409)
    server.services.plugins.close()
    server = makeServer({ pluginsDir, database: join(root, 'uagent.db'), dataDir, jwtSecret: 'k'.repeat(40) })
    token = (await server.login(ADMIN.email, ADMIN.password)).accessToken
    const listed = (await server.call('GET', '/plugins', { token })).json.plugins
    expect(listed.find((p: any) => p.name === 'git-hello')).toMatchObject({ status: 'enabled', version: '1.2.0' })
    expect(listed.find((p: any) => p.name === 'url-hello')).toMatchObject({ status: 'disabled' })
    expect((await exec('git-hello', 'greet', { name: 'again' })).json.result).toEqual({ greeting: 'Hello, again from git' })
    expect((await exec('url-hello', 'add', { a: 1, b: 2 })).json.code).toBe('PLUGIN_DISABLED')
    const removed = await server.call('DELETE', '/plugins/git-hello', { token })
    expect(removed.status).toBe(200)
    expect(existsSync(join(pluginsDir, 'git-hello'))).toBe(false)
    expect((await exec('git-hello', 'greet', { name: 'x' })).status).toBe(404)
    expect((await server.call('DELETE', '/plugins/git-hello', { token })).status).toBe(404)
  }, 60_000)
})
