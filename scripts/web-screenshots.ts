// `bun scripts/web-screenshots.ts`: screenshots of the web app's main pages at 1440 and 375 px
// into docs/screenshots/, against a throwaway server with a little real content.
import { join } from 'node:path'
import { ScriptedGenerator } from '../test/helpers'
import { openBrowser, signIn, startServer } from '../test/web/harness'

const out = join(import.meta.dir, '../docs/screenshots')
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
  ]
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
} finally {
  await watched.browser.close()
  await server.stop()
}
console.log(`screenshots written to ${out}`)
process.exit(0)
