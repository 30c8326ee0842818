import { afterAll, describe, expect, test } from 'bun:test'
import { type AppOptions, buildApp, type Services, startServices } from '../../../src/app'
import { stopOcr } from '../../../src/modules/rag/extract'
import { ADMIN, makeServer } from '../../helpers'
import { freshPostgres, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../../postgres'
import { makeMbox, makeXlsx, pandoc, Renderer } from '../extract/files'
import { formOf } from './files'

const renderer = new Renderer()
const started: Services[] = []
afterAll(async () => {
  await renderer.close()
  await stopOcr()
  for (const services of started) {
    services.agents.close()
    services.plugins.close()
    services.postgresMonitor?.close()
    await services.postgres?.close()
    services.db.close()
    services.analyticsDb.close()
  }
})

type Call = (method: string, path: string, init?: { token?: string; body?: unknown }) => Promise<{ status: number; json: any }>
type Upload = (collection: string, form: FormData, token: string) => Promise<{ status: number; json: any }>

function clientOf(handle: (request: Request) => Promise<Response>): { call: Call; upload: Upload } {
  return {
    async call(method, path, init = {}) {
      const headers: Record<string, string> = init.token ? { authorization: `Bearer ${init.token}` } : {}
      if (init.body !== undefined) headers['content-type'] = 'application/json'
      const response = await handle(new Request(`http://localhost${path}`, { method, headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) }))
      const text = await response.text()
      return { status: response.status, json: text ? JSON.parse(text) : undefined }
    },
    async upload(collection, form, token) {
      const response = await handle(new Request(`http://localhost/rag/collections/${collection}/files`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form }))
      return { status: response.status, json: await response.json() }
    },
  }
}

const MAILS = [
  { from: 'Ana Silva <ana@example.com>', to: 'ops@example.com', subject: 'Cold room temperatures', date: 'Tue, 03 Mar 2026 09:15:00 +0000', messageId: '<cold-room-1@example.com>', body: 'The cold room reached nine degrees overnight.' },
  { from: 'Ben Ode <ben@example.com>', to: 'ops@example.com', subject: 'Re: Cold room temperatures', date: 'Tue, 03 Mar 2026 11:00:00 +0000', messageId: '<cold-room-2@example.com>', body: 'The compressor technician arrives on Thursday morning.' },
]

/** Files of the new kinds uploaded in one request: what the response, the search results and the document details say. */
async function scenario({ call, upload }: { call: Call; upload: Upload }) {
  const login = await call('POST', '/auth/login', { body: ADMIN })
  const token = login.json.accessToken as string
  // An image needs OCR: its upload is an ingestion job (202), followed here until it ends.
  const scan = await upload('formats', formOf([['invoice.png', await renderer.screenshot(['Invoice 4471 from Nordic Heating is due on 12 March 2026.'])]]), token)
  expect(scan.status).toBe(202)
  expect(scan.json.status).toBe('queued')
  let job: any
  for (const started = Date.now(); Date.now() - started < 60_000; await Bun.sleep(100)) {
    job = (await call('GET', `/rag/jobs/${scan.json.jobId}`, { token })).json
    if (['completed', 'failed', 'cancelled'].includes(job.status)) break
  }
  expect(job).toMatchObject({ status: 'completed', progress: 100 })
  expect(job.files[0]).toMatchObject({ name: 'invoice.png', id: 'invoice.png', type: 'image', pages: 1, pagesDone: 1, status: 'ingested' })
  const mailbox = makeMbox(MAILS)
  const form = formOf([
    ['review.pptx', pandoc('# Revenue\n\nRevenue grew twelve percent.\n\n::: notes\nMention the currency effect on Swiss sales.\n:::\n\n# Hiring\n\nFour engineers joined.\n', 'pptx')],
    ['ops.mbox', mailbox],
    ['stock.xlsx', await makeXlsx([{ name: 'Inventory', rows: [['Item', 'Quantity'], ['Torque wrench', 4]] }])],
  ])
  const res = await upload('formats', form, token)
  expect(res.status).toBe(200)
  expect(res.json).toMatchObject({ success: true, ingested: 4, failed: 0 })
  const files = Object.fromEntries(res.json.files.map((f: any) => [f.id, f]))
  expect(files['review.pptx']).toMatchObject({ type: 'pptx', pages: 2, status: 'ingested' })
  expect(files['ops.mbox#cold-room-1@example.com']).toMatchObject({ name: 'ops.mbox', type: 'email', title: 'Cold room temperatures', status: 'ingested' })
  expect(files['ops.mbox#cold-room-2@example.com']).toMatchObject({ name: 'ops.mbox', type: 'email', title: 'Re: Cold room temperatures', status: 'ingested' })
  expect(files['stock.xlsx']).toMatchObject({ type: 'xlsx', status: 'ingested' })

  const search = async (query: string) => (await call('POST', '/rag/search', { token, body: { collection: 'formats', query, limit: 1 } })).json.results[0]
  expect(await search('invoice Nordic Heating due')).toMatchObject({ id: 'invoice.png', metadata: { type: 'image', page: 1, ocr: true } })
  const notes = await search('currency effect Swiss sales')
  expect(notes).toMatchObject({ id: 'review.pptx', metadata: { type: 'pptx', page: 1 } })
  expect(notes.metadata.ocr).toBeUndefined()
  expect(await search('compressor technician Thursday')).toMatchObject({ id: 'ops.mbox#cold-room-2@example.com', metadata: { type: 'email', fileName: 'ops.mbox' } })
  expect((await search('torque wrench quantity')).content).toContain('Item: Torque wrench\nQuantity: 4')

  const invoice = await call('GET', '/rag/collections/formats/documents/invoice.png', { token })
  expect(invoice.status).toBe(200)
  expect(invoice.json).toMatchObject({ type: 'image', pages: 1 })
  expect(invoice.json.ocr).toHaveLength(1)
  expect(invoice.json.ocr[0].page).toBe(1)
  expect(invoice.json.ocr[0].confidence).toBeGreaterThan(80)
  const reply = await call('GET', `/rag/collections/formats/documents/${encodeURIComponent('ops.mbox#cold-room-2@example.com')}`, { token })
  expect(reply.json.text).toContain('From: Ben Ode <ben@example.com>\nTo: ops@example.com')
  expect(reply.json.ocr).toBeUndefined()

  // The same mbox again: each message is unchanged.
  const again = await upload('formats', formOf([['ops.mbox', mailbox]]), token)
  expect(again.json).toMatchObject({ ingested: 0, unchanged: 2, failed: 0 })
  expect(again.json.removed).toBeUndefined()
  // A mailbox that no longer holds the first message: that message's document goes.
  const shorter = await upload('formats', formOf([['ops.mbox', makeMbox(MAILS.slice(1))]]), token)
  expect(shorter.json).toMatchObject({ ingested: 1, failed: 0, removed: ['ops.mbox#cold-room-1@example.com'] })
  const listed = await call('GET', '/rag/collections/formats/documents?prefix=ops.mbox', { token })
  expect(listed.json.documents.map((d: any) => d.id)).toEqual(['ops.mbox#cold-room-2@example.com'])
}

/**
 * The files without OCR are read while the request waits, however loaded the machine: the work
 * pool's niced worker can take over the default 2 s when other processes hold the cores, and this
 * test is about the formats, not about when an upload becomes a job (jobs.test.ts is).
 */
const SLOW_MACHINE = { UAGENT_INGEST_JOB_AFTER_MS: '60000' }

describe('uploads of images, slides, spreadsheets and mailboxes', () => {
  test('on SQLite', async () => {
    const server = makeServer({ env: SLOW_MACHINE })
    await scenario(clientOf((request) => server.app.handle(request)))
  }, 120_000)
})

describe.skipIf(!TEST_DATABASE_URL)(`uploads of images, slides, spreadsheets and mailboxes on PostgreSQL${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('on PostgreSQL', async () => {
    const options: AppOptions = { database: ':memory:', env: SLOW_MACHINE, log: () => {}, postgres: await freshPostgres(), adminEmail: ADMIN.email, adminPassword: ADMIN.password }
    const services = await startServices(options)
    started.push(services)
    const app = buildApp(services)
    await scenario(clientOf((request) => app.handle(request)))
  }, 120_000)
})
