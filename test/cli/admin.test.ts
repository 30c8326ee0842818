import { describe, expect, test } from 'bun:test'
import { TOTP, Secret } from 'otpauth'
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildApp, createServices } from '../../src/app'
import { ADMIN, tempDir } from '../helpers'
import { liveServer } from './live-server'

// A server on a real data dir, as `bun run start` runs it, so that host operations can work on its files.
const dataDir = tempDir('cli-admin-data')
const live = liveServer()
const { run } = live

/** Starts a server on the data dir (again); its URL. */
function start() {
  const services = createServices({ dataDir, adminEmail: ADMIN.email, adminPassword: ADMIN.password, env: {}, log: () => {}, jwtSecret: 'k'.repeat(48) })
  return live.start(buildApp(services), () => services.db.close())
}

describe('account administration from the CLI', () => {
  test('users list|create|password|unlock|disable|enable|delete end to end, by email or id', async () => {
    start()
    expect((await run(['login', '--email', ADMIN.email, '--password', ADMIN.password])).code).toBe(0)
    const created = await run(['--json', 'users', 'create', '--email', 'bob@example.com', '--password', 'bob-password-1'])
    expect(created.code).toBe(0)
    const bobId = JSON.parse(created.stdout).user.id

    const list = await run(['users', 'list'], { COLUMNS: '70' })
    expect(list.code).toBe(0)
    expect(list.stdout).toMatch(/^EMAIL\s+ROLES\s+MFA\s+STATE/)
    expect(list.stdout).toContain('bob@example.com')
    expect(list.stdout).toContain('active')
    for (const line of list.stdout.trimEnd().split('\n')) expect(line.length).toBeLessThanOrEqual(70)

    const password = await run(['users', 'password', 'bob@example.com', '--password', 'bob-password-2'])
    expect(password.code).toBe(0)
    expect(password.stdout).toContain('Password of bob@example.com set')
    const bob = { XDG_CONFIG_HOME: tempDir('cli-bob') }
    expect((await run(['login', '--email', 'bob@example.com', '--password', 'bob-password-1'], bob)).code).toBe(1)
    for (let i = 0; i < 4; i++) await run(['login', '--email', 'bob@example.com', '--password', 'wrong-password'], bob)
    const locked = await run(['login', '--email', 'bob@example.com', '--password', 'bob-password-2'], bob)
    expect(locked.stderr).toContain('TOO_MANY_ATTEMPTS')
    const unlock = await run(['users', 'unlock', bobId])
    expect(unlock.code).toBe(0)
    expect(unlock.stdout).toContain('bob@example.com unlocked')
    expect((await run(['login', '--email', 'bob@example.com', '--password', 'bob-password-2'], bob)).code).toBe(0)
    expect((await run(['conversations', 'list'], bob)).code).toBe(0)

    const disable = await run(['users', 'disable', 'bob@example.com'])
    expect(disable.stdout).toContain('bob@example.com disabled')
    const refused = await run(['conversations', 'list'], bob)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('not logged in or session expired: run `uagent login`')
    const listed = JSON.parse((await run(['--json', 'users', 'list'])).stdout)
    expect(listed.users.find((u: any) => u.email === 'bob@example.com').disabled).toBe(true)
    expect((await run(['users', 'enable', 'bob@example.com'])).stdout).toContain('bob@example.com enabled')
    expect((await run(['login', '--email', 'bob@example.com', '--password', 'bob-password-2'], bob)).code).toBe(0)

    const removed = await run(['users', 'delete', 'bob@example.com'])
    expect(removed.code).toBe(0)
    expect(removed.stdout).toContain('Deleted bob@example.com')
    const gone = await run(['users', 'delete', 'bob@example.com'])
    expect(gone.code).toBe(1)
    expect(gone.stderr).toContain('no user with id or email')
    const last = await run(['users', 'disable', ADMIN.email])
    expect(last.code).toBe(1)
    expect(last.stderr).toContain('last admin')
  }, 60_000)

  test('admin reset-password works on a stopped server’s data dir; the server then takes the new password', async () => {
    live.stop()
    const reset = await run(['admin', 'reset-password', ADMIN.email, '--data-dir', dataDir, '--password', 'recovered-password-1'], {}, { url: null })
    expect(reset.stderr).toBe('')
    expect(reset.code).toBe(0)
    expect(reset.stdout).toContain(`Password of ${ADMIN.email} reset`)
    // Through UAGENT_DATA_DIR, without a terminal: a password is generated and shown once.
    const generated = await run(['--json', 'admin', 'reset-password', ADMIN.email], { UAGENT_DATA_DIR: dataDir }, { url: null })
    expect(generated.code).toBe(0)
    const newPassword = JSON.parse(generated.stdout).password
    expect(newPassword.length).toBeGreaterThanOrEqual(12)
    const base = start()
    const old = await fetch(`${base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: ADMIN.email, password: 'recovered-password-1' }) })
    expect(old.status).toBe(401)
    const login = await run(['login', '--email', ADMIN.email, '--password', newPassword])
    expect(login.code).toBe(0)
    // Both host resets are in the audit log (no actor: whoever has the host), without the password.
    const audit = await run(['--json', 'admin', 'audit', '--action', 'user.password_reset'])
    // (The admin's reset through the API in the test above has an actor.)
    const resets = JSON.parse(audit.stdout).events.filter((e: { actor: unknown }) => e.actor === null)
    expect(resets).toHaveLength(2)
    expect(resets[0]).toMatchObject({ actor: null, details: { email: ADMIN.email, via: 'uagent admin reset-password' } })
    expect(audit.stdout).not.toContain(newPassword)
    expect(audit.stdout).not.toContain('recovered-password-1')
    // A reset while the server runs works too: logins take the new password at once.
    expect((await run(['admin', 'reset-password', ADMIN.email, '--data-dir', dataDir, '--password', ADMIN.password], {}, { url: null })).code).toBe(0)
    expect((await run(['login', '--email', ADMIN.email, '--password', ADMIN.password])).code).toBe(0)

    const missing = await run(['admin', 'reset-password', 'nobody@example.com', '--data-dir', dataDir, '--password', 'whatever-123'], {}, { url: null })
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain('no account with email nobody@example.com')
    const noData = tempDir('cli-empty')
    const none = await run(['admin', 'reset-password', ADMIN.email, '--data-dir', noData, '--password', 'whatever-123'], {}, { url: null })
    expect(none.code).toBe(2)
    expect(none.stderr).toContain('no database at')
  }, 60_000)
})

describe('backups from the CLI', () => {
  test('admin backup -o FILE against the live server, admin backups, then admin restore on the stopped server keeps the old data dir aside; a tampered archive is refused', async () => {
    expect((await run(['login', '--email', ADMIN.email, '--password', ADMIN.password])).code).toBe(0)
    await run(['chat', '--no-stream', 'remember', 'the', 'backup'])
    const folder = tempDir('cli-backup')
    const file = join(folder, 'nightly.tar.gz')
    const backup = await run(['admin', 'backup', '-o', file])
    expect(backup.stderr).toBe('')
    expect(backup.code).toBe(0)
    expect(backup.stdout).toContain(`Backup saved to ${file}`)
    const listed = await run(['--json', 'admin', 'backups'])
    expect(listed.code).toBe(0)
    expect(JSON.parse(listed.stdout).schedule).toEqual({ intervalSeconds: 0, keep: 7 })

    const tampered = join(folder, 'tampered.tar.gz')
    const bytes = new Uint8Array(readFileSync(file))
    bytes[Math.floor(bytes.length / 2)]! ^= 0xff
    writeFileSync(tampered, bytes)
    live.stop()
    const refused = await run(['admin', 'restore', tampered, '--data-dir', dataDir], {}, { url: null })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('RESTORE_REFUSED')
    expect(refused.stderr).toContain('nothing was changed')

    const restored = await run(['admin', 'restore', file, '--data-dir', dataDir], {}, { url: null })
    expect(restored.stderr).toBe('')
    expect(restored.code).toBe(0)
    expect(restored.stdout).toContain('checksums and integrity_check passed')
    const aside = /kept at (\S+)\./.exec(restored.stdout)![1]!
    expect(existsSync(join(aside, 'uagent.db'))).toBe(true)
    start()
    expect((await run(['login', '--email', ADMIN.email, '--password', ADMIN.password])).code).toBe(0)
    const conversations = JSON.parse((await run(['--json', 'conversations', 'list'])).stdout)
    expect(conversations.conversations.some((c: any) => c.messages[0]?.content === 'remember the backup')).toBe(true)
    const restoredEvents = JSON.parse((await run(['--json', 'admin', 'audit', '--action', 'backup.restored'])).stdout).events
    expect(restoredEvents).toHaveLength(1)
    expect(restoredEvents[0]).toMatchObject({ actor: null, target: 'nightly.tar.gz', details: { via: 'uagent admin restore', postgres: false } })
    // The folder kept aside goes with the test's temp folders.
    rmSync(aside, { recursive: true, force: true })
  }, 90_000)
})

describe('the CLI speaks to people', () => {
  test('validation errors name the flag, never the API field', async () => {
    expect((await run(['login', '--email', ADMIN.email, '--password', ADMIN.password])).code).toBe(0)
    const res = await run(['conversations', 'list', '--limit', '500'])
    expect(res.code).toBe(1)
    expect(res.stderr).toContain('--limit must be an integer from 1 to 100')
    expect(res.stderr).not.toContain('query.limit')
    const search = await run(['rag', 'search', 'docs', 'anything', '--limit', '0'])
    expect(search.stderr).toContain('--limit must be')
    expect(search.stderr).not.toContain('body.limit')
  }, 30_000)

  test('a refused token says how to log in again', async () => {
    const res = await run(['--token', 'not-a-token', 'conversations', 'list'])
    expect(res.code).toBe(1)
    expect(res.stderr).toContain('not logged in or session expired: run `uagent login`')
  })

  test('login of an MFA account without a code and without a terminal names --mfa-code; with it, logs in', async () => {
    const body = { email: ADMIN.email, password: ADMIN.password }
    const login = (await (await fetch(`${live.base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json()) as { accessToken: string }
    const headers = { authorization: `Bearer ${login.accessToken}`, 'content-type': 'application/json' }
    const setup = (await (await fetch(`${live.base}/auth/mfa/setup`, { method: 'POST', headers })).json()) as { secret: string }
    const code = (offset = 0) => new TOTP({ secret: Secret.fromBase32(setup.secret), digits: 6, period: 30 }).generate({ timestamp: Date.now() + offset * 30_000 })
    expect((await fetch(`${live.base}/auth/mfa/enable`, { method: 'POST', headers, body: JSON.stringify({ code: code(-1) }) })).status).toBe(200)
    const own = { XDG_CONFIG_HOME: tempDir('cli-mfa') }
    const without = await run(['login', '--email', ADMIN.email, '--password', ADMIN.password], own)
    expect(without.code).toBe(1)
    expect(without.stderr).toContain('--mfa-code')
    const withCode = await run(['login', '--email', ADMIN.email, '--password', ADMIN.password, '--mfa-code', code()], own)
    expect(withCode.code).toBe(0)
    expect(JSON.parse(readFileSync(join(own.XDG_CONFIG_HOME, 'uagent/credentials.json'), 'utf8')).email).toBe(ADMIN.email)
  }, 30_000)

  test('conversations show and delete accept a unique start of the id', async () => {
    const chat = JSON.parse((await run(['--json', 'chat', '--no-stream', 'hello', 'there'])).stdout)
    const id = chat.metadata.conversationId as string
    const show = await run(['conversations', 'show', id.slice(0, 8)])
    expect(show.code).toBe(0)
    expect(show.stdout).toContain(id)
    expect(show.stdout).toContain('hello there')
    const unknown = await run(['conversations', 'show', 'zzzzzz'])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain('no conversation with an id starting "zzzzzz"')
    expect((await run(['conversations', 'delete', id.slice(0, 8)])).code).toBe(0)
    expect((await run(['--json', 'conversations', 'list'])).stdout).not.toContain(id)
  }, 30_000)

  test('`bun run uagent` runs the CLI from a checkout', async () => {
    const proc = Bun.spawn(['bun', 'run', 'uagent', '--version'], { cwd: join(import.meta.dir, '../..'), env: live.env(), stdout: 'pipe', stderr: 'pipe' })
    const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited])
    expect(code).toBe(0)
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/)
  })
})
