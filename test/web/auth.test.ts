import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { TOTP } from 'otpauth'
import { ADMIN, openBrowser, signIn, startServer, type Watched, type WebServer } from './harness'

// A real browser on a busy machine: page loads and waits take longer than bun's 5 s default.
setDefaultTimeout(60_000)

let server: WebServer
let browser: Watched

beforeAll(async () => {
  server = await startServer()
  browser = await openBrowser(server.base)
})

afterAll(async () => {
  await browser?.browser.close()
  await server?.stop()
})

test('a browser at / lands on the sign-in page at /app, and a wrong password is told in words', async () => {
  const { page } = browser
  await page.goto('/')
  expect(new URL(page.url()).pathname).toBe('/app')
  await page.getByLabel('Email').fill(ADMIN.email)
  await page.getByLabel('Password').fill('not-the-password')
  await page.getByRole('button', { name: 'Sign in' }).click()
  await expect(page.getByRole('alert').textContent()).resolves.toMatch(/password/i)
})

test('sign-in keeps the refresh token in an HttpOnly SameSite=Strict cookie, never in storage, and survives a reload', async () => {
  const { page, context } = browser
  await signIn(page)
  const cookies = await context.cookies()
  const session = cookies.find((c) => c.name === 'uagent_refresh')!
  expect(session.httpOnly).toBe(true)
  expect(session.sameSite).toBe('Strict')
  expect(session.path).toBe('/auth/web')
  expect(await page.evaluate<string>('document.cookie')).not.toContain('uagent_refresh')
  expect(await page.evaluate<string>('JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage })')).toBe('{}{}')
  await page.reload()
  await page.getByRole('navigation', { name: 'Main' }).waitFor()
  expect(await page.getByText(ADMIN.email).count()).toBe(1)
  // Sign-out revokes the session: after a reload the sign-in form is back.
  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.getByRole('button', { name: 'Sign in' }).waitFor()
  await page.reload()
  await page.getByRole('button', { name: 'Sign in' }).waitFor()
})

test('an account with MFA gets the code step; a wrong code is refused next to the field, the right one signs in', async () => {
  const { page } = browser
  const admin = await server.services.auth.login(ADMIN.email, ADMIN.password, null)
  const user = await server.services.auth.createUser('mfa@example.com', 'mfa-password-1', ['user'])
  const { secret } = await server.services.auth.setupMfa(user.id)
  const totp = new TOTP({ secret, digits: 6, period: 30 })
  await server.services.auth.enableMfa(user.id, totp.generate())
  expect(admin.accessToken).toBeTruthy()
  await page.goto('/app')
  await page.getByLabel('Email').fill('mfa@example.com')
  await page.getByLabel('Password').fill('mfa-password-1')
  await page.getByRole('button', { name: 'Sign in' }).click()
  const code = page.getByLabel('Authenticator code')
  await code.waitFor()
  await code.fill('000000')
  await page.getByRole('button', { name: 'Verify and sign in' }).click()
  await expect(page.getByRole('alert').first().textContent()).resolves.toMatch(/code/i)
  // The step used at enable is spent; the next period's code is accepted (with its window).
  await code.fill(totp.generate({ timestamp: Date.now() + 30_000 }))
  await page.getByRole('button', { name: 'Verify and sign in' }).click()
  await page.getByRole('navigation', { name: 'Main' }).waitFor()
  expect(await page.getByText('mfa@example.com').count()).toBe(1)
})

test('password change: a wrong current password is told next to the form; the new one signs in after sign-out', async () => {
  const { page } = browser
  await server.services.auth.createUser('pat@example.com', 'first-password-1', ['user'])
  await page.context().clearCookies()
  await signIn(page, 'pat@example.com', 'first-password-1')
  await page.getByRole('link', { name: 'Account' }).click()
  await page.getByLabel('Current password').fill('not-my-password')
  await page.getByLabel('New password').fill('second-password-2')
  await page.getByRole('button', { name: 'Change password' }).click()
  await page.getByRole('alert').getByText('The current password is wrong').waitFor()
  await page.getByLabel('Current password').fill('first-password-1')
  await page.getByRole('button', { name: 'Change password' }).click()
  await page.getByText('Password changed').waitFor()
  await page.getByRole('button', { name: 'Sign out' }).click()
  await signIn(page, 'pat@example.com', 'second-password-2')
  expect(await page.getByText('pat@example.com').count()).toBe(1)
})

test('an expired access token is renewed silently from the cookie and the request repeated', async () => {
  const { page } = browser
  let refused = 0
  const refreshes: string[] = []
  page.on('request', (request) => request.url().endsWith('/auth/web/refresh') && refreshes.push(request.method()))
  // The server's answer to an access token past its lifetime, once.
  await page.route('**/conversations?*', async (route) => {
    if (refused++ > 0) return route.continue()
    await route.fulfill({ status: 401, contentType: 'application/json', body: JSON.stringify({ error: true, code: 'TOKEN_EXPIRED', message: 'Access token has expired', timestamp: new Date().toISOString(), requestId: 'x' }) })
  })
  await page.getByRole('link', { name: 'Account' }).click()
  await page.getByRole('heading', { name: 'Account' }).waitFor()
  const repeated = page.waitForResponse((response) => response.url().includes('/conversations?') && response.status() === 200)
  await page.getByRole('link', { name: 'Chat' }).click()
  await repeated
  expect(refused).toBe(2)
  expect(refreshes).toEqual(['POST'])
  expect(await page.getByRole('alert').count()).toBe(0)
  await page.unroute('**/conversations?*')
})

test('keyboard only: sign in with Tab and Enter, land in the message box, reach the navigation with Shift+Tab and open a page with Enter', async () => {
  const { page } = browser
  await page.context().clearCookies()
  await page.goto('/app')
  await page.getByRole('button', { name: 'Sign in' }).waitFor()
  await page.keyboard.press('Tab')
  await page.keyboard.type(ADMIN.email)
  await page.keyboard.press('Tab')
  await page.keyboard.type(ADMIN.password)
  await page.keyboard.press('Enter')
  await page.getByRole('navigation', { name: 'Main' }).waitFor()
  // Focus carries on where the form was: the message box, ready to type.
  await page.keyboard.press('Tab')
  expect(await page.evaluate<string>('document.activeElement.getAttribute("placeholder")')).toStartWith('Message')
  // Back through the page to the main navigation, by keyboard alone.
  const seen: string[] = []
  for (let step = 0; step < 30 && seen.at(-1) !== 'Knowledge base'; step++) {
    await page.keyboard.press('Shift+Tab')
    seen.push(await page.evaluate<string>('document.activeElement.textContent'))
  }
  expect(seen).toContain('Sign out')
  expect(seen.at(-1)).toBe('Knowledge base')
  await page.keyboard.press('Enter')
  await page.getByRole('heading', { name: 'Knowledge base' }).waitFor()
})

test('the page is served with a CSP that allows no inline script, and a cookie request without the app header is refused', async () => {
  const response = await fetch(`${server.base}/app`)
  const csp = response.headers.get('content-security-policy')!
  expect(csp).toContain("script-src 'self'")
  expect(csp).not.toContain('unsafe-inline')
  expect(await response.text()).not.toMatch(/<script>(?!<\/script>)|<script(?![^>]*\bsrc=)[^>]*>/)
  const forged = await fetch(`${server.base}/auth/web/refresh`, { method: 'POST', headers: { origin: 'http://evil.example', cookie: 'uagent_refresh=x', 'x-requested-with': 'uagent-web' } })
  expect(forged.status).toBe(403)
  expect(browser.consoleErrors).toEqual([])
  // Only the refusals the tests asked for: a wrong password, the MFA step, a wrong code, a wrong current password.
  expect(browser.failedResponses).toEqual(['401 POST /auth/web/login', '401 POST /auth/web/login', '401 POST /auth/web/login', '401 POST /auth/password', '401 GET /conversations'])
  expect(browser.foreignRequests).toEqual([])
})
