import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Services } from '../../../src/app'
import { makeServer } from '../../helpers'
import { freshPostgres, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../../postgres'
import { formOf, MARKDOWN, makeImageOnlyPdf, makePdf, pagesOf } from './files'
import { slowExtractor } from './slow-extractor'
import { makeMbox } from '../extract/files'

const dataDir = mkdtempSync(join(tmpdir(), 'uagent-jobs-'))
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

type Server = ReturnType<typeof makeServer>

/** A server whose rate limit leaves room for polling a job every 20 ms. */
const jobServer = (options: Parameters<typeof makeServer>[0], customize?: Parameters<typeof makeServer>[1]) => makeServer({ rateLimitMax: 100_000, ...options }, customize)

async function session(server: Server) {
  const { accessToken: token } = await server.login()
  const upload = async (collection: string, form: FormData, as = token) => {
    const response = await server.app.handle(
      new Request(`http://localhost/rag/collections/${collection}/files`, { method: 'POST', headers: { authorization: `Bearer ${as}` }, body: form }),
    )
    return { status: response.status, json: (await response.json()) as any }
  }
  const job = async (id: string, as = token) => server.call('GET', `/rag/jobs/${id}`, { token: as })
  /** Polls the job until `done` holds (45 s at most: OCR on a busy machine); every state seen. */
  const until = async (id: string, done: (job: any) => boolean, seen: any[] = []) => {
    const deadline = Date.now() + 45_000
    for (;;) {
      const res = await job(id)
      expect(res.status).toBe(200)
      seen.push(res.json)
      if (done(res.json)) return res.json
      if (Date.now() > deadline) throw new Error(`job ${id} stayed ${JSON.stringify(res.json)}`)
      await Bun.sleep(20)
    }
  }
  return { token, upload, job, until }
}

const ended = (job: any) => ['completed', 'failed', 'cancelled'].includes(job.status)

function close(services: Services) {
  services.ingestJobs.close()
  services.agents.close()
  services.db.close()
}

describe('ingestion jobs', () => {
  test('UAGENT_INGEST_JOB_AFTER_MS=0: every upload is a job (202 queued), which completes; its files are ingested and their bytes dropped', async () => {
    const server = jobServer({ env: { UAGENT_INGEST_JOB_AFTER_MS: '0' } })
    const { upload, until, token } = await session(server)
    const res = await upload('manuals', formOf([['turbine.pdf', await makePdf(pagesOf(3, 'Turbine'))], ['notes.md', MARKDOWN]]))
    expect(res.status).toBe(202)
    expect(res.json).toEqual({ jobId: expect.any(String), status: 'queued' })
    const job = await until(res.json.jobId, ended)
    expect(job).toMatchObject({ id: res.json.jobId, collection: 'manuals', status: 'completed', progress: 100, createdAt: expect.any(String), finishedAt: expect.any(String) })
    expect(job.files).toEqual([
      expect.objectContaining({ name: 'turbine.pdf', id: 'turbine.pdf', status: 'ingested', type: 'pdf', pages: 3, pagesDone: 3, chunks: expect.any(Number) }),
      expect.objectContaining({ name: 'notes.md', id: 'notes.md', status: 'ingested', type: 'markdown' }),
    ])
    const documents = await server.call('GET', '/rag/collections/manuals/documents', { token })
    expect(documents.json.documents.map((d: any) => d.id).sort()).toEqual(['notes.md', 'turbine.pdf'])
    const search = await server.call('POST', '/rag/search', { token, body: { collection: 'manuals', query: 'turbine blade inspection', limit: 3 } })
    expect(search.json.results[0].id).toBe('turbine.pdf')
    // The uploaded bytes are kept only while the job runs.
    const kept = server.services.db.query<{ n: number }, []>('SELECT count(*) AS n FROM ingest_job_files WHERE data IS NOT NULL').get()!.n
    expect(kept).toBe(0)
    const list = await server.call('GET', '/rag/jobs', { token })
    expect(list.status).toBe(200)
    expect(list.json).toMatchObject({ total: 1, limit: 20, offset: 0 })
    expect(list.json.jobs[0].id).toBe(res.json.jobId)
  })

  test('a mailbox in a job: its messages are stored as <file id>#<Message-ID>; uploaded again without one, the document of that message goes', async () => {
    const server = jobServer({ env: { UAGENT_INGEST_JOB_AFTER_MS: '0' } })
    const { upload, until, token } = await session(server)
    const mail = (n: number) => ({ from: 'ana@example.com', to: 'ops@example.com', subject: `Shift ${n}`, date: 'Tue, 03 Mar 2026 09:15:00 +0000', messageId: `<shift-${n}@example.com>`, body: `Shift ${n} notes: the boiler pressure was fine.` })
    const ids = async () => (await server.call('GET', '/rag/collections/mail/documents', { token })).json.documents.map((d: any) => d.id)
    // The same bytes each time (makeMbox writes the time into each message's From line).
    const mailbox = makeMbox([mail(1), mail(2)])
    const first = await upload('mail', formOf([['ops.mbox', mailbox]]))
    expect(first.status).toBe(202)
    expect((await until(first.json.jobId, ended)).files).toEqual([expect.objectContaining({ name: 'ops.mbox', id: 'ops.mbox', status: 'ingested', type: 'email' })])
    expect(await ids()).toEqual(['ops.mbox#shift-1@example.com', 'ops.mbox#shift-2@example.com'])
    const again = await upload('mail', formOf([['ops.mbox', mailbox]]))
    expect((await until(again.json.jobId, ended)).files[0]).toMatchObject({ status: 'unchanged' })
    const shorter = await upload('mail', formOf([['ops.mbox', makeMbox([mail(2)])]]))
    expect((await until(shorter.json.jobId, ended)).files[0]).toMatchObject({ status: 'ingested' })
    expect(await ids()).toEqual(['ops.mbox#shift-2@example.com'])
  })

  test('a quick upload is still answered 200 at once; one still reading after the threshold is 202 and shows its pages as they are read', async () => {
    const slow = slowExtractor(40)
    const server = jobServer({ env: { UAGENT_INGEST_JOB_AFTER_MS: '300' } }, (services) => (services.ingestJobs.extract = slow.extract))
    const { upload, until } = await session(server)
    const quick = await upload('docs', formOf([['notes.md', MARKDOWN]]))
    expect(quick.status).toBe(200)
    expect(quick.json).toMatchObject({ success: true, ingested: 1 })

    const res = await upload('docs', formOf([['long.pdf', await makePdf(pagesOf(30, 'Long'))]]))
    expect(res.status).toBe(202)
    expect(res.json.status).toBe('running')
    const seen: any[] = []
    const job = await until(res.json.jobId, ended, seen)
    expect(job).toMatchObject({ status: 'completed', progress: 100 })
    expect(job.files[0]).toMatchObject({ status: 'ingested', pages: 30, pagesDone: 30 })
    // While it ran: pages read part way, and progress between 0 and 100, never going back.
    const partway = seen.filter((j) => j.status === 'running' && j.files[0].pagesDone > 0 && j.files[0].pagesDone < 30)
    expect(partway.length).toBeGreaterThan(0)
    expect(partway.some((j) => j.progress > 0 && j.progress < 100)).toBe(true)
    const progress = seen.map((j) => j.progress)
    expect(progress).toEqual([...progress].sort((a, b) => a - b))
  })

  test('an upload that needs OCR (an image, a PDF page without a text layer) is a job at once, whatever the threshold; unreadable files fail with reasons', async () => {
    const server = jobServer({ env: { UAGENT_INGEST_JOB_AFTER_MS: '600000' } })
    const { upload, until } = await session(server)
    const res = await upload('scans', formOf([['scan.pdf', await makeImageOnlyPdf()], ['photo.png', new Uint8Array([0x89, 0x50, 0x4e, 0x47])], ['notes.md', MARKDOWN]]))
    expect(res.status).toBe(202)
    expect(res.json.status).toBe('queued')
    const job = await until(res.json.jobId, ended)
    expect(job).toMatchObject({ status: 'completed', progress: 100 })
    expect(job.files.map((f: any) => f.name)).toEqual(['scan.pdf', 'photo.png', 'notes.md'])
    // The drawing has no words for OCR to find: the page was read, and the file says why it failed.
    expect(job.files[0]).toMatchObject({ status: 'failed', pages: 1, pagesDone: 1, reason: expect.stringContaining('no text layer') })
    expect(job.files[1]).toMatchObject({ status: 'failed', reason: expect.stringContaining('not a readable image') })
    expect(job.files[2]).toMatchObject({ status: 'ingested', type: 'markdown' })
  }, 60_000)

  test('cancel: the work stops (later files are never read), files not done are cancelled; a second cancel is 409', async () => {
    const slow = slowExtractor(30)
    const server = jobServer({ env: { UAGENT_INGEST_JOB_AFTER_MS: '0' } }, (services) => (services.ingestJobs.extract = slow.extract))
    const { upload, until, token } = await session(server)
    const files = await Promise.all([1, 2, 3].map(async (n) => [`part${n}.pdf`, await makePdf(pagesOf(60, `Part ${n}`))] as [string, Uint8Array]))
    const res = await upload('docs', formOf(files))
    expect(res.status).toBe(202)
    await until(res.json.jobId, (job) => job.files[0].pagesDone >= 2)
    const cancelled = await server.call('DELETE', `/rag/jobs/${res.json.jobId}`, { token })
    expect(cancelled.status).toBe(200)
    expect(cancelled.json).toMatchObject({ status: 'cancelled', finishedAt: expect.any(String) })
    expect(cancelled.json.files.map((f: any) => f.status)).toEqual(['cancelled', 'cancelled', 'cancelled'])
    await Bun.sleep(400)
    expect(slow.seen).toEqual(['part1.pdf'])
    const after = await server.call('GET', `/rag/jobs/${res.json.jobId}`, { token })
    expect(after.json.status).toBe('cancelled')
    const documents = await server.call('GET', '/rag/collections/docs/documents', { token })
    expect(documents.status === 404 || documents.json.documents.length === 0).toBe(true)
    const again = await server.call('DELETE', `/rag/jobs/${res.json.jobId}`, { token })
    expect(again.status).toBe(409)
    expect(again.json).toMatchObject({ error: true, code: 'CONFLICT' })
  })

  test("another user's job is 404 (get and cancel) and not listed; bad queries are 400 naming the field", async () => {
    const server = jobServer({ env: { UAGENT_INGEST_JOB_AFTER_MS: '0', UAGENT_INGEST_JOBS: '0' } })
    const { upload, token } = await session(server)
    const res = await upload('docs', formOf([['notes.md', MARKDOWN]]))
    expect(res.status).toBe(202)
    const other = await server.userSession('other@example.com')
    expect((await server.call('GET', `/rag/jobs/${res.json.jobId}`, { token: other.accessToken })).status).toBe(404)
    const cancel = await server.call('DELETE', `/rag/jobs/${res.json.jobId}`, { token: other.accessToken })
    expect(cancel.status).toBe(404)
    expect(cancel.json.code).toBe('NOT_FOUND')
    expect((await server.call('GET', '/rag/jobs', { token: other.accessToken })).json).toMatchObject({ jobs: [], total: 0 })
    // Still queued for its owner (this server runs no jobs), and cancellable by them.
    expect((await server.call('GET', `/rag/jobs/${res.json.jobId}`, { token })).json.status).toBe('queued')
    expect((await server.call('GET', '/rag/jobs?status=queued', { token })).json.total).toBe(1)
    expect((await server.call('GET', '/rag/jobs?status=completed', { token })).json.total).toBe(0)
    for (const query of ['limit=0', 'limit=101', 'offset=-1', 'status=done']) {
      const bad = await server.call('GET', `/rag/jobs?${query}`, { token })
      expect(bad.status).toBe(400)
      expect(bad.json.code).toBe('VALIDATION_ERROR')
      expect(bad.json.message).toContain(query.split('=')[0])
    }
    expect((await server.call('GET', '/rag/jobs/nope', { token })).status).toBe(404)
    expect((await server.call('GET', `/rag/jobs/${res.json.jobId}`)).status).toBe(401)
    expect((await server.call('DELETE', `/rag/jobs/${res.json.jobId}`, { token })).json.status).toBe('cancelled')
  })

  test('restart (SQLite file): a queued job and one left running are picked up and completed by the next server', async () => {
    const dir = mkdtempSync(join(dataDir, 'restart-'))
    const database = join(dir, 'uagent.db')
    const first = jobServer({ database, dataDir: dir, env: { UAGENT_INGEST_JOB_AFTER_MS: '0', UAGENT_INGEST_JOBS: '0' } })
    const one = await session(first)
    const queued = await one.upload('docs', formOf([['queued.pdf', await makePdf(pagesOf(2, 'Queued'))]]))
    const left = await one.upload('docs', formOf([['left.md', MARKDOWN]]))
    expect([queued.status, left.status]).toEqual([202, 202])
    // As a server killed while reading it would leave it.
    first.services.db.run("UPDATE ingest_jobs SET status = 'running', owner = 'gone', heartbeat_at = ? WHERE id = ?", [new Date().toISOString(), left.json.jobId])
    first.services.db.run("UPDATE ingest_job_files SET status = 'running' WHERE job_id = ?", [left.json.jobId])
    close(first.services)

    const second = jobServer({ database, dataDir: dir })
    const two = await session(second)
    for (const id of [queued.json.jobId, left.json.jobId]) expect(await two.until(id, ended)).toMatchObject({ status: 'completed', progress: 100 })
    expect((await two.job(queued.json.jobId)).json.files[0]).toMatchObject({ status: 'ingested', pages: 2 })
    const documents = await second.call('GET', '/rag/collections/docs/documents', { token: two.token })
    expect(documents.json.documents.map((d: any) => d.id).sort()).toEqual(['left.md', 'queued.pdf'])
    close(second.services)
  })

  test('a server that stops hands its running job back (files not done queued again, bytes kept); the next one finishes it', async () => {
    const dir = mkdtempSync(join(dataDir, 'handback-'))
    const database = join(dir, 'uagent.db')
    const slow = slowExtractor(40)
    const first = jobServer({ database, dataDir: dir, env: { UAGENT_INGEST_JOB_AFTER_MS: '0' } }, (services) => (services.ingestJobs.extract = slow.extract))
    const one = await session(first)
    const res = await one.upload('docs', formOf([['notes.md', MARKDOWN], ['long.pdf', await makePdf(pagesOf(100, 'Long'))]]))
    await one.until(res.json.jobId, (job) => job.files[1].pagesDone >= 2)
    await first.services.ingestJobs.handBack()
    const row = first.services.db.query<{ status: string; owner: string | null }, [string]>('SELECT status, owner FROM ingest_jobs WHERE id = ?').get(res.json.jobId)
    expect(row).toEqual({ status: 'queued', owner: null })
    const files = first.services.db.query<{ status: string; kept: number | null }, [string]>('SELECT status, length(data) AS kept FROM ingest_job_files WHERE job_id = ? ORDER BY position').all(res.json.jobId)
    expect(files).toEqual([{ status: 'ingested', kept: null }, { status: 'queued', kept: expect.any(Number) }])
    const readBefore = slow.read.pages
    close(first.services)

    const second = jobServer({ database, dataDir: dir })
    const two = await session(second)
    const job = await two.until(res.json.jobId, ended)
    expect(job).toMatchObject({ status: 'completed', files: [expect.objectContaining({ status: 'ingested' }), expect.objectContaining({ status: 'ingested', pages: 100, pagesDone: 100 })] })
    // The first server stopped reading when it handed the job back.
    expect(slow.read.pages).toBe(readBefore)
    close(second.services)
  })

  test('WebSocket: an authenticated socket gets ingest_job events for its user’s jobs, up to the end; another user’s socket gets none', async () => {
    const server = jobServer({ env: { UAGENT_INGEST_JOB_AFTER_MS: '0' } }, (services) => (services.ingestJobs.extract = slowExtractor(20).extract))
    const { upload, token } = await session(server)
    const other = await server.userSession('watcher@example.com')
    const listening = server.app.listen({ port: 0, hostname: '127.0.0.1' })
    const sockets: WebSocket[] = []
    try {
      const open = async (as: string) => {
        const ws = new WebSocket(`ws://127.0.0.1:${listening.server!.port}/ws`)
        sockets.push(ws)
        const messages: any[] = []
        ws.onmessage = (event) => messages.push(JSON.parse(String(event.data)))
        await new Promise((resolve, reject) => {
          ws.onopen = resolve
          ws.onerror = reject
        })
        ws.send(JSON.stringify({ type: 'auth', token: as }))
        const deadline = Date.now() + 5000
        while (!messages.some((m) => m.type === 'auth_success')) {
          if (Date.now() > deadline) throw new Error('no auth_success')
          await Bun.sleep(10)
        }
        return messages
      }
      const mine = await open(token)
      const theirs = await open(other.accessToken)
      const res = await upload('docs', formOf([['long.pdf', await makePdf(pagesOf(10, 'Socket'))]]))
      expect(res.status).toBe(202)
      const deadline = Date.now() + 10_000
      while (!mine.some((m) => m.type === 'ingest_job' && m.data.status === 'completed')) {
        if (Date.now() > deadline) throw new Error(`no completed event: ${JSON.stringify(mine.slice(-3))}`)
        await Bun.sleep(20)
      }
      const events = mine.filter((m) => m.type === 'ingest_job').map((m) => m.data)
      expect(events.every((job) => job.id === res.json.jobId)).toBe(true)
      expect(events[0].status).toBe('queued')
      expect(events.some((job) => job.status === 'running' && job.files[0].pagesDone > 0 && job.files[0].pagesDone < 10)).toBe(true)
      expect(events.at(-1)).toMatchObject({ status: 'completed', progress: 100, files: [expect.objectContaining({ status: 'ingested', pagesDone: 10 })] })
      expect(theirs.filter((m) => m.type === 'ingest_job')).toEqual([])
    } finally {
      for (const ws of sockets) ws.close()
      listening.stop(true)
    }
  })
})

describe.skipIf(!TEST_DATABASE_URL)(`ingestion jobs on PostgreSQL${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('a job queued by one server runs on the next (or another replica); a running job whose server stopped beating is taken over', async () => {
    const sql = await freshPostgres()
    const first = jobServer({ postgres: sql, env: { UAGENT_INGEST_JOB_AFTER_MS: '0', UAGENT_INGEST_JOBS: '0' } })
    const one = await session(first)
    const queued = await one.upload('docs', formOf([['queued.pdf', await makePdf(pagesOf(2, 'Queued'))]]))
    const left = await one.upload('docs', formOf([['left.md', MARKDOWN]]))
    expect([queued.status, left.status]).toEqual([202, 202])
    const [row] = await sql`SELECT j.status, octet_length(f.data) AS kept FROM ingest_jobs j JOIN ingest_job_files f ON f.job_id = j.id WHERE j.id = ${queued.json.jobId}`
    expect(row).toMatchObject({ status: 'queued' })
    expect(Number(row.kept)).toBeGreaterThan(0)
    await sql`UPDATE ingest_jobs SET status = 'running', owner = 'gone', heartbeat_at = now() - interval '1 hour' WHERE id = ${left.json.jobId}`
    close(first.services)

    const second = jobServer({ postgres: sql })
    const two = await session(second)
    for (const id of [queued.json.jobId, left.json.jobId]) expect(await two.until(id, ended)).toMatchObject({ status: 'completed', progress: 100 })
    const documents = await second.call('GET', '/rag/collections/docs/documents', { token: two.token })
    expect(documents.json.documents.map((d: any) => d.id).sort()).toEqual(['left.md', 'queued.pdf'])
    const [dropped] = await sql`SELECT count(*) AS n FROM ingest_job_files WHERE data IS NOT NULL`
    expect(Number(dropped.n)).toBe(0)
    second.services.ingestJobs.close()
    second.services.agents.close()
  })

  test('two replicas on one database: a job queued on one runs on the other; a cancel on the first stops the work on the second', async () => {
    const sql = await freshPostgres()
    // No Redis: the second replica finds the jobs by its poll, and the cancel by its heartbeat.
    const queuing = jobServer({ postgres: sql, instanceId: 'replica-a', env: { UAGENT_INGEST_JOB_AFTER_MS: '0', UAGENT_INGEST_JOBS: '0' } })
    const slow = slowExtractor(40)
    const running = jobServer({ postgres: sql, instanceId: 'replica-b' }, (services) => (services.ingestJobs.extract = slow.extract))
    try {
      const a = await session(queuing)
      const quick = await a.upload('docs', formOf([['notes.md', MARKDOWN]]))
      expect(quick.status).toBe(202)
      expect(await a.until(quick.json.jobId, ended)).toMatchObject({ status: 'completed', files: [expect.objectContaining({ status: 'ingested' })] })
      const [owner] = await sql`SELECT started_at FROM ingest_jobs WHERE id = ${quick.json.jobId}`
      expect(owner.started_at).toBeTruthy()

      const long = await a.upload('docs', formOf([['long.pdf', await makePdf(pagesOf(400, 'Long'))]]))
      await a.until(long.json.jobId, (job) => job.files[0].pagesDone >= 2)
      const cancelled = await queuing.call('DELETE', `/rag/jobs/${long.json.jobId}`, { token: a.token })
      expect(cancelled.json.status).toBe('cancelled')
      // The second replica stops reading within a heartbeat (5 s), long before the 400 pages are read.
      await Bun.sleep(6500)
      const after = slow.read.pages
      await Bun.sleep(500)
      expect(slow.read.pages).toBe(after)
      expect(after).toBeLessThan(300)
      expect(running.services.ingestJobs.active).toBe(0)
    } finally {
      for (const server of [queuing, running]) {
        server.services.ingestJobs.close()
        server.services.agents.close()
      }
    }
  }, 60_000)

  test('cancel and another user 404 on PostgreSQL', async () => {
    const sql = await freshPostgres()
    const server = jobServer({ postgres: sql, env: { UAGENT_INGEST_JOB_AFTER_MS: '0' } }, (services) => (services.ingestJobs.extract = slowExtractor(30).extract))
    const { upload, until, token } = await session(server)
    const other = await server.userSession('other@example.com')
    const res = await upload('docs', formOf([['a.pdf', await makePdf(pagesOf(60, 'A'))], ['b.pdf', await makePdf(pagesOf(5, 'B'))]]))
    expect(res.status).toBe(202)
    await until(res.json.jobId, (job) => job.files[0].pagesDone >= 1)
    expect((await server.call('DELETE', `/rag/jobs/${res.json.jobId}`, { token: other.accessToken })).status).toBe(404)
    const cancelled = await server.call('DELETE', `/rag/jobs/${res.json.jobId}`, { token })
    expect(cancelled.json).toMatchObject({ status: 'cancelled', files: [expect.objectContaining({ status: 'cancelled' }), expect.objectContaining({ status: 'cancelled' })] })
    await Bun.sleep(300)
    expect((await server.call('GET', `/rag/jobs/${res.json.jobId}`, { token })).json.status).toBe('cancelled')
    server.services.ingestJobs.close()
    server.services.agents.close()
  })
})
