import { describe, expect, test } from 'bun:test'
import { SignJWT } from 'jose'
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ADMIN, makeServerWith, ScriptedGenerator, tempDir } from '../helpers'
import { liveServer } from './live-server'

const SECRET = 's'.repeat(48)
const REPLY = 'Here is a reply that arrives one word at a time.'
// Chat answers a word every 20 ms, so streaming shows as separate writes whatever the machine's speed.
const server = makeServerWith(new ScriptedGenerator(REPLY, 20), { jwtSecret: SECRET })
const live = liveServer(server.app)
const { config, run, api } = live

describe('uagent CLI', () => {
  test('wrong password exits 1 with INVALID_CREDENTIALS on stderr', async () => {
    const result = await run(['login', '--email', ADMIN.email, '--password', 'wrong-password'])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('error INVALID_CREDENTIALS:')
  })

  test('login writes a 0600 credentials file and later commands use it', async () => {
    const result = await run(['login', '--email', ADMIN.email, '--password', ADMIN.password])
    expect(result.code).toBe(0)
    const path = join(config, 'uagent/credentials.json')
    expect(statSync(path).mode & 0o777).toBe(0o600)
    expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({ url: live.base, email: ADMIN.email })
    const info = await run(['info'])
    expect(info.code).toBe(0)
    expect(info.stdout).toContain('rate limit')
  })

  test('--json output equals the API body', async () => {
    const info = await run(['--json', 'info'])
    expect(JSON.parse(info.stdout)).toEqual(await api('GET', '/system/info'))
    const health = JSON.parse((await run(['--json', 'health'])).stdout)
    const fromApi = await api('GET', '/health')
    expect({ ...health, uptime: 0, memory: '' }).toEqual({ ...fromApi, uptime: 0, memory: '' })
    expect((await run(['health'])).stdout).toMatch(/workers\s+\d+ busy of \d+ started \(at most [1-9]\d*\), \d+ queued of \d+/)

    const chat = JSON.parse((await run(['--json', 'chat', 'Hello', 'from', 'the', 'CLI'])).stdout)
    expect(chat.response).toBeString()
    expect(Object.keys(chat.metadata).sort()).toEqual(['completionTokens', 'conversationId', 'messageId', 'model', 'optimized', 'promptTokens', 'replyId', 'responseTime', 'tokens'])
    const conversations = JSON.parse((await run(['--json', 'conversations', 'list'])).stdout)
    expect(conversations).toEqual(await api('GET', '/conversations'))
    const page = JSON.parse((await run(['--json', 'conversations', 'list', '--limit', '1', '--offset', '0'])).stdout)
    expect(page).toEqual(await api('GET', '/conversations?limit=1&offset=0'))
    expect(conversations.conversations[0].messages[0].content).toBe('Hello from the CLI')
  })

  test('users create (admin) with --role or --roles; mfa setup, and a wrong code exits 1', async () => {
    const plain = await run(['--json', 'users', 'create', '--email', 'cli-user@example.com', '--password', 'cli-password-1'])
    expect(plain.code).toBe(0)
    expect(JSON.parse(plain.stdout).user).toMatchObject({ email: 'cli-user@example.com', roles: ['user'] })
    const both = await run(['--json', 'users', 'create', '--email', 'cli-admin@example.com', '--password', 'cli-password-1', '--roles', 'admin,user'])
    expect(JSON.parse(both.stdout).user.roles).toEqual(['admin', 'user'])
    const human = await run(['users', 'create', '--email', 'cli-admin2@example.com', '--password', 'cli-password-1', '--role', 'admin'])
    expect(human.stdout).toContain('Created cli-admin2@example.com (admin)')
    const duplicate = await run(['users', 'create', '--email', 'cli-user@example.com', '--password', 'cli-password-1'])
    expect(duplicate.code).toBe(1)
    expect(duplicate.stderr).toContain('error CONFLICT:')
    const listed = await run(['--json', 'users', 'list'])
    expect(JSON.parse(listed.stdout)).toEqual(await api('GET', '/auth/users'))
    const table = await run(['users', 'list'])
    expect(table.stdout).toMatch(/^EMAIL\s+ROLES\s+MFA/)
    expect(table.stdout).toContain('cli-admin2@example.com')

    const setup = await run(['--json', 'mfa', 'setup'])
    expect(setup.code).toBe(0)
    expect(JSON.parse(setup.stdout).otpauthUrl).toStartWith('otpauth://totp/')
    const wrong = await run(['mfa', 'enable', '000000'])
    expect(wrong.code).toBe(1)
    expect(wrong.stderr).toContain('error INVALID_MFA_CODE:')
  })

  test('rag ingest of a folder of 5 files ingests all 5; search finds them; --json equals the API', async () => {
    const folder = tempDir('docs')
    mkdirSync(join(folder, 'guides'))
    writeFileSync(join(folder, 'vpn.md'), '# VPN\n\nConnect with WireGuard before opening internal sites.')
    writeFileSync(join(folder, 'guides/printing.txt'), 'Release print jobs with your badge at any FollowMe printer.')
    writeFileSync(join(folder, 'guides/lunch.html'), '<html><body><h1>Lunch</h1><p>The canteen serves lunch from noon &amp; closes at two.</p><script>x()</script></body></html>')
    writeFileSync(join(folder, 'people.csv'), 'name,team\nAda,compilers\nGrace,navy')
    writeFileSync(join(folder, 'config.json'), '{"retention_days": 35, "backup": "nightly"}')
    writeFileSync(join(folder, 'image.png'), 'not text')
    const ingest = await run(['rag', 'ingest', 'handbook', folder])
    expect(ingest.code).toBe(0)
    expect(ingest.stdout).toContain('5 of 5 documents ingested into handbook')
    const collections = await api('GET', '/rag/collections')
    expect(collections.collections[0]).toMatchObject({ name: 'handbook', documents: 5 })

    const search = await run(['--json', 'rag', 'search', 'handbook', 'canteen', 'lunch', '--limit', '2'])
    const body = JSON.parse(search.stdout)
    expect(body.results[0]).toMatchObject({ id: 'guides/lunch.html', metadata: { title: 'lunch.html' } })
    expect(body.results[0].content).not.toContain('<p>')
    expect(body.results[0].content).not.toContain('x()')
    const fromApi = await api('POST', '/rag/search', { collection: 'handbook', query: 'canteen lunch', limit: 2 })
    expect({ ...body, searchTime: 0 }).toEqual({ ...fromApi, searchTime: 0 })

    const answer = await run(['rag', 'answer', 'handbook', 'How', 'do', 'I', 'release', 'print', 'jobs?'])
    expect(answer.code).toBe(0)
    expect(answer.stdout).toContain('badge')
    expect(answer.stdout).toContain('[1] printing.txt')
  })

  test('rag ingest counts files over 1 MB, and any the server cannot take in one request, as failed, goes on, and exits 1; a broken PDF fails with its reason', async () => {
    const small = makeServerWith(new ScriptedGenerator('ok'), { jwtSecret: SECRET, maxRequestSize: '64kb', maxRequestBytes: 64 * 1024 })
    const listener = small.app.listen({ port: 0 })
    try {
      const url = `http://127.0.0.1:${listener.server!.port}`
      const own = { XDG_CONFIG_HOME: tempDir('cli-big') }
      expect((await run(['--url', url, 'login', '--email', ADMIN.email, '--password', ADMIN.password], own)).code).toBe(0)
      const folder = tempDir('big')
      const text = (kb: number, word: string) => `${word} `.repeat(Math.ceil((kb * 1024) / (word.length + 1)))
      for (const name of ['a', 'b', 'c']) writeFileSync(join(folder, `${name}.txt`), text(40, `topic${name}`))
      writeFileSync(join(folder, 'd-over-request-limit.txt'), text(70, 'wide'))
      writeFileSync(join(folder, 'e-over-1mb.txt'), text(1536, 'huge'))
      const ingest = await run(['--url', url, '--json', 'rag', 'ingest', 'bulk', folder], own)
      expect(ingest.code).toBe(1)
      expect(ingest.stderr).toContain('2 of 5 files failed')
      const body = JSON.parse(ingest.stdout)
      expect(body).toMatchObject({ ingested: 3, failed: 2 })
      expect(body.errors.map((e: { id: string }) => e.id).sort()).toEqual(['d-over-request-limit.txt', 'e-over-1mb.txt'])
      expect(body.errors.find((e: { id: string }) => e.id === 'e-over-1mb.txt').message).toBe('content is larger than 1 MB')

      writeFileSync(join(folder, 'scan.pdf'), Buffer.from([0x25, 0x50, 0x44, 0x46, 0x00, 0x01, 0x02]))
      const binary = await run(['--url', url, 'rag', 'ingest', 'bulk', join(folder, 'scan.pdf')], own)
      expect(binary.code).toBe(1)
      expect(binary.stdout).toContain('failed scan.pdf: not a readable PDF')
    } finally {
      listener.stop(true)
    }
  })

  test('chat streams: several writes reach stdout before the process ends', async () => {
    const proc = live.spawn(['chat', 'Tell', 'me', 'something'])
    const reader = proc.stdout.getReader()
    const reads: string[] = []
    while (true) {
      const { value, done } = await reader.read()
      if (done) break
      reads.push(new TextDecoder().decode(value))
    }
    expect(await proc.exited).toBe(0)
    expect(reads.length).toBeGreaterThan(3)
    expect(reads.join('')).toContain(REPLY)
  })

  test('an expired access token is refreshed transparently', async () => {
    const path = join(config, 'uagent/credentials.json')
    const stored = JSON.parse(readFileSync(path, 'utf8'))
    const claims = JSON.parse(Buffer.from(stored.accessToken.split('.')[1], 'base64url').toString())
    const expired = await new SignJWT({ sid: claims.sid, roles: claims.roles })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(claims.sub)
      .setIssuedAt(Math.floor(Date.now() / 1000) - 3600)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 10)
      .sign(new TextEncoder().encode(SECRET))
    writeFileSync(path, JSON.stringify({ ...stored, accessToken: expired }), { mode: 0o600 })
    const result = await run(['info'])
    expect(result.code).toBe(0)
    const refreshed = JSON.parse(readFileSync(path, 'utf8'))
    expect(refreshed.accessToken).not.toBe(expired)
    expect(refreshed.refreshToken).not.toBe(stored.refreshToken)
  })

  test('usage errors exit 2; an unreachable server exits 3', async () => {
    expect((await run(['no-such-command'])).code).toBe(2)
    expect((await run(['health', '--no-such-option'])).code).toBe(2)
    expect((await run(['rag', 'search'])).code).toBe(2)
    // A malformed option value is refused before any request is sent.
    const badLimit = await run(['rag', 'search', 'docs', 'query', '--limit', 'abc'])
    expect(badLimit.code).toBe(2)
    expect(badLimit.stderr).toContain('expected a whole number, got "abc"')
    expect((await run(['rag', 'search', 'docs', 'query', '--threshold', 'high'])).code).toBe(2)
    expect((await run(['conversations', 'list', '--offset', '1.5'])).code).toBe(2)
    // No command at all is a usage error; asking for help is not.
    const bare = await run([])
    expect(bare.code).toBe(2)
    expect(bare.stderr).toContain('Usage: uagent')
    expect((await run(['help'])).code).toBe(0)
    const unreachable = await run(['health'], {}, { url: 'http://127.0.0.1:9' })
    expect(unreachable.code).toBe(3)
    expect(unreachable.stderr).toContain('error UNREACHABLE')
  })

  test('--help shows an example; --version prints the version', async () => {
    const help = await run(['rag', 'search', '--help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('Example')
    expect((await run(['--version'])).stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/)
  })

  test('password changes the password and keeps this login; without a terminal the passwords must be given', async () => {
    await api('POST', '/auth/users', { email: 'cli-pw@example.com', password: 'first-password-1', roles: ['user'] })
    const own = { XDG_CONFIG_HOME: tempDir('cli-pw') }
    expect((await run(['login', '--email', 'cli-pw@example.com', '--password', 'first-password-1'], own)).code).toBe(0)
    const prompted = await run(['password'], own)
    expect(prompted.code).toBe(2)
    expect(prompted.stderr).toContain('no terminal')
    const wrong = await run(['password', '--current', 'nope', '--new', 'second-password-2'], own)
    expect(wrong.code).toBe(1)
    expect(wrong.stderr).toContain('error INVALID_CREDENTIALS:')
    const changed = await run(['password', '--current', 'first-password-1', '--new', 'second-password-2'], own)
    expect(changed.code).toBe(0)
    expect(changed.stdout).toContain('Password changed')
    expect((await run(['info'], own)).code).toBe(0)
    expect((await run(['login', '--email', 'cli-pw@example.com', '--password', 'first-password-1'], own)).code).toBe(1)
    expect((await run(['login', '--email', 'cli-pw@example.com', '--password', 'second-password-2'], own)).code).toBe(0)
  })

  test('logout revokes the session and forgets the stored login', async () => {
    const result = await run(['logout'])
    expect(result.code).toBe(0)
    const after = await run(['info'])
    expect(after.code).toBe(1)
    expect(after.stderr).toContain('UNAUTHORIZED')
  })
})

describe('uagent models', () => {
  test('pull from a hub given by --endpoint, then list shows it', async () => {
    const fixtures = join(import.meta.dir, '../fixtures/models')
    const hub = Bun.serve({
      port: 0,
      fetch(request) {
        const match = /^\/(.+?\/.+?)\/resolve\/main\/(.+)$/.exec(new URL(request.url).pathname)
        const file = match ? Bun.file(join(fixtures, match[1]!, match[2]!)) : null
        return file && file.size > 0 ? new Response(file) : new Response('not found', { status: 404 })
      },
    })
    try {
      const dir = tempDir('models')
      const pulled = await run(['models', 'pull', 'fixtures/tiny-bert', '--endpoint', `http://127.0.0.1:${hub.port}`, '--dir', dir])
      expect(pulled.code).toBe(0)
      expect(readFileSync(join(dir, 'fixtures/tiny-bert/onnx/model.onnx'))).toEqual(readFileSync(join(fixtures, 'fixtures/tiny-bert/onnx/model.onnx')))
      const listed = JSON.parse((await run(['--json', 'models', 'list', '--dir', dir], { UAGENT_EMBED_MODEL: 'fixtures/tiny-bert' })).stdout)
      expect(listed.models).toEqual([expect.objectContaining({ id: 'fixtures/tiny-bert', kind: 'embedding', active: 'embedder' })])
      const missing = await run(['models', 'pull', 'acme/none', '--endpoint', `http://127.0.0.1:${hub.port}`, '--dir', dir])
      expect(missing.code).toBe(1)
      expect(missing.stderr).toContain('error PULL_FAILED')
    } finally {
      hub.stop(true)
    }
  })
})
