import { randomUUID } from 'node:crypto'
import type { AuditContext } from '../../audit/service'
import type { EventBus } from '../../../core/bus'
import { AppError, notFound } from '../../../core/errors'
import { whenDone } from '../../../db/maybe-promise'
import type { DocumentLibrary } from '../documents/library'
import type { IngestJobView, JobStatusValue } from './model'
import type { FileChange, IngestJobStore, JobRecord } from './store'
import { applyChange, jobView } from './view'
import { abortReason, type WorkPool } from '../../../core/work-pool'
import { type Extractor, extractorWithin, failureReason, ingestFiles, jobProgress, type OcrCheck, ocrCheckOn, type WorkFile, type WorkSink } from './work'

/** Bus topic: `{kind: "queued"}`, `{kind: "cancelled", id}`, `{kind: "job", userId, job}` (a job's new state, for its owner's sockets). */
export const JOBS_TOPIC = 'ingest_jobs'

/** A file of an upload, received and hashed. */
export interface UploadedFile {
  name: string
  documentId: string
  source: string | null
  bytes: number
  contentHash: string
  data: Uint8Array
  /** Why the file cannot be taken (a bad id): it is `failed` with this reason. */
  invalid?: string
}

/** What became of an upload: done here (each file's state), or a job that goes on. */
export type UploadHandled = { kind: 'done'; files: FileChange[] } | { kind: 'job'; jobId: string; status: 'queued' | 'running' }

export interface IngestJobDeps {
  store: IngestJobStore
  bus: EventBus
  /** The document library as the server has it now (tests swap the RAG service). */
  library: () => DocumentLibrary
  instanceId: string
  /** Jobs this process runs at once (0: none; another replica does). */
  concurrency: number
  /** Milliseconds an upload is worked on before it becomes a job (0: at once). */
  jobAfterMs: number
  /** Time allowed to read one file (UAGENT_EXTRACT_TIMEOUT_MS). */
  extractTimeoutMs?: number
  /** The worker pool files are read on (extraction and OCR never run on the request thread). */
  pool: WorkPool
  /** Whether other processes share the store (PostgreSQL): heartbeats, a stale sweep and a poll then run. */
  shared: boolean
  log: (line: string) => void
  heartbeatMs?: number
  staleMs?: number
  pollMs?: number
  retentionMs?: number
}

const PAGE_WRITE_MS = 250

/**
 * Ingestion jobs: an upload whose files need OCR, or are still being read after `jobAfterMs`, goes
 * on as a stored job. Any process claims queued jobs (one at a time per free slot), keeps a
 * heartbeat on those it runs, and (with a shared store) hands back the running jobs of a process
 * that stopped; a restart picks up what was queued or running. Each change of a job is published
 * on the bus for its owner's sockets; a cancel stops the work wherever it runs.
 */
export class IngestJobService {
  /** Reads a file, on the work pool (swappable: tests slow it down). */
  extract: Extractor
  /** Whether a file needs OCR: its upload is a job at once. */
  needsOcr: OcrCheck
  private readonly store: IngestJobStore
  private readonly running = new Map<string, AbortController>()
  private readonly timers: ReturnType<typeof setInterval>[] = []
  private readonly stopListening: () => void
  private readonly heartbeatMs: number
  private readonly staleMs: number
  private claiming = false
  private again = false
  private closed = false

  constructor(private readonly deps: IngestJobDeps) {
    this.store = deps.store
    this.extract = extractorWithin(deps.extractTimeoutMs, deps.pool)
    this.needsOcr = ocrCheckOn(deps.pool)
    this.heartbeatMs = deps.heartbeatMs ?? 5000
    this.staleMs = deps.staleMs ?? 30_000
    this.stopListening = deps.bus.subscribe(JOBS_TOPIC, (event) => {
      if (event.kind === 'queued') this.pump()
      else if (event.kind === 'cancelled' && typeof event.id === 'string') this.running.get(event.id)?.abort('cancelled')
    })
    const every = (ms: number, work: () => void) => {
      const timer = setInterval(() => {
        try {
          work()
        } catch (error) {
          // A store that throws at once (SQLite closed under a stopping server): logged, the timer goes on.
          this.problem('a periodic task failed', error)
        }
      }, ms)
      timer.unref?.()
      this.timers.push(timer)
    }
    // Jobs a previous run of this process left running start over (alone on SQLite: all of them).
    const sweep = (own?: { owner: string; ms: number }) =>
      Promise.resolve(this.store.requeueStale(deps.shared ? this.staleMs : 0, own)).then((rows) => {
        if (rows.length) deps.bus.publish(JOBS_TOPIC, { kind: 'queued' })
      })
    sweep({ owner: deps.instanceId, ms: this.heartbeatMs + 1000 }).then(
      () => this.pump(),
      (error) => this.problem('picking up the jobs of an earlier run failed', error),
    )
    every(this.heartbeatMs, () => {
      const ids = [...this.running.keys()]
      if (!ids.length) return
      Promise.resolve(this.store.heartbeat(deps.instanceId, ids)).then(
        (alive) => {
          // Ended elsewhere (cancelled on a replica the bus did not reach): stop.
          for (const id of ids) if (!alive.includes(id)) this.running.get(id)?.abort('cancelled')
        },
        (error) => this.problem('the heartbeat of running jobs failed', error),
      )
    })
    if (deps.shared) {
      every(this.staleMs / 2, () => void sweep().catch((error) => this.problem('the sweep of stale jobs failed', error)))
      every(deps.pollMs ?? 2000, () => this.pump())
    }
    every(3600_000, () => whenDone(this.store.prune(new Date(Date.now() - (deps.retentionMs ?? 7 * 86_400_000)).toISOString()), (error) => this.problem('pruning old jobs failed', error)))
  }

  private problem(what: string, error: unknown): void {
    if (!this.closed) this.deps.log(`ingest jobs: ${what}: ${(error as Error)?.message ?? String(error)}`)
  }

  /**
   * An upload's files: read and ingested here when that is quick; a job (202) when a file needs
   * OCR, or when the work is still going after `jobAfterMs` (the work goes on, now stored as a job).
   */
  async handleUpload(userId: string, collection: string, uploaded: UploadedFile[], signal?: AbortSignal, context?: AuditContext): Promise<UploadHandled> {
    let ocr = false
    for (const file of uploaded) {
      if (ocr || file.invalid || this.deps.jobAfterMs === 0) continue
      ocr = await Promise.resolve(this.needsOcr(file.name, file.data, signal)).catch((error) => {
        // A full pool is the upload's 503; a file that cannot even be looked into is read like any
        // other (its extraction says why it fails).
        if ((error instanceof AppError && error.code === 'BUSY') || signal?.aborted) throw error
        return false
      })
    }
    if (this.deps.jobAfterMs === 0 || ocr) {
      const jobId = randomUUID()
      await this.store.create(
        { id: jobId, userId, collection, status: 'queued' },
        uploaded.map((file) => ({ ...file, ...(file.invalid ? { data: null, state: { status: 'failed', reason: file.invalid } } : {}) })),
      )
      await this.publish(jobId)
      this.publishQueued()
      return { kind: 'job', jobId, status: 'queued' }
    }
    const states: FileChange[] = uploaded.map(() => ({ status: 'queued' }))
    const done = uploaded.map(() => false)
    let stored: WorkSink | null = null
    const sink: WorkSink = {
      file: async (position, change, finished) => {
        Object.assign(states[position]!, change)
        if (finished) done[position] = true
        return stored ? stored.file(position, change, finished) : true
      },
      pages: (position, pagesDone, total) => {
        Object.assign(states[position]!, { pages: total, pagesDone })
        stored?.pages(position, pagesDone, total)
      },
    }
    const controller = new AbortController()
    // Until it is a job, the upload is its request's: a client that goes away stops the work (and
    // the worker's task); a full pool refuses it (503 BUSY). As a job, it waits for a worker.
    let background = false
    const onGone = () => controller.abort('the request went away')
    signal?.addEventListener('abort', onGone, { once: true })
    const files: WorkFile[] = uploaded.map((file, position) => ({ ...file, position, read: async () => file.data }))
    const work = ingestFiles(files, { library: this.deps.library(), extract: this.extract, userId, collection, background: () => background, context }, sink, controller.signal)
    let timer: ReturnType<typeof setTimeout> | undefined
    const late = await Promise.race([work.then(() => false), new Promise<true>((resolve) => (timer = setTimeout(() => resolve(true), this.deps.jobAfterMs)))]).finally(() => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onGone)
    })
    if (!late) {
      // Its client went away and the work stopped: no one reads an answer (recorded as 499, not as a 200 of half-done files).
      if (signal?.aborted) throw abortReason(signal)
      return { kind: 'done', files: states }
    }
    background = true
    // Still reading: the upload becomes a job this process runs, stored with the bytes of the
    // files not done yet (for a restart, or another replica, to take over if this one stops).
    const jobId = randomUUID()
    try {
      await this.store.create(
        { id: jobId, userId, collection, status: 'running', owner: this.deps.instanceId },
        uploaded.map((file, position) => ({ ...file, data: done[position] ? null : file.data, state: { ...states[position]! } })),
      )
    } catch (error) {
      controller.abort()
      throw error
    }
    // Registered once stored: the heartbeat drops (and stops) a job it cannot find.
    this.running.set(jobId, controller)
    const record = await this.store.get(jobId)
    if (!record) throw new AppError('INTERNAL_ERROR', 'The job could not be stored')
    // What changed while the job was being stored.
    record.files.forEach((file, position) => applyChange(file, states[position]!))
    stored = this.storeSink(record)
    await Promise.all(record.files.map((_, position) => this.store.updateFile(jobId, position, states[position]!, done[position]!)))
    record.job.progress = jobProgress(record.files)
    await this.store.setProgress(jobId, record.job.progress)
    void this.settle(record, controller, work)
    return { kind: 'job', jobId, status: 'running' }
  }

  /** The user's job; 404 for unknown ids and other users' jobs alike. */
  async get(userId: string, id: string): Promise<IngestJobView> {
    const record = await this.store.find(userId, id)
    if (!record) throw notFound('Job not found')
    return jobView(record)
  }

  async list(userId: string, options: { limit: number; offset: number; status?: JobStatusValue }) {
    const { records, total } = await this.store.list(userId, options.limit, options.offset, options.status)
    return { jobs: records.map(jobView), total, limit: options.limit, offset: options.offset }
  }

  /** Cancels a queued or running job: its work stops wherever it runs. 409 once it has ended. */
  async cancel(userId: string, id: string): Promise<IngestJobView> {
    if (!(await this.store.cancel(userId, id))) {
      const record = await this.store.find(userId, id)
      if (!record) throw notFound('Job not found')
      throw new AppError('CONFLICT', `The job has already ended (${record.job.status})`)
    }
    this.running.get(id)?.abort('cancelled')
    this.deps.bus.publish(JOBS_TOPIC, { kind: 'cancelled', id })
    const view = await this.publish(id)
    return view!
  }

  /** Calls `listener` with each new state of the user's jobs (whichever process runs them); returns the function that stops it. */
  watch(userId: string, listener: (job: IngestJobView) => void): () => void {
    return this.deps.bus.subscribe(JOBS_TOPIC, (event) => {
      if (event.kind === 'job' && event.userId === userId) listener(event.job as IngestJobView)
    })
  }

  private publishQueued(): void {
    this.deps.bus.publish(JOBS_TOPIC, { kind: 'queued' })
  }

  /** Publishes the job as stored now. */
  private async publish(id: string): Promise<IngestJobView | null> {
    const record = await this.store.get(id)
    if (!record) return null
    const view = jobView(record)
    this.deps.bus.publish(JOBS_TOPIC, { kind: 'job', userId: record.job.user_id, job: view })
    return view
  }

  /** Writes a running job's changes to the store, its progress with them, and publishes each. */
  private storeSink(record: JobRecord): WorkSink {
    const { job } = record
    let lastPageWrite = 0
    const changed = () => {
      job.progress = jobProgress(record.files)
      this.deps.bus.publish(JOBS_TOPIC, { kind: 'job', userId: job.user_id, job: jobView(record) })
    }
    return {
      file: async (position, change, finished) => {
        if (!(await this.store.updateFile(job.id, position, change, finished))) return false
        applyChange(record.files[position]!, change)
        changed()
        await this.store.setProgress(job.id, job.progress)
        return true
      },
      pages: (position, pagesDone, total) => {
        applyChange(record.files[position]!, { pages: total, pagesDone })
        const at = performance.now()
        if (at - lastPageWrite < PAGE_WRITE_MS && pagesDone < total) return
        lastPageWrite = at
        changed()
        whenDone(
          Promise.resolve(this.store.updateFile(job.id, position, { pages: total, pagesDone }, false)).then(() => this.store.setProgress(job.id, job.progress)),
          (error) => this.problem(`recording the progress of job ${job.id} failed`, error),
        )
      },
    }
  }

  /** Ends a job once its work has: completed, failed with the reason, or left as the cancel (or a hand-back) made it. */
  private async settle(record: JobRecord, controller: AbortController, work: Promise<void>): Promise<void> {
    const id = record.job.id
    try {
      await work
      if (!controller.signal.aborted) await this.store.finish(id, 'completed', null)
    } catch (error) {
      if (!controller.signal.aborted) {
        if (!(error instanceof AppError)) this.deps.log(`ingest jobs: job ${id} failed: ${(error as Error)?.stack ?? String(error)}`)
        await Promise.resolve(this.store.finish(id, 'failed', failureReason(error))).catch((e) => this.problem(`ending job ${id} failed`, e))
      }
    } finally {
      this.running.delete(id)
      if (controller.signal.reason === 'hand back') await Promise.resolve(this.store.release(id, this.deps.instanceId)).catch((e) => this.problem(`handing job ${id} back failed`, e))
      await this.publish(id).catch((error) => this.problem(`publishing job ${id} failed`, error))
      this.pump()
    }
  }

  /** Claims queued jobs while this process has a free slot; a wake-up during a claim looks once more. */
  pump(): void {
    if (this.closed || this.running.size >= this.deps.concurrency) return
    if (this.claiming) {
      this.again = true
      return
    }
    this.claiming = true
    this.again = false
    new Promise<JobRecord | null>((resolve) => resolve(this.store.claim(this.deps.instanceId))).then(
      (record) => {
        this.claiming = false
        if (!record) {
          if (this.again) this.pump()
          return
        }
        if (this.closed) {
          whenDone(this.store.release(record.job.id, this.deps.instanceId), (error) => this.problem('handing a job back failed', error))
          return
        }
        this.start(record)
        this.pump()
      },
      (error) => {
        this.claiming = false
        this.problem('claiming a job failed', error)
      },
    )
  }

  private start(record: JobRecord): void {
    const { job } = record
    const controller = new AbortController()
    this.running.set(job.id, controller)
    const files: WorkFile[] = record.files.map((file) => ({
      position: file.position,
      name: file.name,
      documentId: file.document_id,
      source: file.source,
      bytes: Number(file.bytes),
      contentHash: file.content_hash,
      done: !['queued', 'running'].includes(file.status),
      ownsBytes: true,
      read: async () => {
        const data = await this.store.fileData(job.id, file.position)
        return data ? new Uint8Array(data) : null
      },
    }))
    const sink = this.storeSink(record)
    void this.publish(job.id)
    const work = ingestFiles(files, { library: this.deps.library(), extract: this.extract, userId: job.user_id, collection: job.collection, background: () => true }, sink, controller.signal)
    void this.settle(record, controller, work)
  }

  /** Jobs running in this process. */
  get active(): number {
    return this.running.size
  }

  /** Stops this process's jobs and hands them back to the queue (a server that stops): another process, or this one restarted, goes on with them. */
  async handBack(): Promise<void> {
    this.closed = true
    for (const controller of this.running.values()) controller.abort('hand back')
    const deadline = Date.now() + 2000
    while (this.running.size && Date.now() < deadline) await Bun.sleep(20)
  }

  close(): void {
    this.closed = true
    for (const timer of this.timers) clearInterval(timer)
    this.stopListening()
  }
}
