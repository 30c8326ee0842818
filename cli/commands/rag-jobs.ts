import type { Command } from 'commander'
import { ApiClient } from '../client'
import { dim, emit, example, globals, jobProgressBar, keyValues, table } from '../output'
import { integer } from '../parse'

/** An ingestion job as GET /rag/jobs/{id} answers it. */
export interface Job {
  id: string
  collection: string
  status: 'queued' | 'running' | 'completed' | 'failed' | 'cancelled'
  progress: number
  files: { name: string; id: string; status: string; bytes: number; pages?: number; pagesDone?: number; chunks?: number; reason?: string }[]
  error?: string
  createdAt: string
  startedAt?: string
  finishedAt?: string
}

const ENDED = ['completed', 'failed', 'cancelled']
const POLL_MS = 300

/** Follows a job with a progress bar until it ends; returns it as it ended. */
export async function waitForJob(client: ApiClient, jobId: string, label = `Job ${jobId.slice(0, 8)}`): Promise<Job> {
  const bar = jobProgressBar(label)
  try {
    for (;;) {
      const job = await client.json<Job>('GET', `/rag/jobs/${encodeURIComponent(jobId)}`)
      bar.update(job)
      if (ENDED.includes(job.status)) return job
      await Bun.sleep(POLL_MS)
    }
  } finally {
    bar.done()
  }
}

const summary = (job: Job) => {
  const pages = job.files.reduce((sum, file) => sum + (file.pages ?? 0), 0)
  const pagesDone = job.files.reduce((sum, file) => sum + (file.pagesDone ?? 0), 0)
  return pages ? `${pagesDone}/${pages}` : '-'
}

function jobsTable(jobs: Job[]): string {
  return table(
    ['ID', 'STATUS', 'PROGRESS', 'COLLECTION', 'PAGES', 'CREATED', 'FILES'],
    jobs.map((job) => [job.id, job.status, `${job.progress}%`, job.collection, summary(job), job.createdAt, job.files.map((file) => file.name).join(', ')]),
  )
}

function printJob(job: Job): void {
  console.log(
    keyValues([
      ['id', job.id],
      ['collection', job.collection],
      ['status', job.status],
      ['progress', `${job.progress}%`],
      ['created', job.createdAt],
      ...(job.finishedAt ? [['finished', job.finishedAt] as [string, unknown]] : []),
      ...(job.error ? [['error', job.error] as [string, unknown]] : []),
    ]),
  )
  console.log(
    table(
      ['FILE', 'STATUS', 'PAGES', 'CHUNKS', 'REASON'],
      job.files.map((file) => [file.name, file.status, file.pages !== undefined ? `${file.pagesDone ?? 0}/${file.pages}` : '-', file.chunks ?? '-', file.reason ?? '']),
    ),
  )
}

interface JobsOptions {
  status?: string
  limit: number
  watch?: boolean
}

export function registerRagJobs(rag: Command): void {
  const jobs = example(
    rag
      .command('jobs')
      .description('Your ingestion jobs (uploads that need OCR or take long), newest first; --watch follows them until none is queued or running')
      .option('--status <status>', 'only jobs queued, running, completed, failed or cancelled')
      .option('-n, --limit <n>', 'jobs (1-100)', integer, 20)
      .option('--watch', 'redraw as they progress, until every job listed has ended')
      .action(async (options: JobsOptions, command: Command) => {
        const client = new ApiClient(globals(command))
        const query = `?limit=${options.limit}${options.status ? `&status=${encodeURIComponent(options.status)}` : ''}`
        let shown = ''
        for (;;) {
          const body = await client.json<{ jobs: Job[]; total: number }>('GET', `/rag/jobs${query}`)
          const active = body.jobs.some((job) => !ENDED.includes(job.status))
          if (!options.watch || !active) {
            emit(command, body, () => {
              if (options.watch && shown) process.stdout.write('\n')
              console.log(body.jobs.length ? jobsTable(body.jobs) : 'No ingestion jobs.')
              if (body.total > body.jobs.length) console.log(dim(`${body.jobs.length} of ${body.total} jobs`))
            })
            return
          }
          const now = jobsTable(body.jobs)
          if (now !== shown && !globals(command).json) {
            // On a terminal the table is redrawn in place; elsewhere each new state is printed after the last.
            if (process.stdout.isTTY) process.stdout.write('\x1b[H\x1b[2J')
            else if (shown) process.stdout.write('\n')
            console.log(now)
          }
          shown = now
          await Bun.sleep(1000)
        }
      }),
    'uagent rag jobs',
    'uagent rag jobs --watch',
  )
  example(
    jobs
      .command('show <id>')
      .description('One ingestion job: status, progress, and each file with its pages read')
      .option('--wait', 'follow it with a progress bar until it ends')
      .action(async (id: string, options: { wait?: boolean }, command: Command) => {
        const client = new ApiClient(globals(command))
        const job = options.wait ? await waitForJob(client, id) : await client.json<Job>('GET', `/rag/jobs/${encodeURIComponent(id)}`)
        emit(command, job, () => printJob(job))
      }),
    'uagent rag jobs show 3f0c9a4e-… --wait',
  )
  example(
    jobs
      .command('cancel <id>')
      .description('Cancel a queued or running ingestion job (files already ingested stay)')
      .action(async (id: string, _options, command: Command) => {
        const job = await new ApiClient(globals(command)).json<Job>('DELETE', `/rag/jobs/${encodeURIComponent(id)}`)
        emit(command, job, () => console.log(`Job ${job.id} cancelled.`))
      }),
    'uagent rag jobs cancel 3f0c9a4e-…',
  )
}

/** A job's one file as the outcome of its upload (the CLI sends a file per upload). */
export function jobOutcome(job: Job): { status: 'ingested' | 'unchanged' | 'failed'; chunks?: number; reason?: string } {
  const file = job.files[0]
  if (job.status !== 'completed' || !file) {
    return { status: 'failed', reason: job.status === 'cancelled' ? 'the job was cancelled' : (file?.reason ?? job.error ?? `the job ${job.status}`) }
  }
  if (file.status === 'ingested' || file.status === 'unchanged') return { status: file.status, ...(file.chunks !== undefined ? { chunks: file.chunks } : {}) }
  return { status: 'failed', reason: file.reason ?? file.status }
}
