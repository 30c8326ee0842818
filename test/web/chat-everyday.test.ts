import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { NumberedReplies } from '../modules/conversations/servers'
import { axeViolations } from './axe'
import { openBrowser, signIn, startServer, type Watched, type WebServer } from './harness'

// A real browser on a busy machine: page loads and waits take longer than bun's 5 s default.
setDefaultTimeout(90_000)

const generator = new NumberedReplies()
let server: WebServer
let browser: Watched
const others: Watched[] = []
let conversationUrl = ''

beforeAll(async () => {
  server = await startServer({ chat: generator })
  browser = await openBrowser(server.base)
  await signIn(browser.page)
  const admin = await fetch(`${server.base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'admin@example.com', password: 'admin-password-1' }) }).then((r) => r.json())
  await fetch(`${server.base}/auth/users`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${admin.accessToken}` },
    body: JSON.stringify({ email: 'bob@example.com', password: 'user-password-1', roles: ['user'] }),
  })
})

afterAll(async () => {
  for (const other of others) await other.browser.close()
  await browser?.browser.close()
  await server?.stop()
})

const GUIDE = '# Reaching internal sites\n\nConnect to the office VPN with the client called Tunnelblick before opening any internal site.\n'
const replies = (page: Page) => page.getByLabel('Assistant reply')
const chips = (page: Page) => page.getByRole('list', { name: 'Files of this conversation' })

test('a file picked with the paperclip shows as a chip with its progress, then grounds the reply; a dropped file joins it', async () => {
  const { page } = browser
  await page.goto('/app/chat')
  // The upload held back a moment, so that its chip is seen while the bytes go.
  let release = () => {}
  const held = new Promise<void>((resolve) => (release = resolve))
  await page.route('**/conversations/*/files', async (route) => {
    if (route.request().method() === 'POST') await held
    await route.continue()
  })
  await page.getByLabel('Files to attach').setInputFiles({ name: 'vpn-guide.md', mimeType: 'text/markdown', buffer: Buffer.from(GUIDE) })
  const chip = chips(page).getByRole('listitem').filter({ hasText: 'vpn-guide.md' })
  await chip.getByText('uploading').waitFor()
  await chip.getByRole('progressbar', { name: 'vpn-guide.md progress' }).waitFor()
  release()
  await chip.getByText('ready').waitFor()
  expect(await chip.getByRole('progressbar').count()).toBe(0)
  await page.unroute('**/conversations/*/files')
  // The new chat became a conversation (files go with one).
  expect(new URL(page.url()).pathname).toMatch(/^\/app\/chat\/[0-9a-f-]{36}$/)
  conversationUrl = new URL(page.url()).pathname

  // Dropped on the chat.
  // Runs in the page (the page's CSP refuses strings evaluated as code, so a function is passed).
  const dropped = await page.evaluateHandle(() => {
    const page = globalThis as unknown as { DataTransfer: new () => { items: { add(file: File): void } } }
    const data = new page.DataTransfer()
    data.items.add(new File(['The printer on floor three takes A4 paper only.'], 'printer.md', { type: 'text/markdown' }))
    return data
  })
  await page.dispatchEvent('section[aria-label="Chat"]', 'dragover', { dataTransfer: dropped })
  await page.dispatchEvent('section[aria-label="Chat"]', 'drop', { dataTransfer: dropped })
  await chips(page).getByRole('listitem').filter({ hasText: 'printer.md' }).getByText('ready').waitFor()

  await page.getByRole('textbox', { name: 'Message', exact: true }).fill('Which VPN client do I need for internal sites?')
  await page.getByRole('textbox', { name: 'Message', exact: true }).press('Enter')
  await replies(page).first().getByText('1 source').or(replies(page).first().getByText(/\d sources/)).waitFor()
  await replies(page).first().getByRole('button', { name: 'Good reply' }).waitFor()
  const admin = (await server.services.auth.findUserByEmail('admin@example.com'))!
  const stored = await server.services.conversations.get(conversationUrl.split('/').pop()!, admin.id)
  expect(stored.messages[1]!.metadata!.sources).toEqual(expect.arrayContaining([expect.objectContaining({ title: 'vpn-guide.md', file: true })]))

  // Removing a file from its chip.
  await chips(page).getByRole('button', { name: 'Remove printer.md' }).click()
  await chips(page).getByText('printer.md').waitFor({ state: 'detached' })
})

test('thumbs under a reply stay pressed after a reload; regenerate replaces the last reply; edit replaces a message and what followed', async () => {
  const { page } = browser
  await replies(page).last().getByRole('button', { name: 'Good reply' }).click()
  await page.locator('[aria-label="Good reply"][aria-pressed="true"]').waitFor()
  await page.reload()
  await page.locator('[aria-label="Good reply"][aria-pressed="true"]').waitFor()

  const before = (await replies(page).last().locator('.md').textContent())!
  await replies(page).last().getByRole('button', { name: /Regenerate/ }).click()
  await page.waitForFunction((old) => {
    const doc = (globalThis as unknown as { document: { querySelectorAll(s: string): ArrayLike<{ textContent: string | null }> } }).document
    const all = doc.querySelectorAll('[aria-label="Assistant reply"] .md')
    const text = all[all.length - 1]?.textContent ?? ''
    return text !== old && /reply \d+/.test(text)
  }, before)
  await replies(page).last().getByRole('button', { name: 'Good reply' }).waitFor()
  expect(await replies(page).count()).toBe(1)
  // The new reply is not rated (its rating went with the replaced one).
  expect(await page.locator('[aria-label="Good reply"][aria-pressed="true"]').count()).toBe(0)

  await page.getByRole('button', { name: 'Edit message' }).click()
  await page.getByLabel('Edited message').fill('Which VPN gateway asks for the badge number?')
  await page.getByRole('button', { name: 'Save and answer again' }).click()
  await page.locator('.msg.user', { hasText: 'Which VPN gateway asks for the badge number?' }).waitFor()
  await replies(page).last().getByRole('button', { name: 'Good reply' }).waitFor()
  expect(await replies(page).count()).toBe(1)
  expect(await page.locator('.msg.user').count()).toBe(1)
})

test('search box: words of a conversation find it, with the excerpt; export downloads Markdown and JSON under the title', async () => {
  const { page } = browser
  await page.getByRole('searchbox', { name: 'Search conversations' }).fill('badge')
  const results = page.getByRole('list', { name: 'Search results, newest first' })
  await results.getByText('badge number').first().waitFor()
  await page.getByRole('searchbox', { name: 'Search conversations' }).fill('nothingmatcheszz')
  await results.getByText('No conversation holds these words.').waitFor()
  await page.getByRole('searchbox', { name: 'Search conversations' }).fill('')
  await page.getByRole('list', { name: 'Conversation history, newest first' }).waitFor()

  const [markdown] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: '⤓ Markdown' }).click()])
  expect(markdown.suggestedFilename()).toMatch(/^which-vpn-client-do-i-need-for-internal-sites\.md$/)
  const text = await Bun.file((await markdown.path())!).text()
  expect(text).toStartWith('# Which VPN client do I need for internal sites?')
  const [json] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: '⤓ JSON' }).click()])
  expect(json.suggestedFilename()).toEndWith('.json')
  expect(JSON.parse(await Bun.file((await json.path())!).text()).messages).toHaveLength(2)
})

test('shared with a viewer: /app/c/{id} opens it read-only (no composer, no edit); the analytics page shows replies rated up per model', async () => {
  const { page } = browser
  await page.goto(conversationUrl)
  await page.getByRole('button', { name: 'Share', exact: true }).click()
  const dialog = page.getByRole('dialog', { name: /^Share / })
  await dialog.getByLabel('Share with').selectOption('user')
  await dialog.getByLabel('Email').fill('bob@example.com')
  await dialog.getByRole('button', { name: 'Add' }).click()
  await dialog.getByRole('button', { name: 'Save access' }).click()
  await dialog.getByText('Saved').waitFor()
  expect(await dialog.getByLabel('Role', { exact: true }).locator('option').allTextContents()).toEqual(['viewer'])

  const bob = await openBrowser(server.base)
  others.push(bob)
  await signIn(bob.page, 'bob@example.com', 'user-password-1')
  const id = conversationUrl.split('/').pop()!
  await bob.page.goto(`/app/c/${id}`)
  await bob.page.getByText('Shared with you by admin@example.com').waitFor()
  expect(await bob.page.getByRole('textbox', { name: 'Message', exact: true }).count()).toBe(0)
  expect(await bob.page.getByRole('button', { name: 'Edit message' }).count()).toBe(0)
  expect(await bob.page.getByRole('button', { name: /Regenerate/ }).count()).toBe(0)
  // A viewer rates too.
  await replies(bob.page).last().getByRole('button', { name: 'Poor reply' }).click()
  await bob.page.locator('[aria-label="Poor reply"][aria-pressed="true"]').waitFor()
  expect(bob.consoleErrors).toEqual([])

  await page.getByRole('link', { name: 'Analytics' }).click()
  const rated = page.getByRole('list', { name: 'Share of replies rated up per model' })
  await rated.getByText('test/numbered').waitFor()
  expect(browser.consoleErrors).toEqual([])
  expect(browser.foreignRequests).toEqual([])
})

test('the chat page with files, rated replies and search passes axe-core (WCAG 2.1 A/AA) at 1440 and 375 px, without sideways scrolling', async () => {
  for (const width of [1440, 375]) {
    const watched = await openBrowser(server.base, { width, height: 900 })
    others.push(watched)
    const { page } = watched
    await signIn(page)
    await page.goto(conversationUrl)
    await chips(page).getByText('vpn-guide.md').waitFor()
    await replies(page).last().getByRole('button', { name: 'Good reply' }).waitFor()
    await page.waitForLoadState('networkidle')
    expect({ width, page: 'conversation', violations: await axeViolations(page) }).toEqual({ width, page: 'conversation', violations: [] })
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBe(width)
    await page.getByRole('searchbox', { name: 'Search conversations' }).fill('vpn')
    await page.getByRole('list', { name: 'Search results, newest first' }).getByRole('link').first().waitFor()
    expect({ width, page: 'search', violations: await axeViolations(page) }).toEqual({ width, page: 'search', violations: [] })
    await page.getByRole('button', { name: 'Share', exact: true }).click()
    await page.getByRole('dialog', { name: /^Share / }).getByText('bob@example.com').waitFor()
    expect({ width, page: 'share', violations: await axeViolations(page) }).toEqual({ width, page: 'share', violations: [] })
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBe(width)
    expect(watched.consoleErrors).toEqual([])
  }
})
