import { afterAll, describe, expect, test } from 'bun:test'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { createApp } from '../../src/app'
import { ADMIN } from '../helpers'
import { liveServer } from './live-server'

const live = liveServer(createApp({ database: ':memory:', adminEmail: ADMIN.email, adminPassword: ADMIN.password, env: {}, log: () => {} }))
const running: Bun.Subprocess[] = []
afterAll(() => {
  for (const proc of running) proc.kill()
})

/** Reads a stream until `pattern` matches; returns the match and keeps reading nothing more. */
async function readUntil(stream: ReadableStream<Uint8Array>, pattern: RegExp, ms = 15_000): Promise<{ match: RegExpExecArray; seen: string; rest: () => Promise<string> }> {
  const reader = stream.getReader()
  const decoder = new TextDecoder()
  let seen = ''
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    const chunk = await Promise.race([reader.read(), Bun.sleep(deadline - Date.now()).then(() => null)])
    if (!chunk || chunk.done) break
    seen += decoder.decode(chunk.value, { stream: true })
    const match = pattern.exec(seen)
    if (match) {
      const rest = async () => {
        let more = ''
        for (;;) {
          const next = await reader.read()
          if (next.done) return seen + more
          more += decoder.decode(next.value, { stream: true })
        }
      }
      return { match, seen, rest }
    }
  }
  throw new Error(`no ${pattern} in: ${seen}`)
}

async function userToken(email: string): Promise<string> {
  const admin = await (await fetch(`${live.base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) })).json()
  await live.request('POST', '/auth/users', { email, password: 'web-user-password-1' }, admin.accessToken)
  return (await (await fetch(`${live.base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: 'web-user-password-1' }) })).json()).accessToken
}

describe('uagent login --web', () => {
  test('uagent sso providers prints what the server offers (public: no login needed)', async () => {
    const res = await live.run(['--json', 'sso', 'providers'])
    expect(res.code).toBe(0)
    expect(JSON.parse(res.stdout)).toEqual({ password: true, oidc: null, ldap: false })
    expect((await live.run(['sso', 'providers'])).stdout).toContain('not configured')
  })

  test('prints the URL and code, waits for approval in the browser, then stores the tokens like uagent login', async () => {
    const token = await userToken('sso-cli@example.com')
    const proc = live.spawn(['--json', 'login', '--web', '--no-browser'])
    running.push(proc)
    const { match } = await readUntil(proc.stderr, /open (\S+) and enter the code ([A-Z]{4}-[A-Z]{4})/)
    expect(match[1]).toBe(`${live.base}/app/device`)
    const approved = await live.request('POST', `/auth/device/${match[2]}/approve`, undefined, token)
    expect(approved.status).toBe(200)
    const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited])
    expect(code).toBe(0)
    const body = JSON.parse(stdout)
    expect(body.user.email).toBe('sso-cli@example.com')
    const path = join(live.config, 'uagent/credentials.json')
    const stored = JSON.parse(readFileSync(path, 'utf8'))
    expect(stored).toMatchObject({ url: live.base, email: 'sso-cli@example.com', refreshToken: body.refreshToken })
    expect(statSync(path).mode & 0o777).toBe(0o600)
    // The stored login works for the next request.
    expect((await live.request('GET', '/auth/me')).json.email).toBe('sso-cli@example.com')
  }, 30_000)

  test('a code denied from another signed-in terminal (uagent sso device deny) ends with exit code 1 and ACCESS_DENIED', async () => {
    const token = await userToken('sso-cli-deny@example.com')
    const proc = live.spawn(['login', '--web', '--no-browser'])
    running.push(proc)
    const { match, rest } = await readUntil(proc.stderr, /enter the code ([A-Z]{4}-[A-Z]{4})/)
    const shown = await live.run(['--json', 'sso', 'device', 'show', match[1]!], { UAGENT_TOKEN: token })
    expect(shown.code).toBe(0)
    expect(JSON.parse(shown.stdout)).toMatchObject({ userCode: match[1], status: 'pending' })
    const denied = await live.run(['sso', 'device', 'deny', match[1]!], { UAGENT_TOKEN: token })
    expect([denied.code, denied.stdout.trim()]).toEqual([0, 'Denied: the command line is not signed in'])
    const [stderr, code] = await Promise.all([rest(), proc.exited])
    expect(code).toBe(1)
    expect(stderr).toContain('ACCESS_DENIED')
  }, 30_000)
})
