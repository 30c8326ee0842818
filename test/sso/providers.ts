import { type Subprocess, spawn } from 'bun'
import { mkdirSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { join } from 'node:path'
import { freePort } from '../redis'
import { tempDir } from '../temp'

/** Reads a child's stdout until a line matches; fails after `ms` with what it printed. */
async function waitForLine(child: Subprocess<'ignore', 'pipe', 'pipe'>, pattern: RegExp, ms: number): Promise<RegExpExecArray> {
  const reader = child.stdout.getReader()
  const decoder = new TextDecoder()
  let seen = ''
  const deadline = Date.now() + ms
  try {
    while (Date.now() < deadline) {
      const chunk = await Promise.race([reader.read(), Bun.sleep(deadline - Date.now()).then(() => null)])
      if (!chunk || chunk.done) break
      seen += decoder.decode(chunk.value)
      const match = pattern.exec(seen)
      if (match) return match
    }
  } finally {
    reader.releaseLock()
  }
  throw new Error(`no line matching ${pattern} within ${ms} ms; stdout: ${seen}; stderr: ${await new Response(child.stderr).text().catch(() => '')}`)
}

/** Ends a child and everything it started (its process group). */
function stopGroup(child: Subprocess): Promise<unknown> {
  try {
    process.kill(-child.pid, 'SIGTERM')
  } catch {
    child.kill('SIGTERM')
  }
  const forced = setTimeout(() => {
    try {
      process.kill(-child.pid, 'SIGKILL')
    } catch {}
  }, 3000)
  return child.exited.finally(() => clearTimeout(forced))
}

export interface OidcAccount {
  email?: string
  email_verified?: boolean
  name?: string
  groups?: string[]
}

export interface OidcFixture {
  issuer: string
  clientId: string
  clientSecret: string
  /** Replaces the provider's accounts (read at each sign-in). */
  setAccounts(accounts: Record<string, OidcAccount>): void
  stop(): Promise<unknown>
}

/**
 * panva's oidc-provider under Node on a free port, with one client whose redirect URIs are given.
 * `groupsScope`: the groups claim is released only for the `groups` scope (Dex, Okta), not with `profile`.
 */
export async function startOidcProvider(redirectUris: string[], accounts: Record<string, OidcAccount>, options: { groupsScope?: boolean } = {}): Promise<OidcFixture> {
  const clientId = 'uagent-test'
  const clientSecret = 'uagent-test-secret-0123456789abcdef'
  const accountsFile = join(tempDir('oidc'), 'accounts.json')
  const setAccounts = (next: Record<string, OidcAccount>) => writeFileSync(accountsFile, JSON.stringify(next))
  setAccounts(accounts)
  const child = spawn(['node', join(import.meta.dir, 'oidc-provider.mjs')], {
    cwd: join(import.meta.dir, '../..'),
    env: { ...process.env, NODE_ENV: 'test', OIDC_FIXTURE: JSON.stringify({ clients: [{ client_id: clientId, client_secret: clientSecret, redirect_uris: redirectUris }], accountsFile, groupsScope: options.groupsScope === true }) },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
    detached: true,
  })
  try {
    const [, issuer] = await waitForLine(child, /READY (\S+)\n/, 20_000)
    return { issuer: issuer!, clientId, clientSecret, setAccounts, stop: () => stopGroup(child) }
  } catch (error) {
    await stopGroup(child)
    throw error
  }
}

export interface LdapFixture {
  url: string
  suffix: string
  adminDn: string
  adminPassword: string
  /** ldapadd/ldapmodify with the directory's admin. */
  modify(ldif: string): Promise<void>
  stop(): Promise<unknown>
  /** Stops the server but keeps its data (to test a directory that is down); start() brings it back on the same port. */
  pause(): Promise<unknown>
  start(): Promise<void>
}

const SUFFIX = 'dc=example,dc=com'

/** Debian's slapd with a throwaway directory (mdb in a temp folder) on a free port of 127.0.0.1, loaded with `ldif`. */
export async function startSlapd(ldif: string): Promise<LdapFixture> {
  const dir = tempDir('slapd')
  mkdirSync(join(dir, 'db'))
  const adminDn = `cn=admin,${SUFFIX}`
  const adminPassword = 'directory-admin-pw'
  writeFileSync(
    join(dir, 'slapd.conf'),
    [
      'include /etc/ldap/schema/core.schema',
      'include /etc/ldap/schema/cosine.schema',
      'include /etc/ldap/schema/inetorgperson.schema',
      'include /etc/ldap/schema/nis.schema',
      `pidfile ${dir}/slapd.pid`,
      'modulepath /usr/lib/ldap',
      'moduleload back_mdb',
      'database mdb',
      `suffix "${SUFFIX}"`,
      `rootdn "${adminDn}"`,
      `rootpw ${adminPassword}`,
      `directory ${dir}/db`,
      'maxsize 16777216',
      // Users may read the directory once bound (the service account searches; users bind).
      'access to attrs=userPassword by self write by anonymous auth by * none',
      'access to * by users read by * none',
      '',
    ].join('\n'),
  )
  const port = freePort()
  const url = `ldap://127.0.0.1:${port}`
  let child: Subprocess<'ignore', 'pipe', 'pipe'> | null = null
  const start = async () => {
    child = spawn(['slapd', '-d', '0', '-f', join(dir, 'slapd.conf'), '-h', `${url}/`], { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe', detached: true })
    const deadline = Date.now() + 15_000
    for (;;) {
      const up = await new Promise<boolean>((resolve) => {
        const socket = net.connect(port, '127.0.0.1', () => (socket.end(), resolve(true)))
        socket.on('error', () => resolve(false))
      })
      if (up) return
      if (Date.now() > deadline || child.exitCode !== null) {
        const stderr = await new Response(child.stderr).text().catch(() => '')
        await stopGroup(child)
        throw new Error(`slapd did not start on ${url}: ${stderr}`)
      }
      await Bun.sleep(100)
    }
  }
  const stop = async () => {
    if (child) await stopGroup(child)
    child = null
  }
  const modify = async (text: string) => {
    const tool = spawn(['ldapmodify', '-a', '-x', '-H', url, '-D', adminDn, '-w', adminPassword], { stdin: new TextEncoder().encode(text), stdout: 'pipe', stderr: 'pipe' })
    if ((await tool.exited) !== 0) throw new Error(`ldapmodify failed: ${await new Response(tool.stderr).text()}`)
  }
  await start()
  try {
    await modify(ldif)
  } catch (error) {
    await stop()
    throw error
  }
  return { url, suffix: SUFFIX, adminDn, adminPassword, modify, stop, pause: stop, start }
}

/**
 * Signs in at the provider the way a browser would (following redirects, keeping its cookies,
 * filling its development login form with `login`) and returns the URL it finally sends the
 * browser to: the callback, under `callbackPrefix`.
 */
export async function signInAtProvider(authorizationUrl: string, login: string, callbackPrefix: string): Promise<string> {
  const jar = new Map<string, string>()
  let url = authorizationUrl
  let form: string | undefined
  for (let step = 0; step < 12; step++) {
    const headers: Record<string, string> = { cookie: [...jar].map(([name, value]) => `${name}=${value}`).join('; ') }
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded'
    const res = await fetch(url, { method: form ? 'POST' : 'GET', body: form, headers, redirect: 'manual' })
    for (const cookie of res.headers.getSetCookie()) {
      const [pair] = cookie.split(';')
      const [name, ...value] = pair!.split('=')
      jar.set(name!.trim(), value.join('='))
    }
    form = undefined
    const location = res.headers.get('location')
    if (res.status >= 300 && res.status < 400 && location) {
      url = new URL(location, url).href
      if (url.startsWith(callbackPrefix)) return url
      continue
    }
    const html = await res.text()
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1]
    if (res.status === 200 && action && html.includes('name="login"')) {
      url = new URL(action.replaceAll('&amp;', '&'), url).href
      form = new URLSearchParams({ prompt: 'login', login, password: 'any-password' }).toString()
      continue
    }
    throw new Error(`unexpected answer from the provider at ${url}: ${res.status} ${html.slice(0, 300)}`)
  }
  throw new Error('the provider redirected too many times')
}
