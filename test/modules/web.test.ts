import { describe, expect, test } from 'bun:test'
import { cpSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { sourcesHash, WEB_SOURCES, WebBundle } from '../../src/modules/web/bundle'
import { ADMIN, makeServer, tempDir } from '../helpers'

const { app, call } = makeServer()
const APP_HEADERS = { 'x-requested-with': 'uagent-web', origin: 'http://localhost' }

const cookiesOf = (headers: Headers) => headers.getSetCookie()
const sessionCookie = (headers: Headers) => cookiesOf(headers).find((c) => c.startsWith('uagent_refresh='))!
const tokenOf = (cookie: string) => /^uagent_refresh=([^;]*)/.exec(cookie)![1]!

describe('web sessions (cookie)', () => {
  test('sign-in sets the refresh token as an HttpOnly, SameSite=Strict cookie and returns no refresh token', async () => {
    const res = await call('POST', '/auth/web/login', { body: ADMIN, headers: APP_HEADERS })
    expect(res.status).toBe(200)
    expect(res.json.accessToken).toBeString()
    expect(res.json.refreshToken).toBeUndefined()
    expect(res.json.user.email).toBe(ADMIN.email)
    const cookie = sessionCookie(res.headers)
    expect(cookie).toContain('HttpOnly')
    expect(cookie).toContain('SameSite=Strict')
    expect(cookie).toContain('Path=/auth/web')
    expect(tokenOf(cookie).length).toBeGreaterThan(20)
    // The page may read only that a session exists.
    const hint = cookiesOf(res.headers).find((c) => c.startsWith('uagent_signed_in='))!
    expect(hint).toMatch(/^uagent_signed_in=1; Path=\/;/)
    expect(hint).not.toContain('HttpOnly')
    expect(res.headers.get('cache-control')).toBe('no-store')
  })

  test('a cookie request without the app header, from another origin or another site is refused (403 ErrorResponse)', async () => {
    const noHeader = await call('POST', '/auth/web/login', { body: ADMIN, headers: { origin: 'http://localhost' } })
    expect(noHeader.status).toBe(403)
    expect(noHeader.json).toMatchObject({ error: true, code: 'FORBIDDEN' })
    const otherOrigin = await call('POST', '/auth/web/login', { body: ADMIN, headers: { ...APP_HEADERS, origin: 'http://evil.example' } })
    expect(otherOrigin.status).toBe(403)
    expect(otherOrigin.json.message).toContain('Origin')
    const noOrigin = await call('POST', '/auth/web/login', { body: ADMIN, headers: { 'x-requested-with': 'uagent-web' } })
    expect(noOrigin.status).toBe(403)
    const crossSite = await call('POST', '/auth/web/refresh', { headers: { ...APP_HEADERS, 'sec-fetch-site': 'cross-site', cookie: 'uagent_refresh=x' } })
    expect(crossSite.status).toBe(403)
    expect(noHeader.headers.get('set-cookie')).toBeNull()
  })

  test('refresh rotates the cookie; the old one then revokes the session; logout clears it', async () => {
    const login = await call('POST', '/auth/web/login', { body: ADMIN, headers: APP_HEADERS })
    const first = tokenOf(sessionCookie(login.headers))
    const refreshed = await call('POST', '/auth/web/refresh', { headers: { ...APP_HEADERS, cookie: `uagent_refresh=${first}` } })
    expect(refreshed.status).toBe(200)
    expect(refreshed.json.refreshToken).toBeUndefined()
    const second = tokenOf(sessionCookie(refreshed.headers))
    expect(second).not.toBe(first)
    const me = await call('GET', '/auth/me', { token: refreshed.json.accessToken })
    expect(me.json.email).toBe(ADMIN.email)
    const reused = await call('POST', '/auth/web/refresh', { headers: { ...APP_HEADERS, cookie: `uagent_refresh=${first}` } })
    expect(reused.status).toBe(401)
    expect((await call('POST', '/auth/web/refresh', { headers: { ...APP_HEADERS, cookie: `uagent_refresh=${second}` } })).status).toBe(401)

    const again = await call('POST', '/auth/web/login', { body: ADMIN, headers: APP_HEADERS })
    const out = await call('POST', '/auth/web/logout', { token: again.json.accessToken })
    expect(out.status).toBe(200)
    expect(sessionCookie(out.headers)).toMatch(/^uagent_refresh=; Path=\/auth\/web; Max-Age=0/)
    expect((await call('GET', '/auth/me', { token: again.json.accessToken })).status).toBe(401)
    const after = await call('POST', '/auth/web/refresh', { headers: { ...APP_HEADERS, cookie: `uagent_refresh=${tokenOf(sessionCookie(again.headers))}` } })
    expect(after.status).toBe(401)
    expect((await call('POST', '/auth/web/refresh', { headers: APP_HEADERS })).json.message).toContain('sign in')
  })

  test('the MFA step is the API error code, and the bearer login still returns its refresh token', async () => {
    const bearer = await call('POST', '/auth/login', { body: ADMIN })
    expect(bearer.json.refreshToken).toBeString()
    expect(bearer.headers.get('set-cookie')).toBeNull()
    const bad = await call('POST', '/auth/web/login', { body: { email: 'nobody@example.com' }, headers: APP_HEADERS })
    expect(bad.status).toBe(400)
  })
})

describe('the web app at /app', () => {
  test('/ redirects to /app; /app and its client routes are the page, under a CSP with no inline script', async () => {
    const root = await app.handle(new Request('http://localhost/'))
    expect(root.status).toBe(302)
    expect(root.headers.get('location')).toBe('/app')
    for (const path of ['/app', '/app/chat/123', '/app/admin']) {
      const page = await app.handle(new Request(`http://localhost${path}`))
      expect(page.status).toBe(200)
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8')
      const csp = page.headers.get('content-security-policy')!
      expect(csp).toContain("script-src 'self'")
      expect(csp).not.toContain('unsafe')
      const html = await page.text()
      expect(html).toMatch(/<script type="module" src="\/app\/assets\/main-[a-z0-9]+\.js"><\/script>/)
      expect(html.match(/<script/g)!.length).toBe(1)
      expect(html).not.toMatch(/https?:\/\//)
    }
  })

  test('assets have their content types, a year of caching by hash, gzip when asked, and 304 on a matching ETag', async () => {
    const html = await (await app.handle(new Request('http://localhost/app'))).text()
    const script = /src="(\/app\/assets\/[^"]+\.js)"/.exec(html)![1]!
    const style = /href="(\/app\/assets\/[^"]+\.css)"/.exec(html)![1]!
    const plain = await app.handle(new Request(`http://localhost${script}`))
    expect(plain.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
    expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    const body = new Uint8Array(await plain.arrayBuffer())
    const zipped = await app.handle(new Request(`http://localhost${script}`, { headers: { 'accept-encoding': 'gzip, br' } }))
    expect(zipped.headers.get('content-encoding')).toBe('gzip')
    expect(gunzipSync(new Uint8Array(await zipped.arrayBuffer()))).toEqual(Buffer.from(body))
    const again = await app.handle(new Request(`http://localhost${script}`, { headers: { 'if-none-match': plain.headers.get('etag')! } }))
    expect(again.status).toBe(304)
    expect((await app.handle(new Request(`http://localhost${style}`))).headers.get('content-type')).toBe('text/css; charset=utf-8')
    const missing = await call('GET', '/app/assets/nothing.js')
    expect(missing.status).toBe(404)
    expect(missing.json.code).toBe('NOT_FOUND')
  })

  test('/openapi/json documents the cookie routes with schemas and hides the page routes', async () => {
    const doc = (await call('GET', '/openapi/json')).json
    for (const path of ['/auth/web/login', '/auth/web/refresh', '/auth/web/logout']) {
      expect(doc.paths[path].post.responses['200'].content['application/json'].schema).toBeDefined()
    }
    expect(doc.paths['/auth/web/login'].post.requestBody.content['application/json'].schema.properties.email).toBeDefined()
    expect(Object.keys(doc.paths).filter((p) => p === '/' || p.startsWith('/app'))).toEqual([])
  })
})

describe('the web app build', () => {
  test('is keyed by a hash of the sources: the same sources give the same key, any change a new one', () => {
    const dir = tempDir('web-sources')
    cpSync(WEB_SOURCES, dir, { recursive: true })
    const before = sourcesHash(dir)
    expect(sourcesHash(dir)).toBe(before)
    expect(sourcesHash(WEB_SOURCES)).not.toBe(before)
    writeFileSync(join(dir, 'main.tsx'), `${readFileSync(join(dir, 'main.tsx'), 'utf8')}\n// changed\n`)
    expect(sourcesHash(dir)).not.toBe(before)
  })

  test('a later start reuses the cached build: nothing is built again', async () => {
    const lines: string[] = []
    const first = await new WebBundle((line) => lines.push(line)).ready()
    const second = await new WebBundle((line) => lines.push(line)).ready()
    expect(second.hash).toBe(first.hash)
    expect([...second.assets.keys()].sort()).toEqual([...first.assets.keys()].sort())
    // At most the first one built (when the cache was empty); the second only loaded.
    expect(lines.filter((line) => line.startsWith('web app built')).length).toBeLessThanOrEqual(1)
  })
})
