import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Services } from '../../../src/app'
import { type WorkDone, workKind } from '../../../src/core/work-pool'
import { makeServer } from '../../helpers'
import { Renderer } from '../extract/files'
import { formOf, MARKDOWN, makePdf, pagesOf } from './files'

const BLOCK = workKind<{ ms: number }, number>('block', new URL('../../fixtures/work/block.work.ts', import.meta.url).href)
const dataDir = mkdtempSync(join(tmpdir(), 'uagent-kb-pool-'))
const renderer = new Renderer()
const made: Services[] = []
afterAll(async () => {
  for (const services of made) {
    services.ingestJobs.close()
    services.pool.close()
    services.agents.close()
    services.db.close()
  }
  await renderer.close()
  rmSync(dataDir, { recursive: true, force: true })
})

/** A server with one worker and no queue (a second task at once is 503 BUSY), its finished pool tasks noted. */
function poolServer(env: Record<string, string> = {}) {
  const server = makeServer({ dataDir, workers: 1, workQueue: 0, rateLimitMax: 100_000, env })
  made.push(server.services)
  const done: WorkDone[] = []
  server.services.pool.onDone((task) => done.push(task))
  return { server, done }
}

async function client(server: ReturnType<typeof makeServer>) {
  const { accessToken: token } = await server.login()
  const upload = async (collection: string, form: FormData, signal?: AbortSignal) => {
    const response = await server.app.handle(new Request(`http://localhost/rag/collections/${collection}/files`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form, signal }))
    return { status: response.status, headers: response.headers, json: (await response.json()) as any }
  }
  /** Polls the job until `done` holds (60 s at most: OCR on a busy machine); every state seen. */
  const until = async (id: string, done: (job: any) => boolean, seen: any[] = []) => {
    const deadline = Date.now() + 60_000
    for (;;) {
      const res = await server.call('GET', `/rag/jobs/${id}`, { token })
      expect(res.status).toBe(200)
      seen.push(res.json)
      if (done(res.json)) return res.json
      if (Date.now() > deadline) throw new Error(`job ${id} stayed ${JSON.stringify(res.json)}`)
      await Bun.sleep(20)
    }
  }
  return { token, upload, until }
}

const ended = (job: any) => ['completed', 'failed', 'cancelled'].includes(job.status)
const kinds = (done: WorkDone[]) => done.map((task) => `${task.kind}:${task.outcome}`)

describe('uploads and jobs read their files on the work pool', () => {
  test('a plain upload: each file extracted by a worker (a PDF looked into there too), a file that cannot be read says why; a busy pool answers 503 BUSY', async () => {
    const { server, done } = poolServer()
    const { upload, token } = await client(server)
    const pdf = await makePdf([['Router manual, chapter one.', 'Connect the WAN cable to the yellow port.']])
    const res = await upload('docs', formOf([['manual.pdf', pdf], ['broken.pdf', 'not a pdf at all'], ['notes.md', MARKDOWN]]))
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ ingested: 2, failed: 1 })
    expect(res.json.files[0]).toMatchObject({ name: 'manual.pdf', status: 'ingested', type: 'pdf', pages: 1 })
    expect(res.json.files[1]).toMatchObject({ name: 'broken.pdf', status: 'failed', reason: expect.stringMatching(/not a readable PDF/) })
    // The PDFs were looked into for OCR on the worker, then every file was read there: the
    // broken one's reason is an answer, not a failed task.
    expect(kinds(done)).toEqual(['ocr-check:ok', 'ocr-check:ok', 'extract:ok', 'extract:ok', 'extract:ok'])
    expect(server.services.pool.state()).toMatchObject({ started: 1, failed: 0, crashed: 0 })

    // With its one worker busy and no queue (UAGENT_WORK_QUEUE=0), the next upload is refused at
    // once: a PDF at its OCR check, a Markdown file at its extraction.
    const hold = new AbortController()
    const held = server.services.pool.run(BLOCK, { ms: 10_000 }, { signal: hold.signal }).catch(() => 'stopped')
    const refusedPdf = await upload('docs', formOf([['other.pdf', pdf]], { 'other.pdf': 'other' }))
    const refusedText = await upload('docs', formOf([['other.md', MARKDOWN]], { 'other.md': 'other-md' }))
    hold.abort()
    expect(await held).toBe('stopped')
    for (const refused of [refusedPdf, refusedText]) {
      expect(refused.status).toBe(503)
      expect(refused.json).toMatchObject({ error: true, code: 'BUSY' })
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    }
    // Nothing of them was stored, and the temporary files are gone.
    expect((await server.call('GET', '/rag/collections/docs/documents/manual.pdf', { token })).status).toBe(200)
    expect((await server.call('GET', '/rag/collections/docs/documents/other', { token })).status).toBe(404)
    expect((await server.call('GET', '/rag/collections/docs/documents/other-md', { token })).status).toBe(404)
    const tmp = join(dataDir, 'tmp')
    expect(existsSync(tmp) ? readdirSync(tmp) : []).toEqual([])
  })

  test('a job waits for a busy pool instead of failing BUSY, then its file is read by a worker', async () => {
    const { server, done } = poolServer({ UAGENT_INGEST_JOB_AFTER_MS: '0' })
    const { upload, until } = await client(server)
    const held = server.services.pool.run(BLOCK, { ms: 1500 })
    const res = await upload('docs', formOf([['notes.md', MARKDOWN]]))
    expect(res.status).toBe(202)
    const job = await until(res.json.jobId, ended)
    expect(await held).toBe(1500)
    expect(job).toMatchObject({ status: 'completed', files: [{ name: 'notes.md', status: 'ingested' }] })
    expect(kinds(done)).toEqual(['block:ok', 'extract:ok'])
  })

  test("a scan's OCR runs on a worker: its pages' progress comes from there while /health answers; a cancel stops the worker's task", async () => {
    const { server, done } = poolServer()
    const { upload, until, token } = await client(server)
    const scan = await renderer.scannedPdf(Array.from({ length: 3 }, (_, i) => [`Inspection page ${i + 1}: the turbine blade ${i + 1} shows no cracks.`]))
    const res = await upload('scans', formOf([['scan.pdf', scan]]))
    expect(res.status).toBe(202)
    const seen: any[] = []
    const job = await until(res.json.jobId, ended, seen)
    expect(job).toMatchObject({ status: 'completed', files: [{ name: 'scan.pdf', status: 'ingested', pages: 3, pagesDone: 3 }] })
    // Pages were reported one by one while the worker read them (not all at the end).
    const partial = seen.filter((state) => state.status === 'running' && state.files[0].pagesDone > 0 && state.files[0].pagesDone < 3)
    expect(partial.length).toBeGreaterThan(0)
    expect(kinds(done)).toEqual(['ocr-check:ok', 'extract:ok'])
    const page = await server.call('POST', '/rag/search', { token, body: { collection: 'scans', query: 'turbine blade 2 cracks', limit: 1 } })
    expect(page.json.results[0]).toMatchObject({ id: 'scan.pdf', metadata: { page: 2, ocr: true } })

    // A longer scan, cancelled once its first page is read: the worker's task stops there (its
    // worker, and the OCR model in it, stay), the job ends cancelled and reads no further page.
    const long = await renderer.scannedPdf(Array.from({ length: 8 }, (_, i) => [`Annex ${i + 1}: pressure readings of valve ${i + 1} are normal.`]))
    const second = await upload('scans', formOf([['long.pdf', long]]))
    expect(second.status).toBe(202)
    await until(second.json.jobId, (state) => state.files[0].pagesDone >= 1 || ended(state))
    // The request thread stays free while the worker reads.
    expect((await server.call('GET', '/health')).status).toBe(200)
    expect(server.services.pool.state()).toMatchObject({ busy: 1 })
    const cancelled = await server.call('DELETE', `/rag/jobs/${second.json.jobId}`, { token })
    expect(cancelled.status).toBe(200)
    const deadline = Date.now() + 10_000
    while (!done.some((task) => task.outcome === 'cancelled') && Date.now() < deadline) await Bun.sleep(20)
    expect(kinds(done).slice(2)).toEqual(['ocr-check:ok', 'extract:cancelled'])
    expect(server.services.pool.state()).toMatchObject({ busy: 0, started: 1, cancelled: 1, crashed: 0 })
    const after = (await server.call('GET', `/rag/jobs/${second.json.jobId}`, { token })).json
    expect(after.status).toBe('cancelled')
    expect(after.files[0].pagesDone).toBeLessThan(8)
    expect((await server.call('GET', '/rag/collections/scans/documents/long.pdf', { token })).status).toBe(404)
    // The same worker reads the next file.
    const next = await upload('scans', formOf([['notes.md', MARKDOWN]]))
    expect(next.json).toMatchObject({ ingested: 1 })
    expect(server.services.pool.state()).toMatchObject({ started: 1, crashed: 0 })
  }, 120_000)

  test('a worker that dies while reading a file fails that file only: the job goes on with the next on a new worker', async () => {
    const { server, done } = poolServer({ UAGENT_INGEST_JOB_AFTER_MS: '0' })
    const { upload, until } = await client(server)
    const scan = await renderer.scannedPdf(Array.from({ length: 4 }, (_, i) => [`Log ${i + 1}: the boiler pressure held at two bar.`]))
    const res = await upload('crash', formOf([['scan.pdf', scan], ['notes.md', MARKDOWN]]))
    expect(res.status).toBe(202)
    await until(res.json.jobId, (state) => state.files[0].pagesDone >= 1 || ended(state))
    // The thread dies under its task, as an out-of-memory or a native crash would end it.
    const pool = server.services.pool as unknown as { slots: { worker: Worker }[] }
    pool.slots[0]!.worker.terminate()
    const job = await until(res.json.jobId, ended)
    expect(job.status).toBe('completed')
    expect(job.files[0]).toMatchObject({ name: 'scan.pdf', status: 'failed', reason: expect.stringMatching(/worker reading the file stopped/) })
    expect(job.files[1]).toMatchObject({ name: 'notes.md', status: 'ingested' })
    expect(kinds(done)).toEqual(['extract:crashed', 'extract:ok'])
    expect(server.services.pool.state()).toMatchObject({ started: 1, crashed: 1 })
  }, 120_000)

  test("a client that goes away during its upload stops the worker's task: nothing is stored", async () => {
    const { server, done } = poolServer({ UAGENT_INGEST_JOB_AFTER_MS: '60000' })
    const { upload, token } = await client(server)
    const big = await makePdf(pagesOf(900, 'Turbine'))
    const gone = new AbortController()
    const answer = upload('big', formOf([['big.pdf', big]]), gone.signal).catch((error) => error)
    const deadline = Date.now() + 20_000
    while (!(done.some((task) => task.kind === 'ocr-check') && server.services.pool.state().busy === 1) && Date.now() < deadline) await Bun.sleep(2)
    expect(server.services.pool.state().busy).toBe(1)
    gone.abort()
    await answer
    while (!done.some((task) => task.kind === 'extract') && Date.now() < deadline) await Bun.sleep(10)
    expect(kinds(done)).toEqual(['ocr-check:ok', 'extract:cancelled'])
    expect((await server.call('GET', '/rag/collections/big/documents/big.pdf', { token })).status).toBe(404)
  }, 60_000)
})
