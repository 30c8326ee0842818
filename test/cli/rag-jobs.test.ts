import { describe, expect, test } from 'bun:test'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { makeServer } from '../helpers'
import { tempDir } from '../temp'
import { liveServer } from './live-server'
import { makePdf, pagesOf } from '../modules/kb/files'
import { slowExtractor } from '../modules/kb/slow-extractor'

const root = tempDir('cli-jobs')
// Every upload is a job here, and each page takes 25 ms to read: long enough to watch.
const server = makeServer({ dataDir: join(root, 'data'), rateLimitMax: 100_000, env: { UAGENT_INGEST_JOB_AFTER_MS: '0' } }, (services) => {
  services.ingestJobs.extract = slowExtractor(25).extract
})
const live = liveServer(server.app, { login: true })
const { run } = live

describe('uagent rag ingest / sync / jobs with ingestion jobs', () => {
  test('rag ingest waits for the job with a progress bar (one line per step off a terminal) and reports the outcome', async () => {
    const file = join(root, 'turbine.pdf')
    writeFileSync(file, await makePdf(pagesOf(24, 'Turbine')))
    const result = await run(['rag', 'ingest', 'manuals', file])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('1 of 1 documents ingested into manuals')
    const lines = result.stderr.split('\n').filter((line) => line.startsWith('turbine.pdf (job '))
    // Several steps, in order, ending with the job completed and every page read.
    expect(lines.length).toBeGreaterThanOrEqual(3)
    expect(lines.some((line) => /running [1-9]\d?% \(0\/1 files, \d+\/24 pages\)/.test(line))).toBe(true)
    expect(lines.at(-1)).toMatch(/completed 100% \(1\/1 files, 24\/24 pages\)$/)
    const documents = await live.api('GET', '/rag/collections/manuals/documents')
    expect(documents.documents.map((d: any) => d.id)).toEqual(['turbine.pdf'])
  })

  test('--no-wait prints the job ids; rag jobs lists them, jobs show --wait follows one, jobs --watch ends when all have', async () => {
    const file = join(root, 'blades.pdf')
    writeFileSync(file, await makePdf(pagesOf(12, 'Blades')))
    const queued = await run(['--json', 'rag', 'ingest', 'blades', file, '--no-wait'])
    expect(queued.code).toBe(0)
    const body = JSON.parse(queued.stdout)
    expect(body.jobs).toEqual([{ id: 'blades.pdf', jobId: expect.any(String) }])
    const jobId = body.jobs[0].jobId as string

    const human = await run(['rag', 'ingest', 'blades', file, '--no-wait'])
    expect(human.code).toBe(0)
    expect(human.stdout).toMatch(/1 left to ingestion jobs/)
    const second = /\n {2}([0-9a-f-]{36}) {2}blades\.pdf/.exec(human.stdout)![1]!

    const listed = await run(['--json', 'rag', 'jobs'])
    expect(listed.code).toBe(0)
    expect(JSON.parse(listed.stdout).jobs.map((job: any) => job.id)).toEqual(expect.arrayContaining([jobId, second]))

    const shown = await run(['--json', 'rag', 'jobs', 'show', jobId, '--wait'])
    expect(shown.code).toBe(0)
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: jobId, status: 'completed', progress: 100, files: [{ name: 'blades.pdf', status: 'ingested', pages: 12, pagesDone: 12 }] })

    const watched = await run(['rag', 'jobs', '--watch'])
    expect(watched.code).toBe(0)
    expect(watched.stdout).toContain(second)
    const last = watched.stdout.trim().split('\n\n').at(-1)!
    expect(last).not.toMatch(/queued|running/)
    expect(last).toContain('completed')
  })

  test('rag jobs cancel stops a job; a second cancel exits 1 with CONFLICT; an unknown id is NOT_FOUND', async () => {
    const file = join(root, 'long.pdf')
    writeFileSync(file, await makePdf(pagesOf(200, 'Long')))
    const queued = JSON.parse((await run(['--json', 'rag', 'ingest', 'long', file, '--no-wait'])).stdout)
    const jobId = queued.jobs[0].jobId as string
    const cancelled = await run(['rag', 'jobs', 'cancel', jobId])
    expect(cancelled.code).toBe(0)
    expect(cancelled.stdout).toContain(`Job ${jobId} cancelled.`)
    expect((await live.api('GET', `/rag/jobs/${jobId}`)).status).toBe('cancelled')
    const again = await run(['rag', 'jobs', 'cancel', jobId])
    expect(again.code).toBe(1)
    expect(again.stderr).toContain('CONFLICT')
    const unknown = await run(['rag', 'jobs', 'show', 'no-such-job'])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain('NOT_FOUND')
  })

  test('rag sync waits for its jobs (added once done), or with --no-wait lists them', async () => {
    const dir = join(root, 'folder')
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, 'a.pdf'), await makePdf(pagesOf(6, 'A')))
    writeFileSync(join(dir, 'b.md'), '# B\n\nThe bearing is greased monthly.\n')
    const waited = await run(['--json', 'rag', 'sync', 'synced', dir])
    expect(waited.code).toBe(0)
    expect(JSON.parse(waited.stdout)).toMatchObject({ added: ['a.pdf', 'b.md'], failed: [] })
    writeFileSync(join(dir, 'c.pdf'), await makePdf(pagesOf(6, 'C')))
    const queued = await run(['--json', 'rag', 'sync', 'synced', dir, '--no-wait'])
    expect(queued.code).toBe(0)
    const summary = JSON.parse(queued.stdout)
    expect(summary).toMatchObject({ added: [], unchanged: 2, jobs: [{ id: 'c.pdf', jobId: expect.any(String) }] })
  })
})
