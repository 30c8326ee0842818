import type { MaybePromise } from '../../../db/maybe-promise'
import type { FileStatusValue, JobStatusValue } from './model'

export interface JobRow {
  id: string
  user_id: string
  collection: string
  status: JobStatusValue
  progress: number
  error: string | null
  created_at: string
  started_at: string | null
  finished_at: string | null
}

export interface JobFileRow {
  job_id: string
  position: number
  name: string
  document_id: string
  source: string | null
  bytes: number
  content_hash: string
  status: FileStatusValue
  type: string | null
  title: string | null
  pages: number | null
  pages_done: number | null
  chunks: number | null
  reason: string | null
}

/** A job and its files (without their bytes). */
export interface JobRecord {
  job: JobRow
  files: JobFileRow[]
}

/** A file of a new job, with the bytes uploaded. */
export interface NewJobFile {
  name: string
  documentId: string
  source: string | null
  bytes: number
  contentHash: string
  /** The bytes, kept until the file is done; null for a file already done. */
  data: Uint8Array | null
  /** What is known of the file already (an upload that became a job while reading its files). */
  state?: FileChange
}

/** What became of one document of a file (a file of several documents, an mbox, has one per message). */
export interface PartOutcome {
  id: string
  status: 'ingested' | 'unchanged' | 'failed'
  type?: string
  title?: string
  pages?: number
  chunks?: number
  reason?: string
}

/** What a run learns about one file. */
export interface FileChange {
  status?: FileStatusValue
  type?: string
  title?: string
  pages?: number
  pagesDone?: number
  chunks?: number
  reason?: string
  /** A file of several documents (an mbox): each one's outcome (not stored: the upload's 200 answer lists them). */
  parts?: PartOutcome[]
  /** A mailbox uploaded again: the documents of messages no longer in it, removed (not stored: the upload's 200 answer lists them). */
  removed?: string[]
}

export interface NewJob {
  id: string
  userId: string
  collection: string
  /** `running` (with its owner) for an upload that had already started reading its files here. */
  status: 'queued' | 'running'
  owner?: string
}

/**
 * The stored ingestion jobs, whatever the backend. A job is queued, then claimed by one process
 * (`owner`, kept alive by its heartbeat), then ends completed, failed or cancelled; the uploaded
 * bytes of a file stay stored until that file is done or the job ends. Updates of a run only
 * touch a job still running, so a cancel stands. SQLite answers at once, PostgreSQL with promises.
 */
export interface IngestJobStore {
  create(job: NewJob, files: NewJobFile[]): MaybePromise<void>
  /** The user's job; null for unknown ids and other users' jobs alike. */
  find(userId: string, id: string): MaybePromise<JobRecord | null>
  get(id: string): MaybePromise<JobRecord | null>
  /** Newest first. */
  list(userId: string, limit: number, offset: number, status?: JobStatusValue): MaybePromise<{ records: JobRecord[]; total: number }>
  /** The oldest queued job, now running under `owner`; null when none waits. */
  claim(owner: string): MaybePromise<JobRecord | null>
  /** The bytes uploaded for a file not yet done; null once it is (or the job ended). */
  fileData(jobId: string, position: number): MaybePromise<Uint8Array | null>
  /** Records what a run learned about a file (its bytes are dropped when `done`); false when the job is no longer running. */
  updateFile(jobId: string, position: number, change: FileChange, done: boolean): MaybePromise<boolean>
  setProgress(id: string, progress: number): MaybePromise<void>
  /** running → completed or failed; false when it had ended meanwhile (cancelled). */
  finish(id: string, status: 'completed' | 'failed', error: string | null): MaybePromise<boolean>
  /** The user's queued or running job → cancelled (its files not done too); false when unknown, another user's, or already ended. */
  cancel(userId: string, id: string): MaybePromise<boolean>
  /** Refreshes the heartbeat of `owner`'s running jobs among `ids`; returns those still running. */
  heartbeat(owner: string, ids: string[]): MaybePromise<string[]>
  /**
   * Hands running jobs whose process stopped back to the queue: those whose heartbeat is older than
   * `staleMs`, and `own.owner`'s older than `own.ms` (this process, started again). Their files not
   * done start over. Returns the jobs requeued.
   */
  requeueStale(staleMs: number, own?: { owner: string; ms: number }): MaybePromise<{ id: string; user_id: string }[]>
  /** Hands `owner`'s running job back to the queue (a server that stops). */
  release(id: string, owner: string): MaybePromise<void>
  /** Deletes jobs that ended before `before`. */
  prune(before: string): MaybePromise<number>
}

export const now = () => new Date().toISOString()

export const ENDED: JobStatusValue[] = ['completed', 'failed', 'cancelled']
