import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { ADMIN, openBrowser, ScriptedGenerator, signIn, startServer, type Watched, type WebServer } from './harness'
import { HANDBOOK } from '../modules/shares/probes'

// A real browser on a busy machine: page loads and waits take longer than bun's 5 s default.
setDefaultTimeout(90_000)

let server: WebServer
const browsers: Watched[] = []

/** The API as a user of the running server: JSON in and out. */
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
  server = await startServer({ chat: new ScriptedGenerator('From the handbook [1].', 0) })
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

test('the owner shares a collection with a group in the Share dialog; a member sees it marked with its owner in the knowledge page and the chat picker, read-only', async () => {
  const owner = await openBrowser(server.base)
  browsers.push(owner)
  await signIn(owner.page, 'alice@example.com', 'user-password-1')
  await owner.page.goto('/app/knowledge')
  await owner.page.getByRole('button', { name: 'Share collection handbook' }).click()
  const dialog = owner.page.getByRole('dialog', { name: 'Share handbook' })
  await dialog.getByText('Owner: alice@example.com').waitFor()
  await dialog.getByLabel('Share with').selectOption('group')
  await dialog.getByLabel('Group').fill('staff')
  await dialog.getByLabel('Role', { exact: true }).selectOption('viewer')
  await dialog.getByRole('button', { name: 'Add' }).click()
  await dialog.getByRole('button', { name: 'Save access' }).click()
  await dialog.getByText('Saved').waitFor()
  const alice = await login('alice@example.com', 'user-password-1')
  expect((await call('GET', '/rag/collections/handbook/access', alice)).json.shares).toEqual([{ type: 'group', id: expect.any(String), name: 'staff', role: 'viewer' }])
  // A role changed in the list and saved.
  await dialog.getByLabel('Role of staff').selectOption('editor')
  await dialog.getByRole('button', { name: 'Save access' }).click()
  for (let i = 0; i < 50 && (await call('GET', '/rag/collections/handbook/access', alice)).json.shares[0]?.role !== 'editor'; i++) await Bun.sleep(100)
  expect((await call('GET', '/rag/collections/handbook/access', alice)).json.shares[0].role).toBe('editor')
  await dialog.getByLabel('Role of staff').selectOption('viewer')
  await dialog.getByRole('button', { name: 'Save access' }).click()
  for (let i = 0; i < 50 && (await call('GET', '/rag/collections/handbook/access', alice)).json.shares[0]?.role !== 'viewer'; i++) await Bun.sleep(100)
  expect((await call('GET', '/rag/collections/handbook/access', alice)).json.shares[0].role).toBe('viewer')
  expect(owner.consoleErrors).toEqual([])

  const member = await openBrowser(server.base)
  browsers.push(member)
  await signIn(member.page, 'bob@example.com', 'user-password-1')
  await member.page.goto('/app/knowledge')
  const list = member.page.getByRole('list', { name: 'Your collections' })
  await list.getByText('shared by alice@example.com · viewer').waitFor()
  // A viewer: no Share or Delete, no upload box, no document deletion; the documents and search are there.
  expect(await list.getByRole('button').count()).toBe(0)
  expect(await member.page.getByText('Upload to').count()).toBe(0)
  await member.page.getByRole('cell', { name: 'Vault periwinkle' }).waitFor()
  expect(await member.page.getByRole('button', { name: /Delete document/ }).count()).toBe(0)
  await member.page.getByLabel('Search passages').fill('vault code word')
  await member.page.getByRole('button', { name: 'Search', exact: true }).click()
  await member.page.getByRole('list', { name: 'Search results' }).getByText('periwinkle', { exact: false }).first().waitFor()
  // The chat's grounding picker marks it with its owner and grounds on it by its qualified name.
  await member.page.goto('/app/chat')
  const picker = member.page.getByLabel('Ground in')
  await picker.locator('option', { hasText: 'handbook — shared by alice@example.com (viewer)' }).waitFor({ state: 'attached' })
  await picker.selectOption('alice@example.com/handbook')
  await member.page.getByRole('textbox', { name: 'Message', exact: true }).fill('What is the vault code word?')
  await member.page.getByRole('textbox', { name: 'Message', exact: true }).press('Enter')
  await member.page.getByLabel('Assistant reply').last().getByText('From the handbook').waitFor()
  expect(member.consoleErrors).toEqual([])
  expect(member.foreignRequests).toEqual([])
})
