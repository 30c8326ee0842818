import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { buildApp, createServices, type Services } from '../../src/app'
import { shutdown } from '../../src/shutdown'
import { type OidcFixture, startOidcProvider } from '../sso/providers'
import { freePort } from '../redis'
import { tempDir } from '../temp'
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import { ADMIN, CHROMIUM_ARGS } from './harness'

// A real browser signs in through a real OpenID Connect provider. The provider (127.0.0.1) and
// the server (localhost) are different sites, as in life: the state cookie must survive the
// cross-site return, and the session cookie is SameSite=Strict.
setDefaultTimeout(60_000)

let provider: OidcFixture | undefined
let ssoOnly: Services | undefined
/** The harness's openBrowser without its request and response listeners (they trip over the provider's cross-origin redirects). */
let browser: { browser: Browser; context: BrowserContext; page: Page; consoleErrors: string[] } | undefined
/** The servers under test: the main one, and one with UAGENT_LOCAL_LOGIN=off (only single sign-on). */
const stops: (() => Promise<void>)[] = []
let base = ''
let ssoOnlyBase = ''

/** A server on `port` of localhost signing in through the provider, with `env` added; stopped in afterAll. */
async function startServer(port: number, env: Record<string, string> = {}): Promise<Services> {
  const services = createServices({
    dataDir: tempDir('web-sso'),
    adminEmail: ADMIN.email,
    adminPassword: ADMIN.password,
    log: () => {},
    env: {
      UAGENT_PUBLIC_URL: `http://localhost:${port}`,
      UAGENT_OIDC_ISSUER: provider!.issuer,
      UAGENT_OIDC_CLIENT_ID: provider!.clientId,
      UAGENT_OIDC_CLIENT_SECRET: provider!.clientSecret,
      UAGENT_OIDC_NAME: 'Test IdP',
      ...env,
    },
  })
  const app = buildApp(services).listen({ port, hostname: '127.0.0.1' })
  stops.push(() => shutdown(app, services, 0))
  await services.web.ready()
  return services
}

beforeAll(async () => {
  const port = freePort()
  const ssoOnlyPort = freePort()
  base = `http://localhost:${port}`
  ssoOnlyBase = `http://localhost:${ssoOnlyPort}`
  provider = await startOidcProvider([`${base}/auth/oidc/callback`, `${ssoOnlyBase}/auth/oidc/callback`], {
    ann: { email: 'ann@example.com', email_verified: true, name: 'Ann', groups: ['staff'] },
    cy: { email: 'cy@example.com', email_verified: true, name: 'Cy', groups: [] },
  })
  await startServer(port)
  ssoOnly = await startServer(ssoOnlyPort, { UAGENT_LOCAL_LOGIN: 'off' })
  const chrome = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: CHROMIUM_ARGS })
  const context = await chrome.newContext({ baseURL: base })
  // The machine runs many tests at once: waits get most of the test's minute.
  context.setDefaultTimeout(50_000)
  const page = await context.newPage()
  const consoleErrors: string[] = []
  page.on('console', (message) => {
    if (/^Failed to load resource/.test(message.text())) return
    if (message.type() === 'error') consoleErrors.push(message.text())
  })
  page.on('pageerror', (error) => consoleErrors.push(error.message))
  browser = { browser: chrome, context, page, consoleErrors }
})

afterAll(async () => {
  await browser?.browser.close()
  for (const stop of stops) await stop()
  await provider?.stop()
})

test('a provider error sent back to /app is shown in words on the sign-in page, once', async () => {
  const { page } = browser!
  await page.goto('/auth/oidc/callback?error=access_denied&error_description=Consent+was+refused')
  expect(new URL(page.url()).pathname).toBe('/app')
  await expect(page.getByRole('alert').textContent()).resolves.toBe('The provider refused the sign-in: Consent was refused')
  expect(new URL(page.url()).search).toBe('')
  await page.reload()
  await page.getByRole('link', { name: 'Sign in with Test IdP' }).waitFor()
  expect(await page.getByRole('alert').count()).toBe(0)
})

test('"Sign in with Test IdP" signs the browser in through the provider, with the password form beside it', async () => {
  const { page, context, consoleErrors } = browser!
  await page.goto('/app')
  await expect(page.getByLabel('Password').count()).resolves.toBe(1)
  await page.getByRole('link', { name: 'Sign in with Test IdP' }).click()
  // The provider's own sign-in form (oidc-provider's development form: any password).
  await page.locator('input[name="login"]').fill('ann')
  await page.locator('input[name="password"]').fill('any-password')
  await page.getByRole('button', { name: 'Sign-in' }).click()
  await page.getByRole('navigation', { name: 'Main' }).waitFor()
  expect(new URL(page.url()).origin).toBe(base)
  await expect(page.getByRole('navigation', { name: 'Main' }).textContent()).resolves.toContain('ann@example.com')
  const session = (await context.cookies()).find((cookie) => cookie.name === 'uagent_refresh')!
  expect([session.httpOnly, session.sameSite]).toEqual([true, 'Strict'])
  // A reload resumes the session from the cookie.
  await page.reload()
  await page.getByRole('navigation', { name: 'Main' }).waitFor()
  expect(consoleErrors).toEqual([])
})

test('the device page shows the code of uagent login --web and approving it signs the CLI in', async () => {
  const { page } = browser!
  const grant = (await (await fetch(`${base}/auth/device`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"clientName":"uagent on laptop"}' })).json()) as {
    deviceCode: string
    userCode: string
    verificationUrlComplete: string
  }
  await page.goto(grant.verificationUrlComplete)
  await expect(page.locator('.device-code').textContent()).resolves.toBe(grant.userCode)
  await expect(page.getByText('by uagent on laptop').count()).resolves.toBe(1)
  await page.getByRole('button', { name: 'Approve' }).click()
  await expect(page.getByRole('status').textContent()).resolves.toContain('signed in as you')
  const token = await fetch(`${base}/auth/device/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ deviceCode: grant.deviceCode }) })
  expect(token.status).toBe(200)
  expect(((await token.json()) as { user: { email: string } }).user.email).toBe('ann@example.com')
})

test('signed out, the device page asks for a sign-in first and comes back to the code after the provider', async () => {
  const { page, context } = browser!
  await context.clearCookies()
  const grant = (await (await fetch(`${base}/auth/device`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).json()) as { userCode: string; verificationUrlComplete: string }
  await page.goto(grant.verificationUrlComplete)
  await page.getByRole('link', { name: 'Sign in with Test IdP' }).click()
  await page.locator('input[name="login"]').fill('ann')
  await page.locator('input[name="password"]').fill('any-password')
  await page.getByRole('button', { name: 'Sign-in' }).click()
  await expect(page.locator('.device-code').textContent()).resolves.toBe(grant.userCode)
  expect(new URL(page.url()).pathname).toBe('/app/device')
})

test('UAGENT_LOCAL_LOGIN=off: the sign-in page offers only the provider, and signing in through it works', async () => {
  const { browser: chrome } = browser!
  // A browser of its own: no session or provider cookie from the tests above.
  const context = await chrome.newContext({ baseURL: ssoOnlyBase })
  context.setDefaultTimeout(50_000)
  try {
    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    await page.goto('/app')
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).waitFor()
    // The page knows the providers now: no password form, nor words offering one.
    expect(await page.getByLabel('Password').count()).toBe(0)
    expect(await page.getByLabel('Email').count()).toBe(0)
    expect(await page.locator('input[type="password"], form button[type="submit"]').count()).toBe(0)
    expect(await page.getByText('or with your email and password').count()).toBe(0)
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).click()
    await page.locator('input[name="login"]').fill('cy')
    await page.locator('input[name="password"]').fill('any-password')
    await page.getByRole('button', { name: 'Sign-in' }).click()
    await page.getByRole('navigation', { name: 'Main' }).waitFor()
    expect(new URL(page.url()).origin).toBe(ssoOnlyBase)
    await expect(page.getByRole('navigation', { name: 'Main' }).textContent()).resolves.toContain('cy@example.com')
    // The account was made on that server, from the provider's account.
    expect(ssoOnly!.db.query<{ email: string }, []>('SELECT email FROM users WHERE email = \'cy@example.com\'').all()).toEqual([{ email: 'cy@example.com' }])
    expect(errors).toEqual([])
  } finally {
    await context.close()
  }
})
