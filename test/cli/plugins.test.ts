import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { makeServer } from '../helpers'
import { describeWithPluginTools, gitRepo, pluginFiles, tgzOf } from '../modules/plugins/fixtures'
import { tempDir } from '../temp'
import { liveServer } from './live-server'

// Real processes (Node workers, git, npm, the CLI) on a shared machine: generous per-test limits.
setDefaultTimeout(30_000)

const root = tempDir('cli-plugins')
const pluginsDir = join(root, 'plugins')
const server = makeServer({ pluginsDir, jwtSecret: 'c'.repeat(48) })
const archive = tgzOf(pluginFiles('cli-url', { echo: `(params) => ({ echoed: params })` }, { version: '3.1.0' }), 'package/')
let files: ReturnType<typeof Bun.serve>

beforeAll(() => {
  files = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response(archive as BodyInit) })
  if (Bun.which('git')) gitRepo(join(root, 'repo'), pluginFiles('cli-git', { hi: `() => 'hi from git'` }), 'v2.0.0')
})
const live = liveServer(server.app, { login: true, cleanup: () => server.services.plugins.close() })
const { run, api } = live
afterAll(() => files.stop(true))

describeWithPluginTools('uagent plugins', () => {
  test('list and show print the catalog; --json is the API body', async () => {
    const list = await run(['plugins', 'list'])
    expect(list.code).toBe(0)
    for (const name of ['calculator', 'datetime', 'text', 'knowledge']) expect(list.stdout).toContain(name)
    expect(list.stdout).toContain('enabled')
    expect(JSON.parse((await run(['--json', 'plugins', 'list'])).stdout)).toEqual(await api('GET', '/plugins'))
    const show = await run(['plugins', 'show', 'calculator'])
    expect(show.code).toBe(0)
    expect(show.stdout).toContain('evaluate')
    expect(show.stdout).toContain('expression: string')
    expect(show.stdout).toMatch(/evaluate\S*\s*(\x1b\[\d+m)?\(read-only\)/)
    expect(JSON.parse((await run(['--json', 'plugins', 'show', 'datetime'])).stdout)).toEqual(await api('GET', '/plugins/datetime'))
    const missing = await run(['plugins', 'show', 'nope'])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain('NOT_FOUND')
  })

  test('exec with --param, --params JSON and --params - (stdin); errors exit 1 with their code', async () => {
    const calc = await run(['plugins', 'exec', 'calculator', 'evaluate', '--param', 'expression=2 * (3 + 4)'])
    expect(calc.code).toBe(0)
    expect(JSON.parse(calc.stdout)).toEqual({ value: 14 })
    const typed = await run(['plugins', 'exec', 'text', 'summarize', '--param', 'text=One fish. Two fish. Red fish.', '--param', 'sentences=1'])
    expect(typed.code).toBe(0)
    expect(JSON.parse(typed.stdout).sentences).toHaveLength(1)
    const stringy = await run(['plugins', 'exec', 'text', 'stats', '--param', 'text=123'])
    expect(JSON.parse(stringy.stdout)).toMatchObject({ words: 1, characters: 3 })
    const json = await run(['--json', 'plugins', 'exec', 'datetime', 'now', '--params', '{"timezone":"Asia/Tokyo"}'])
    expect(JSON.parse(json.stdout)).toMatchObject({ success: true, plugin: 'datetime', action: 'now', result: { timezone: 'Asia/Tokyo', offset: '+09:00' } })
    const stdin = await run(['plugins', 'exec', 'text', 'slugify', '--params', '-'], {}, { stdin: '{"text":"Hello World!"}' })
    expect(stdin.code).toBe(0)
    expect(JSON.parse(stdin.stdout)).toEqual({ slug: 'hello-world' })
    const bad = await run(['plugins', 'exec', 'calculator', 'evaluate', '--param', 'expression=process.exit()'])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain('PLUGIN_ERROR')
    expect((await run(['plugins', 'exec', 'calculator', 'evaluate', '--params', '{nope'])).code).toBe(2)
    expect((await run(['plugins', 'exec', 'calculator', 'evaluate', '--param', 'novalue'])).code).toBe(2)
  })

  test('install from url (with --sha256) and git (--version), exec, disable, enable, remove', async () => {
    const sha256 = createHash('sha256').update(archive).digest('hex')
    const fromUrl = await run(['plugins', 'install', 'url', `http://127.0.0.1:${files.port}/cli-url.tgz`, '--sha256', sha256])
    expect(fromUrl.stderr).toBe('')
    expect(fromUrl.code).toBe(0)
    expect(fromUrl.stdout).toContain('cli-url 3.1.0')
    const mismatch = await run(['plugins', 'install', 'url', `http://127.0.0.1:${files.port}/cli-url.tgz`, '--sha256', 'b'.repeat(64)])
    expect(mismatch.code).toBe(1)
    expect(mismatch.stderr).toContain('INSTALL_FAILED')
    const fromGit = await run(['--json', 'plugins', 'install', 'git', join(root, 'repo'), '--version', 'v2.0.0'])
    expect(fromGit.code).toBe(0)
    expect(JSON.parse(fromGit.stdout)).toMatchObject({ success: true, plugin: 'cli-git', version: '1.0.0', status: 'enabled' })
    const echo = await run(['plugins', 'exec', 'cli-url', 'echo', '--param', 'n=5', '--param', 'word=five'])
    expect(JSON.parse(echo.stdout)).toEqual({ echoed: { n: 5, word: 'five' } })
    expect((await run(['plugins', 'exec', 'cli-git', 'hi'])).stdout.trim()).toBe('hi from git')

    const disabled = await run(['plugins', 'disable', 'cli-git'])
    expect(disabled.code).toBe(0)
    expect(disabled.stdout).toContain('cli-git is disabled')
    const refused = await run(['plugins', 'exec', 'cli-git', 'hi'])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('PLUGIN_DISABLED')
    expect((await run(['plugins', 'enable', 'cli-git'])).stdout).toContain('cli-git is enabled')
    const removed = await run(['plugins', 'remove', 'cli-git'])
    expect(removed.code).toBe(0)
    expect(existsSync(join(pluginsDir, 'cli-git'))).toBe(false)
    expect((await run(['plugins', 'show', 'cli-git'])).code).toBe(1)
    expect((await run(['plugins', 'install', 'svn', 'x'])).code).toBe(2)
  })

  test('a non-admin cannot install, enable, disable or remove (exit 1, FORBIDDEN)', async () => {
    await api('POST', '/auth/users', { email: 'cli-plain@example.com', password: 'plain-password-1', roles: ['user'] })
    const login = await fetch(`${live.base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'cli-plain@example.com', password: 'plain-password-1' }) })
    const { accessToken } = (await login.json()) as { accessToken: string }
    for (const args of [['install', 'git', join(root, 'repo'), '--version', 'v2.0.0'], ['disable', 'calculator'], ['enable', 'calculator'], ['remove', 'cli-url']]) {
      const result = await run(['--token', accessToken, 'plugins', ...args])
      expect(result.code).toBe(1)
      expect(result.stderr).toContain('FORBIDDEN')
    }
    const exec = await run(['--token', accessToken, 'plugins', 'exec', 'cli-url', 'echo', '--params', '{"a":1}'])
    expect(JSON.parse(exec.stdout)).toEqual({ echoed: { a: 1 } })
  })
})
