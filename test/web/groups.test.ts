import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { openBrowser, signIn, startServer, type Watched, type WebServer } from './harness'

// A real browser on a busy machine: page loads and waits take longer than bun's 5 s default.
setDefaultTimeout(60_000)

let server: WebServer
let browser: Watched

beforeAll(async () => {
  server = await startServer()
  await server.services.auth.createUser('ann@example.com', 'ann-password-1', ['user'])
  browser = await openBrowser(server.base)
  await signIn(browser.page)
})

afterAll(async () => {
  await browser?.browser.close()
  await server?.stop()
})

test('an admin creates a group, adds and removes a member, renames it; the member sees it only while in it', async () => {
  const { page } = browser
  await page.getByRole('link', { name: 'Groups' }).click()
  const create = page.getByRole('form', { name: 'Create a group' })
  await create.getByLabel('Group name').fill('Engineering')
  await create.getByLabel('Description').fill('Everyone who builds')
  await create.getByRole('button', { name: 'Create group' }).click()
  // The new group opens with its panel.
  await page.getByRole('form', { name: 'Add a member to Engineering' }).getByLabel("Member's email").fill('ann@example.com')
  await page.getByRole('form', { name: 'Add a member to Engineering' }).getByRole('button', { name: 'Add member' }).click()
  const members = page.getByRole('list', { name: 'Members of Engineering' })
  await members.getByText('ann@example.com').waitFor()
  const [group] = (await server.services.groups.list({ user: { id: 'x' }, isAdmin: true })).filter((g) => g.name === 'Engineering')
  expect(group).toMatchObject({ members: 1, description: 'Everyone who builds' })
  const ann = (await server.services.auth.findUserByEmail('ann@example.com'))!
  expect(await server.services.groups.groupIdsOf(ann.id)).toEqual([group!.id])

  // An unknown email is said next to the form.
  await page.getByRole('form', { name: 'Add a member to Engineering' }).getByLabel("Member's email").fill('nobody@example.com')
  await page.getByRole('form', { name: 'Add a member to Engineering' }).getByRole('button', { name: 'Add member' }).click()
  await page.getByRole('alert').getByText('nobody@example.com').waitFor()

  // The member, in a browser of their own, sees the group (and no way to manage it).
  const annBrowser = await browser.browser.newContext({ viewport: { width: 1280, height: 800 }, baseURL: server.base })
  try {
    const annPage = await annBrowser.newPage()
    await signIn(annPage, 'ann@example.com', 'ann-password-1')
    await annPage.getByRole('link', { name: 'Groups' }).click()
    await annPage.getByRole('list', { name: 'Groups' }).getByRole('button', { name: 'Engineering' }).waitFor()
    expect(await annPage.getByRole('form', { name: 'Create a group' }).count()).toBe(0)
    expect(await annPage.getByRole('link', { name: 'Audit log' }).count()).toBe(0)

    // Removed by the admin: the member's next load no longer lists it.
    await members.getByRole('button', { name: 'Remove ann@example.com from Engineering' }).click()
    await members.getByText('No members.').waitFor()
    expect(await server.services.groups.groupIdsOf(ann.id)).toEqual([])
    await annPage.reload()
    await annPage.getByText('You are in no group.').waitFor()
  } finally {
    await annBrowser.close()
  }

  const rename = page.getByRole('form', { name: 'Rename Engineering' })
  await rename.getByLabel('Name').fill('Platform')
  await rename.getByRole('button', { name: 'Rename' }).click()
  await page.getByRole('list', { name: 'Groups' }).getByRole('button', { name: 'Platform' }).waitFor()
  await page.getByRole('button', { name: 'Delete group' }).click()
  await page.getByText('No groups yet.').waitFor()
  expect(await server.services.groups.list({ user: { id: 'x' }, isAdmin: true })).toEqual([])
})

test('the audit log page filters by action and actor and pages with the cursor', async () => {
  const { page } = browser
  // Enough events for two pages of 50.
  for (let i = 0; i < 60; i++) server.services.audit.record({ actor: null, action: 'backup.created', target: `nightly-${String(i).padStart(2, '0')}.tar.gz` })
  await page.getByRole('link', { name: 'Audit log' }).click()
  const table = page.getByRole('table', { name: 'Audit events' })
  await table.getByRole('cell', { name: 'nightly-59.tar.gz' }).waitFor()
  const filter = page.getByRole('form', { name: 'Filter the audit log' })
  await filter.getByLabel('Action').fill('group.*')
  await filter.getByRole('button', { name: 'Filter' }).click()
  await table.getByRole('cell', { name: 'group.deleted' }).waitFor()
  const actions = await table.locator('tbody tr td:nth-child(2)').allTextContents()
  expect(actions).toEqual(['group.deleted', 'group.updated', 'group.member_removed', 'group.member_added', 'group.created'])

  await filter.getByLabel('Action').fill('backup.created')
  await filter.getByRole('button', { name: 'Filter' }).click()
  await table.getByRole('cell', { name: 'nightly-59.tar.gz' }).waitFor()
  expect(await table.locator('tbody tr').count()).toBe(50)
  await page.getByRole('button', { name: 'Older' }).click()
  await table.getByRole('cell', { name: 'nightly-00.tar.gz' }).waitFor()
  expect(await table.locator('tbody tr').count()).toBe(10)
  expect(await page.getByRole('button', { name: 'Older' }).isDisabled()).toBe(true)
  await page.getByRole('button', { name: 'Newer' }).click()
  await table.getByRole('cell', { name: 'nightly-59.tar.gz' }).waitFor()

  await filter.getByLabel('Action').fill('')
  await filter.getByLabel('Actor (email or id)').fill('ann@example.com')
  await filter.getByRole('button', { name: 'Filter' }).click()
  await table.getByRole('cell', { name: 'auth.login' }).waitFor()
  expect(await table.locator('tbody tr').count()).toBe(1)
})

test('at phone width (375 px) the groups and audit pages do not scroll sideways; no console errors, no foreign requests', async () => {
  const { page } = browser
  await page.setViewportSize({ width: 375, height: 800 })
  for (const path of ['/app/groups', '/app/audit']) {
    await page.goto(path)
    await page.locator('main h1').first().waitFor()
    await page.waitForLoadState('networkidle')
    expect({ path, width: await page.evaluate<number>('document.documentElement.scrollWidth') }).toEqual({ path, width: 375 })
  }
  expect(browser.consoleErrors).toEqual([])
  expect(browser.foreignRequests).toEqual([])
  // The one refused request was the unknown member's email.
  expect(browser.failedResponses).toHaveLength(1)
  expect(browser.failedResponses[0]).toMatch(/^404 POST \/groups\/[0-9a-f-]{36}\/members$/)
})
