import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { openBrowser, ScriptedGenerator, signIn, startServer, type Watched, type WebServer } from './harness'

// A real browser on a busy machine: page loads and waits take longer than bun's 5 s default.
setDefaultTimeout(60_000)

const REPLY =
  'According to the handbook the office opens at **nine** [1]. ' +
  Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ') +
  '\n\n```js\nconsole.log("hi")\n```\n'
const generator = new ScriptedGenerator(REPLY, 25)
let server: WebServer
let browser: Watched

beforeAll(async () => {
  server = await startServer({ chat: generator })
  browser = await openBrowser(server.base)
  await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'])
  await signIn(browser.page)
})

afterAll(async () => {
  await browser?.browser.close()
  await server?.stop()
})

// Runs in the page (the page's CSP refuses strings evaluated as code, so functions are passed).
// Self-contained: Playwright sends its source to the page.
const replyIncludes = ({ index, text }: { index: number; text: string }): boolean =>
  (
    (globalThis as unknown as { document: { querySelectorAll(s: string): ArrayLike<{ textContent: string | null }> } }).document.querySelectorAll('[aria-label="Assistant reply"] .md')[index]?.textContent ?? ''
  ).includes(text)

const reply = () => browser.page.getByLabel('Assistant reply').last()

test('a reply streams in token by token with Markdown, a copyable code block and the engine that answered', async () => {
  const { page } = browser
  await page.getByRole('textbox', { name: 'Message', exact: true }).fill('When does the office open?')
  await page.getByRole('textbox', { name: 'Message', exact: true }).press('Enter')
  await page.getByRole('button', { name: 'Stop' }).waitFor()
  await page.waitForFunction(replyIncludes, { index: 0, text: 'word3' })
  const partial = (await reply().textContent())!
  expect(partial).not.toContain('word39')
  await page.getByRole('button', { name: 'Send' }).waitFor()
  const full = (await reply().textContent())!
  expect(full).toContain('word39')
  expect(full.length).toBeGreaterThan(partial.length)
  expect(await reply().locator('strong').textContent()).toBe('nine')
  expect(await reply().textContent()).toContain('Answered by test/scripted')
  await reply().getByRole('button', { name: 'Copy code' }).click()
  expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe('console.log("hi")')
  expect(new URL(page.url()).pathname).toMatch(/^\/app\/chat\/[\w-]+$/)
})

test('Stop ends the reply where it is; the server stops generating', async () => {
  const { page } = browser
  const before = generator.piecesSent
  await page.getByRole('textbox', { name: 'Message', exact: true }).fill('Tell me more')
  await page.getByRole('button', { name: 'Send' }).click()
  await page.waitForFunction(replyIncludes, { index: 1, text: 'office' })
  await page.getByRole('button', { name: 'Stop' }).click()
  await page.getByText('· stopped').waitFor()
  await Bun.sleep(400)
  const sent = generator.piecesSent - before
  expect(sent).toBeLessThan(REPLY.split(/\s+/).length - 5)
  expect(await reply().textContent()).not.toContain('word39')
})

test('history after a reload: the conversation is listed, newest first, and holds both exchanges', async () => {
  const { page } = browser
  await page.reload()
  const history = page.getByRole('list', { name: 'Conversation history, newest first' })
  await history.getByRole('link').first().waitFor()
  expect(await history.getByRole('link').first().textContent()).toContain('When does the office open?')
  await expect(page.getByLabel('Assistant reply').count()).resolves.toBe(2)
  expect(await page.getByLabel('Assistant reply').nth(1).textContent()).toContain('stopped')
  // Rename from the list.
  await history.getByRole('button', { name: /^Rename/ }).first().click()
  await page.getByLabel('New title').fill('Office hours')
  await page.getByRole('button', { name: 'Save' }).click()
  await history.getByRole('link', { name: 'Office hours' }).waitFor()
  await page.reload()
  await history.getByRole('link', { name: 'Office hours' }).waitFor()
})

test('upload a file with a progress bar and report, then a grounded reply whose citation opens the passage and its document', async () => {
  const { page } = browser
  await page.getByRole('link', { name: 'Knowledge base' }).click()
  await page.getByLabel('New collection').fill('handbook')
  await page.getByRole('button', { name: 'Create' }).click()
  await page.getByRole('radio', { name: /handbook/ }).waitFor()
  // A taken name is refused in words, next to the field.
  await page.getByLabel('New collection').fill('handbook')
  await page.getByRole('button', { name: 'Create' }).click()
  await page.getByRole('alert').getByText('You already have a collection named handbook').waitFor()
  await page.getByLabel('Files to upload').setInputFiles({
    name: 'hours.md',
    mimeType: 'text/markdown',
    buffer: Buffer.from('# Office hours\n\nThe office opens at nine in the morning and closes at five.\n'),
  })
  const upload = page.getByRole('list', { name: 'Uploads' }).getByRole('listitem').first()
  await upload.getByText(/ingested/).waitFor()
  expect(await upload.getByRole('progressbar').getAttribute('value')).toBe(await upload.getByRole('progressbar').getAttribute('max'))
  await page.getByRole('cell', { name: 'Office hours', exact: true }).waitFor()

  await page.getByRole('link', { name: 'Chat' }).click()
  await page.getByRole('button', { name: 'New chat' }).click()
  await page.getByLabel('Ground in').selectOption('handbook')
  await page.getByRole('textbox', { name: 'Message', exact: true }).fill('When does the office open?')
  await page.getByRole('button', { name: 'Send' }).click()
  await page.getByRole('button', { name: 'Send' }).waitFor({ timeout: 20_000 })
  expect(await reply().textContent()).toContain('1 source')
  await reply().getByRole('button', { name: 'Open source 1' }).click()
  const passage = page.getByLabel('Cited passage')
  await passage.waitFor()
  expect(await passage.textContent()).toContain('opens at nine')
  await page.getByText('Whole document: Office hours').click()
  expect(browser.consoleErrors).toEqual([])
  expect(browser.foreignRequests).toEqual([])
  expect(browser.failedResponses).toEqual(['409 POST /rag/collections'])
})
