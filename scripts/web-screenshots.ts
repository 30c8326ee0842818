// `bun scripts/web-screenshots.ts [page…]`: screenshots of the web app's main pages at 1440 and 375 px
// into docs/screenshots/, against a throwaway server with a little real content. Naming pages
// (e.g. `groups audit`) takes only those, and not the dark and sign-in ones.
import { join } from 'node:path'
import { ScriptedGenerator } from '../test/helpers'
import { openBrowser, signIn, startServer } from '../test/web/harness'

const out = join(import.meta.dir, '../docs/screenshots')
/** Thrown to stop after the pages asked for. */
class Done extends Error {}
const server = await startServer({
  chat: new ScriptedGenerator('The office opens at **nine** and closes at five [1].\n\n- Mondays: from ten\n- Fridays: until four\n\n```sh\nuagent chat "When does the office open?"\n```', 0),
})
const watched = await openBrowser(server.base)
const { page } = watched
try {
  await signIn(page)
  // Content: a document, a grounded exchange, an agent task.
  const token = (await server.services.auth.login('admin@example.com', 'admin-password-1', null)).accessToken
  const form = new FormData()
  form.append('files', new File(['# Office hours\n\nThe office opens at nine in the morning and closes at five. On Mondays it opens at ten; on Fridays it closes at four.\n'], 'office-hours.md'))
  await fetch(`${server.base}/rag/collections/handbook/files`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form })
  await page.goto('/app/chat')
  await page.getByLabel('Ground in').selectOption('handbook')
  await page.getByRole('textbox', { name: 'Message', exact: true }).fill('When does the office open?')
  await page.getByRole('button', { name: 'Send' }).click()
  await page.getByText('Answered by').waitFor()
  // A group with two members (and the audit events that made it).
  for (const email of ['ann@example.com', 'bob@example.com']) await server.services.auth.createUser(email, 'a-long-password-1', ['user'])
  const json = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
  const group = await (await fetch(`${server.base}/groups`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'Handbook editors', description: 'Keep the office handbook current' }) })).json()
  for (const email of ['ann@example.com', 'bob@example.com']) await fetch(`${server.base}/groups/${group.id}/members`, { method: 'POST', headers: json, body: JSON.stringify({ email }) })
  await fetch(`${server.base}/groups`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'Support' }) })
  const shots: [string, string, (() => Promise<void>)?][] = [
    ['chat', '/app/chat'],
    ['knowledge', '/app/knowledge'],
    ['agents', '/app/agents', async () => {
      if (await page.getByRole('region', { name: 'Progress' }).count()) return
      await page.getByLabel('Task', { exact: true }).fill('Summarise what the office hours are on each weekday')
      await page.getByRole('button', { name: 'Run' }).click()
      await page.getByRole('region', { name: 'Final synthesis' }).waitFor({ timeout: 60_000 })
    }],
    ['voice', '/app/voice'],
    ['plugins', '/app/plugins', async () => void (await page.getByRole('region', { name: 'calculator' }).getByRole('button', { name: 'Run an action' }).click())],
    ['analytics', '/app/analytics'],
    ['admin', '/app/admin'],
    ['groups', '/app/groups', async () => void (await page.getByRole('button', { name: 'Handbook editors' }).click())],
    ['audit', '/app/audit'],
  ]
  const only = process.argv.slice(2)
  if (only.length) shots.splice(0, shots.length, ...shots.filter(([name]) => only.includes(name)))
  for (const width of [1440, 375]) {
    await page.setViewportSize({ width, height: width === 1440 ? 900 : 800 })
    for (const [name, path, prepare] of shots) {
      await page.goto(path)
      if (name === 'chat') await page.getByRole('list', { name: /Conversation history/ }).getByRole('link').first().click()
      await page.waitForLoadState('networkidle')
      await prepare?.()
      await page.waitForTimeout(150)
      await page.screenshot({ path: join(out, `${name}-${width}.png`) })
    }
  }
  if (only.length) throw new Done()
  // Dark, as the system asks.
  await page.setViewportSize({ width: 1440, height: 900 })
  await page.emulateMedia({ colorScheme: 'dark' })
  for (const name of ['chat', 'analytics']) {
    await page.goto(`/app/${name}`)
    if (name === 'chat') await page.getByRole('list', { name: /Conversation history/ }).getByRole('link').first().click()
    await page.waitForLoadState('networkidle')
    await page.waitForTimeout(150)
    await page.screenshot({ path: join(out, `${name}-dark-1440.png`) })
  }
  await page.emulateMedia({ colorScheme: 'light' })
  await page.context().clearCookies()
  await page.setViewportSize({ width: 1440, height: 900 })
  await page.goto('/app')
  await page.getByRole('button', { name: 'Sign in' }).waitFor()
  await page.screenshot({ path: join(out, 'sign-in-1440.png') })
  if (watched.consoleErrors.length) console.error(watched.consoleErrors.join('\n'))
} catch (error) {
  if (!(error instanceof Done)) throw error
} finally {
  await watched.browser.close()
  await server.stop()
}
console.log(`screenshots written to ${out}`)
process.exit(0)
