import { afterAll, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { workKind } from '../../../src/core/work-pool'
import { makeServer } from '../../helpers'
import { formOf, makeImageOnlyPdf, makePdf } from './files'

const BLOCK = workKind<{ ms: number }, number>('block', new URL('../../fixtures/work/block.work.ts', import.meta.url).href)
const dataDir = mkdtempSync(join(tmpdir(), 'uagent-kb-pool-'))
const server = makeServer({ dataDir, workers: 1, workQueue: 0 })
afterAll(() => {
  server.services.pool.close()
  rmSync(dataDir, { recursive: true, force: true })
})

const upload = async (token: string, form: FormData) => {
  const response = await server.app.handle(new Request('http://localhost/rag/collections/docs/files', { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form }))
  return { status: response.status, headers: response.headers, json: (await response.json()) as any }
}

test('uploaded files are extracted on the work pool, a file that cannot be read still says why, and a busy pool answers 503 BUSY', async () => {
  const { accessToken } = await server.login()
  const pdf = await makePdf([['Router manual, chapter one.', 'Connect the WAN cable to the yellow port.']])
  const res = await upload(accessToken, formOf([['manual.pdf', pdf], ['scan.pdf', await makeImageOnlyPdf()]]))
  expect(res.status).toBe(200)
  expect(res.json).toMatchObject({ ingested: 1, failed: 1 })
  expect(res.json.files[0]).toMatchObject({ name: 'manual.pdf', status: 'ingested', type: 'pdf', pages: 1 })
  expect(res.json.files[1].reason).toMatch(/no text/i)
  // Both files went through a worker: one answered text, the other its reason (a value, not a failure).
  expect(server.services.pool.state()).toMatchObject({ started: 1, completed: 2, failed: 0 })

  // With its one worker busy and no queue (UAGENT_WORK_QUEUE=0), the next upload is refused at once.
  const hold = new AbortController()
  const held = server.services.pool.run(BLOCK, { ms: 10_000 }, { signal: hold.signal }).catch(() => 'stopped')
  const refused = await upload(accessToken, formOf([['other.pdf', pdf]], { 'other.pdf': 'other' }))
  hold.abort()
  expect(await held).toBe('stopped')
  expect(refused.status).toBe(503)
  expect(refused.json).toMatchObject({ error: true, code: 'BUSY' })
  expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
  // Nothing of it was stored, and its temporary files are gone.
  expect((await server.call('GET', '/rag/collections/docs/documents/manual.pdf', { token: accessToken })).status).toBe(200)
  expect((await server.call('GET', '/rag/collections/docs/documents/other', { token: accessToken })).status).toBe(404)
  const tmp = join(dataDir, 'tmp')
  expect(existsSync(tmp) ? readdirSync(tmp) : []).toEqual([])
})
