import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { openBrowser, ScriptedGenerator, signIn, startServer, type Watched, type WebServer } from './harness'

// A real browser on a busy machine: page loads and waits take longer than bun's 5 s default.
setDefaultTimeout(60_000)

let server: WebServer
let browser: Watched

beforeAll(async () => {
  server = await startServer({ agents: new ScriptedGenerator('The findings are summarised in three short points for the reader.', 60) })
  browser = await openBrowser(server.base)
  await signIn(browser.page)
})

afterAll(async () => {
  await browser?.browser.close()
  await server?.stop()
})

test('an agent run shows live progress per agent, then the final synthesis, and is listed among past tasks', async () => {
  const { page } = browser
  await page.getByRole('link', { name: 'Agents' }).click()
  await page.getByLabel('Task', { exact: true }).fill('Compare two ways of backing up a small server')
  await page.getByRole('button', { name: 'Run' }).click()
  const progress = page.getByRole('region', { name: 'Progress' })
  await progress.waitFor()
  // Seen while running (polled every 500 ms): a status other than completed, and a bar below 100 %.
  const running = await progress.locator('.badge').textContent()
  expect(['queued', 'running']).toContain(running!)
  expect(Number(await progress.getByRole('progressbar').getAttribute('value'))).toBeLessThan(100)
  await progress.getByText('completed').waitFor({ timeout: 30_000 })
  expect(await progress.getByRole('progressbar').getAttribute('value')).toBe('100')
  await progress.getByRole('region', { name: 'Final synthesis' }).waitFor()
  expect(await progress.locator('details summary').count()).toBeGreaterThanOrEqual(2)
  const past = page.getByRole('region', { name: 'Past tasks' })
  await past.getByRole('button', { name: 'Compare two ways of backing up a small server' }).waitFor()
})

test('a plugin action runs from the form built from its parameter schema', async () => {
  const { page } = browser
  await page.getByRole('link', { name: 'Plugins' }).click()
  const calculator = page.getByRole('region', { name: 'calculator' })
  await calculator.getByRole('button', { name: 'Run an action' }).click()
  const form = calculator.getByRole('form', { name: 'Run calculator evaluate' })
  // A required field left empty is refused next to it, before any request.
  await form.getByRole('button', { name: 'Run evaluate' }).click()
  await form.getByText('Required.').waitFor()
  await form.getByLabel('expression (required)').fill('2 * (3 + 4) ^ 2')
  await form.getByRole('button', { name: 'Run evaluate' }).click()
  const result = form.getByLabel('Result')
  await result.waitFor()
  expect(JSON.parse((await result.textContent())!)).toEqual({ value: 98 })
})

test('an admin creates a user, who is then listed', async () => {
  const { page } = browser
  await page.getByRole('link', { name: 'Administration' }).click()
  const form = page.getByRole('form', { name: 'Create a user' })
  await form.getByLabel("New user's email").fill('new.person@example.com')
  await form.getByLabel('Password').fill('short')
  await form.getByRole('button', { name: 'Create user' }).click()
  // The browser's own check refuses a short password before any request.
  expect(await form.getByLabel('Password').evaluate((input) => (input as unknown as { validity: { tooShort: boolean } }).validity.tooShort)).toBe(true)
  await form.getByLabel('Password').fill('a-long-password-1')
  await form.getByRole('button', { name: 'Create user' }).click()
  await page.getByRole('cell', { name: 'new.person@example.com', exact: true }).waitFor()
  expect((await server.services.auth.listUsers(100, 0)).users.map((u) => u.email)).toContain('new.person@example.com')
})

test('an API key is shown once at creation, then listed by name and revoked', async () => {
  const { page } = browser
  await page.getByRole('link', { name: 'Administration' }).click()
  await page.getByLabel('Key name').fill('laptop')
  await page.getByRole('button', { name: 'Create key' }).click()
  const secret = (await page.locator('.secret').textContent())!
  expect(secret).toStartWith('uak_')
  const me = await fetch(`${server.base}/auth/me`, { headers: { authorization: `Bearer ${secret}` } })
  expect(me.status).toBe(200)
  await page.getByRole('button', { name: 'Done' }).click()
  expect(await page.locator('.secret').count()).toBe(0)
  await page.getByRole('button', { name: 'Revoke key laptop' }).click()
  await page.getByRole('list', { name: 'API keys' }).getByText('No keys.').waitFor()
  expect((await fetch(`${server.base}/auth/me`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(401)
})

test('analytics: charts drawn, and the range exported as CSV', async () => {
  const { page } = browser
  await page.getByRole('link', { name: 'Analytics' }).click()
  await page.getByRole('img', { name: 'Requests per hour over the last 24 hours' }).locator('canvas').waitFor()
  await page.getByLabel('Range').selectOption('7d')
  await page.getByRole('img', { name: 'Requests and errors over 7d' }).locator('canvas').waitFor()
  expect(await page.getByRole('list', { name: 'Requests per endpoint' }).getByRole('listitem').count()).toBeGreaterThan(0)
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()])
  expect(download.suggestedFilename()).toBe('analytics-7d.csv')
  const csv = await Bun.file((await download.path())!).text()
  expect(csv.split('\n')[0]).toContain(',')
  expect(csv.split('\n').length).toBeGreaterThan(2)
})

test('voice: a typed command shows its intent, action and reply; text to speech gives a player and a download', async () => {
  const { page } = browser
  await page.getByRole('link', { name: 'Voice' }).click()
  await page.getByLabel('Or type the command').fill('what is the system status')
  await page.getByRole('button', { name: 'Send', exact: true }).click()
  const intent = page.locator('dt', { hasText: 'Intent' }).locator('xpath=following-sibling::dd[1]')
  await intent.waitFor()
  expect(await intent.textContent()).toContain('system_status')
  await page.getByLabel('Text', { exact: true }).fill('Hello from the web app.')
  await page.getByLabel('Format').selectOption('wav')
  await page.getByRole('button', { name: 'Speak', exact: true }).click()
  const download = page.getByRole('link', { name: 'Download' })
  await download.waitFor({ timeout: 20_000 })
  expect(await download.getAttribute('download')).toBe('speech.wav')
  expect(await page.locator('audio').last().getAttribute('src')).toStartWith('blob:')
})

test('at phone width (375 px) no page scrolls sideways', async () => {
  const { page } = browser
  await page.setViewportSize({ width: 375, height: 800 })
  for (const path of ['/app/chat', '/app/knowledge', '/app/agents', '/app/voice', '/app/plugins', '/app/analytics', '/app/admin', '/app/account']) {
    await page.goto(path)
    await page.locator('main h1, main .chat').first().waitFor()
    await page.waitForLoadState('networkidle')
    const width = await page.evaluate<number>('document.documentElement.scrollWidth')
    expect({ path, width }).toEqual({ path, width: 375 })
  }
  expect(browser.consoleErrors).toEqual([])
  expect(browser.foreignRequests).toEqual([])
  expect(browser.failedResponses).toEqual([])
})
