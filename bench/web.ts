// The web app in Debian's chromium: JavaScript bytes sent for the first page (as sent: gzip), the
// time until the app is usable after navigation, and the delay from a streamed token's SSE event
// reaching the page to the frame that shows it. Goals: ≤ 300 KB, ≤ 1 s, ≤ 50 ms.
import type { Page } from 'playwright-core'
import { ScriptedGenerator } from '../test/helpers'
import { removeTempDirs } from '../test/temp'
import { openBrowser, signIn, startServer } from '../test/web/harness'

const RUNS = Number(process.env.BENCH_WEB_RUNS ?? 5)
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`

async function scriptBytes(page: Page, path: string): Promise<{ sent: number; raw: number; files: number }> {
  const responses: Promise<{ sent: number; raw: number }>[] = []
  const onResponse = (response: import('playwright-core').Response) => {
    if (response.request().resourceType() !== 'script') return
    responses.push(
      (async () => {
        const sizes = await response.request().sizes()
        return { sent: sizes.responseBodySize + sizes.responseHeadersSize, raw: (await response.body()).length }
      })(),
    )
  }
  page.on('response', onResponse)
  await page.goto(path, { waitUntil: 'networkidle' })
  page.off('response', onResponse)
  const all = await Promise.all(responses)
  return { sent: all.reduce((s, r) => s + r.sent, 0), raw: all.reduce((s, r) => s + r.raw, 0), files: all.length }
}

async function interactiveMs(page: Page, path: string): Promise<number> {
  await page.goto(path)
  await page.waitForFunction(() => (globalThis as unknown as { performance: Performance }).performance.getEntriesByName('ua:interactive').length > 0)
  return page.evaluate(() => (globalThis as unknown as { performance: Performance }).performance.getEntriesByName('ua:interactive')[0]!.startTime)
}

const server = await startServer({ chat: new ScriptedGenerator('Streaming tokens to the page one at a time for the benchmark.', 20) })
const watched = await openBrowser(server.base)
const { page, context } = watched
try {
  console.log(`\n== web (chromium, ${RUNS} runs each; goals: first-page JS ≤ 300 KB as sent, interactive ≤ 1 s, first token shown ≤ 50 ms after its event)`)
  // Fresh cache each time: the bytes of a first visit.
  const cdp = await context.newCDPSession(page)
  await cdp.send('Network.enable')
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true })
  const first = await scriptBytes(page, '/app')
  console.log(`first page (sign-in) JS: ${kb(first.sent)} sent (gzip, ${first.files} file(s)), ${kb(first.raw)} uncompressed`)
  const signIns: number[] = []
  for (let run = 0; run < RUNS; run++) signIns.push(await interactiveMs(page, '/app'))
  console.log(`interactive, sign-in page (no cache): median ${median(signIns).toFixed(0)} ms (runs: ${signIns.map((v) => v.toFixed(0)).join(', ')})`)
  await signIn(page)
  const chat = await scriptBytes(page, '/app/chat')
  console.log(`chat page (signed in) JS: ${kb(chat.sent)} sent, ${kb(chat.raw)} uncompressed`)
  const resumes: number[] = []
  for (let run = 0; run < RUNS; run++) resumes.push(await interactiveMs(page, '/app/chat'))
  console.log(`interactive, chat page after a reload (session resumed from the cookie, no cache): median ${median(resumes).toFixed(0)} ms (runs: ${resumes.map((v) => v.toFixed(0)).join(', ')})`)
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: false })
  const cached: number[] = []
  await page.goto('/app/chat')
  for (let run = 0; run < RUNS; run++) cached.push(await interactiveMs(page, '/app/chat'))
  console.log(`interactive, chat page after a reload (cached assets): median ${median(cached).toFixed(0)} ms`)

  const shown: number[] = []
  for (let run = 0; run < RUNS; run++) {
    await page.goto('/app/chat')
    await page.getByRole('textbox', { name: 'Message', exact: true }).fill(`Benchmark message ${run}`)
    await page.getByRole('button', { name: 'Send' }).click()
    await page.getByRole('button', { name: 'Send' }).waitFor()
    shown.push(
      await page.evaluate(() => {
        const perf = (globalThis as unknown as { performance: Performance }).performance
        return perf.getEntriesByName('ua:first-chunk-shown')[0]!.startTime - perf.getEntriesByName('ua:first-chunk')[0]!.startTime
      }),
    )
  }
  console.log(`first token on screen after its SSE event: median ${median(shown).toFixed(1)} ms, max ${Math.max(...shown).toFixed(1)} ms`)
  if (watched.consoleErrors.length) console.log(`console errors: ${watched.consoleErrors.join(' | ')}`)
} finally {
  await watched.browser.close()
  await server.stop()
  removeTempDirs()
}
process.exit(0)
