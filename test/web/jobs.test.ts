import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { makePdf, pagesOf } from '../modules/kb/files'
import { slowExtractor } from '../modules/kb/slow-extractor'
import { openBrowser, signIn, startServer, type Watched, type WebServer } from './harness'

// A real browser on a busy machine: page loads and waits take longer than bun's 5 s default.
setDefaultTimeout(60_000)

let server: WebServer
let browser: Watched

beforeAll(async () => {
  // Every upload is a job, and each page takes 60 ms to read: long enough to watch and to cancel.
  server = await startServer({ env: { UAGENT_INGEST_JOB_AFTER_MS: '0' }, customize: (services) => (services.ingestJobs.extract = slowExtractor(60).extract) })
  browser = await openBrowser(server.base)
  await signIn(browser.page)
})

afterAll(async () => {
  await browser?.browser.close()
  await server?.stop()
})

test('an upload that becomes a job shows its pages read and its progress until ingested; another is cancelled from the list', async () => {
  const { page } = browser
  await page.getByRole('link', { name: 'Knowledge base' }).click()
  await page.getByLabel('New collection').fill('manuals')
  await page.getByRole('button', { name: 'Create' }).click()
  await page.getByRole('radio', { name: /manuals/ }).waitFor()

  await page.getByLabel('Files to upload').setInputFiles({ name: 'turbine.pdf', mimeType: 'application/pdf', buffer: Buffer.from(await makePdf(pagesOf(30, 'Turbine'))) })
  const job = page.getByRole('listitem', { name: 'Ingestion of turbine.pdf' })
  // Part way: some pages read of 30, a bar below 100 %, and a Cancel button.
  await job.getByText(/reading · ([1-9]|1\d|2[0-8]) of 30 pages read/).waitFor()
  expect(Number(await job.getByRole('progressbar').getAttribute('value'))).toBeLessThan(100)
  await job.getByRole('button', { name: 'Cancel ingestion of turbine.pdf' }).waitFor()
  await job.getByText(/ingested/).waitFor({ timeout: 30_000 })
  expect(await job.getByRole('progressbar').getAttribute('value')).toBe('100')
  expect(await job.locator('.badge').textContent()).toBe('completed')
  expect(await job.getByRole('button', { name: /Cancel/ }).count()).toBe(0)
  await page.getByRole('cell', { name: 'Router Manual', exact: true }).waitFor()

  await page.getByLabel('Files to upload').setInputFiles({ name: 'long.pdf', mimeType: 'application/pdf', buffer: Buffer.from(await makePdf(pagesOf(200, 'Long'))) })
  const long = page.getByRole('listitem', { name: 'Ingestion of long.pdf' })
  await long.getByText(/of 200 pages read/).waitFor()
  await long.getByRole('button', { name: 'Cancel ingestion of long.pdf' }).click()
  await long.locator('.badge', { hasText: 'cancelled' }).waitFor()
  expect(await long.getByRole('button', { name: /Cancel/ }).count()).toBe(0)
  // The server agrees: the job is cancelled, its file was never ingested.
  const stored = server.services.db.query<{ status: string }, []>("SELECT j.status FROM ingest_jobs j JOIN ingest_job_files f ON f.job_id = j.id WHERE f.name = 'long.pdf'").get()
  expect(stored?.status).toBe('cancelled')
  expect(browser.consoleErrors).toEqual([])
  expect(browser.foreignRequests).toEqual([])
  expect(browser.failedResponses).toEqual([])
})
