import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { ADMIN, openBrowser, ScriptedGenerator, signIn, startServer, type Watched, type WebServer } from './harness'
import { axeViolations } from './axe'
import { HANDBOOK } from '../modules/assistants/probes'

setDefaultTimeout(120_000)

let server: WebServer
const browsers: Watched[] = []
const model = new ScriptedGenerator('Leave is 28 days [1].', 0)

async function call(method: string, path: string, token: string | null, body?: unknown) {
  const response = await fetch(`${server.base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: response.status, json: (await response.json()) as any }
}
const login = async (email: string, password: string) => (await call('POST', '/auth/login', null, { email, password })).json.accessToken as string

beforeAll(async () => {
  server = await startServer({ chat: model })
  const admin = await login(ADMIN.email, ADMIN.password)
  for (const email of ['alice@example.com', 'bob@example.com']) {
    expect((await call('POST', '/auth/users', admin, { email, password: 'user-password-1', roles: ['user'] })).status).toBe(200)
  }
  const group = await call('POST', '/groups', admin, { name: 'staff' })
  await call('POST', `/groups/${group.json.id}/members`, admin, { email: 'bob@example.com' })
  const alice = await login('alice@example.com', 'user-password-1')
  expect((await call('POST', '/rag/ingest', alice, { collection: 'handbook', documents: HANDBOOK })).status).toBe(200)
})

afterAll(async () => {
  for (const watched of browsers) await watched.browser.close()
  await server?.stop()
})

test('the owner makes an assistant on the Assistants page and shares it (and its collection) with a group; a member picks it in chat, sees its starters, and each reply names it', async () => {
  const owner = await openBrowser(server.base)
  browsers.push(owner)
  await signIn(owner.page, 'alice@example.com', 'user-password-1')
  await owner.page.getByRole('link', { name: 'Assistants' }).click()
  await owner.page.getByRole('button', { name: 'New assistant' }).click()
  const form = owner.page.getByRole('form', { name: 'Create an assistant' })
  await form.getByLabel('Name').fill('HR helper')
  await form.getByLabel('Description').fill('Answers HR questions')
  await form.getByLabel('Instructions').fill('You are the marigold HR helper. Cite the handbook.')
  await form.getByLabel('handbook').check()
  await form.getByLabel(/Conversation starters/).fill('How many days of leave do I have?\nWho holds the vault code?')
  await form.getByRole('button', { name: 'Create assistant' }).click()
  const list = owner.page.getByRole('list', { name: 'Assistants' })
  await list.getByText('Answers from handbook').waitFor()
  await list.getByRole('button', { name: 'Share assistant HR helper' }).click()
  const dialog = owner.page.getByRole('dialog', { name: 'Share HR helper' })
  await dialog.getByText('Owner: alice@example.com').waitFor()
  await dialog.getByLabel('Share with').selectOption('group')
  await dialog.getByLabel('Group').fill('staff')
  await dialog.getByRole('button', { name: 'Add' }).click()
  await dialog.getByLabel('Also give them viewer on its collections that you manage').check()
  await dialog.getByRole('button', { name: 'Save access' }).click()
  await dialog.getByText('Collections shared too: alice@example.com/handbook').waitFor()
  const alice = await login('alice@example.com', 'user-password-1')
  expect((await call('GET', '/assistants/HR%20helper/access', alice)).json.shares).toEqual([{ type: 'group', id: expect.any(String), name: 'staff', role: 'viewer' }])
  expect((await call('GET', '/rag/collections/handbook/access', alice)).json.shares).toEqual([{ type: 'group', id: expect.any(String), name: 'staff', role: 'viewer' }])
  expect(owner.consoleErrors).toEqual([])

  const member = await openBrowser(server.base)
  browsers.push(member)
  await signIn(member.page, 'bob@example.com', 'user-password-1')
  await member.page.goto('/app/chat')
  const picker = member.page.getByLabel('Assistant', { exact: true })
  await picker.locator('option', { hasText: 'HR helper — shared by alice@example.com' }).waitFor({ state: 'attached' })
  await picker.selectOption('alice@example.com/HR helper')
  const starters = member.page.getByRole('group', { name: 'Starters of HR helper' })
  await starters.getByText('Answers HR questions').waitFor()
  await starters.getByRole('button', { name: 'How many days of leave do I have?' }).click()
  const reply = member.page.getByLabel('Assistant reply').last()
  await reply.getByText('Leave is 28 days').waitFor()
  await reply.locator('.badge', { hasText: 'HR helper' }).waitFor()
  // The model was given its instructions and the handbook's passages.
  const prompt = model.prompts.at(-1)!.map((m) => m.content).join('\n')
  expect(prompt).toContain('marigold HR helper')
  expect(prompt).toContain('periwinkle')
  // The conversation keeps it: reopened, the picker shows it and the next reply names it again.
  await member.page.waitForURL(/\/app\/chat\/.+/)
  await member.page.reload()
  await member.page.getByLabel('Assistant reply').first().locator('.badge', { hasText: 'HR helper' }).waitFor()
  expect(await member.page.locator('.composer .badge', { hasText: 'HR helper' }).count()).toBe(1)
  await member.page.getByRole('textbox', { name: 'Message', exact: true }).fill('And who holds the vault code?')
  await member.page.getByRole('textbox', { name: 'Message', exact: true }).press('Enter')
  await member.page.getByLabel('Assistant reply').nth(1).locator('.badge', { hasText: 'HR helper' }).waitFor()
  expect(member.consoleErrors).toEqual([])
  expect(member.foreignRequests).toEqual([])
})

test('the Assistants page and the chat with an assistant picked pass axe-core (WCAG 2.1 A/AA) at 1440 and 375 px, without sideways scrolling', async () => {
  for (const width of [1440, 375]) {
    const watched = await openBrowser(server.base, { width, height: 900 })
    browsers.push(watched)
    const { page } = watched
    await signIn(page, 'bob@example.com', 'user-password-1')
    await page.goto('/app/assistants')
    await page.getByRole('list', { name: 'Assistants' }).getByText('HR helper').waitFor()
    await page.getByRole('button', { name: 'New assistant' }).click()
    await page.getByRole('form', { name: 'Create an assistant' }).waitFor()
    await page.waitForLoadState('networkidle')
    expect({ width, page: 'assistants', violations: await axeViolations(page) }).toEqual({ width, page: 'assistants', violations: [] })
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBe(width)
    await page.goto('/app/chat')
    await page.getByLabel('Assistant', { exact: true }).selectOption('alice@example.com/HR helper')
    await page.getByRole('group', { name: 'Starters of HR helper' }).waitFor()
    await page.waitForLoadState('networkidle')
    expect({ width, page: 'chat', violations: await axeViolations(page) }).toEqual({ width, page: 'chat', violations: [] })
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBe(width)
    expect(watched.consoleErrors).toEqual([])
  }
})
