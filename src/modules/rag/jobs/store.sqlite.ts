import type { Database } from 'bun:sqlite'
import type { JobStatusValue } from './model'
import { type FileChange, type IngestJobStore, type JobFileRow, type JobRecord, type JobRow, type NewJob, type NewJobFile, now } from './store'

const FILE_COLUMNS = 'job_id, position, name, document_id, source, bytes, content_hash, status, type, title, pages, pages_done, chunks, reason'
const JOB_COLUMNS = 'id, user_id, collection, status, progress, error, created_at, started_at, finished_at'

/** The change's columns, as SQL assignments and their values. */
export function fileAssignments(change: FileChange): { columns: string[]; values: (string | number)[] } {
  const columns: string[] = []
  const values: (string | number)[] = []
  const set = (column: string, value: string | number | undefined) => {
    if (value === undefined) return
    columns.push(column)
    values.push(value)
  }
  set('status', change.status)
  set('type', change.type)
  set('title', change.title)
  set('pages', change.pages)
  set('pages_done', change.pagesDone)
  set('chunks', change.chunks)
  set('reason', change.reason)
  return { columns, values }
}

/** Ingestion jobs in the server's SQLite database (one process serves it): every call answers at once. */
export class SqliteIngestJobStore implements IngestJobStore {
  constructor(private readonly db: Database) {}

  create(job: NewJob, files: NewJobFile[]): void {
    this.db
      .transaction(() => {
        const started = job.status === 'running' ? now() : null
        this.db.run('INSERT INTO ingest_jobs (id, user_id, collection, status, owner, heartbeat_at, created_at, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)', [
          job.id,
          job.userId,
          job.collection,
          job.status,
          job.owner ?? null,
          started,
          now(),
          started,
        ])
        const insert = this.db.prepare(
          `INSERT INTO ingest_job_files (job_id, position, name, document_id, source, bytes, content_hash, status, type, title, pages, pages_done, chunks, reason, data)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        files.forEach((file, position) => {
          const state = file.state ?? {}
          insert.run(job.id, position, file.name, file.documentId, file.source, file.bytes, file.contentHash, state.status ?? 'queued', state.type ?? null, state.title ?? null,
            state.pages ?? null, state.pagesDone ?? null, state.chunks ?? null, state.reason ?? null, file.data)
        })
      })
      .immediate()
  }

  private record(job: JobRow | null): JobRecord | null {
    if (!job) return null
    const files = this.db.query<JobFileRow, [string]>(`SELECT ${FILE_COLUMNS} FROM ingest_job_files WHERE job_id = ? ORDER BY position`).all(job.id)
    return { job, files }
  }

  find(userId: string, id: string): JobRecord | null {
    return this.record(this.db.query<JobRow, [string, string]>(`SELECT ${JOB_COLUMNS} FROM ingest_jobs WHERE id = ? AND user_id = ?`).get(id, userId))
  }

  get(id: string): JobRecord | null {
    return this.record(this.db.query<JobRow, [string]>(`SELECT ${JOB_COLUMNS} FROM ingest_jobs WHERE id = ?`).get(id))
  }

  list(userId: string, limit: number, offset: number, status?: JobStatusValue): { records: JobRecord[]; total: number } {
    const filter = status ? ' AND status = ?' : ''
    const args: (string | number)[] = status ? [userId, status] : [userId]
    const jobs = this.db
      .query<JobRow, (string | number)[]>(`SELECT ${JOB_COLUMNS} FROM ingest_jobs WHERE user_id = ?${filter} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?`)
      .all(...args, limit, offset)
    const total = this.db.query<{ n: number }, (string | number)[]>(`SELECT count(*) AS n FROM ingest_jobs WHERE user_id = ?${filter}`).get(...args)!.n
    return { records: jobs.map((job) => this.record(job)!), total }
  }

  claim(owner: string): JobRecord | null {
    const at = now()
    const job = this.db
      .query<JobRow, [string, string, string]>(
        `UPDATE ingest_jobs SET status = 'running', owner = ?, heartbeat_at = ?, started_at = coalesce(started_at, ?)
         WHERE id = (SELECT id FROM ingest_jobs WHERE status = 'queued' ORDER BY created_at, rowid LIMIT 1) AND status = 'queued'
         RETURNING ${JOB_COLUMNS}`,
      )
      .get(owner, at, at)
    return this.record(job)
  }

  fileData(jobId: string, position: number): Uint8Array | null {
    return this.db.query<{ data: Uint8Array | null }, [string, number]>('SELECT data FROM ingest_job_files WHERE job_id = ? AND position = ?').get(jobId, position)?.data ?? null
  }

  updateFile(jobId: string, position: number, change: FileChange, done: boolean): boolean {
    const { columns, values } = fileAssignments(change)
    if (done) columns.push('data = NULL')
    const assignments = columns.map((column) => (column.includes('=') ? column : `${column} = ?`)).join(', ')
    if (!assignments) return true
    return (
      this.db.run(
        `UPDATE ingest_job_files SET ${assignments} WHERE job_id = ? AND position = ? AND EXISTS (SELECT 1 FROM ingest_jobs WHERE id = ? AND status = 'running')`,
        [...values, jobId, position, jobId],
      ).changes > 0
    )
  }

  setProgress(id: string, progress: number): void {
    this.db.run("UPDATE ingest_jobs SET progress = ? WHERE id = ? AND status = 'running'", [progress, id])
  }

  finish(id: string, status: 'completed' | 'failed', error: string | null): boolean {
    return this.db
      .transaction(() => {
        const changed = this.db.run(
          `UPDATE ingest_jobs SET status = ?, error = ?, progress = CASE WHEN ? = 'completed' THEN 100 ELSE progress END, owner = NULL, finished_at = ? WHERE id = ? AND status = 'running'`,
          [status, error, status, now(), id],
        ).changes
        if (changed) {
          if (status === 'failed') this.db.run("UPDATE ingest_job_files SET status = 'failed', reason = coalesce(reason, ?) WHERE job_id = ? AND status IN ('queued', 'running')", [error, id])
          this.db.run('UPDATE ingest_job_files SET data = NULL WHERE job_id = ?', [id])
        }
        return changed > 0
      })
      .immediate()
  }

  cancel(userId: string, id: string): boolean {
    return this.db
      .transaction(() => {
        const changed = this.db.run(
          "UPDATE ingest_jobs SET status = 'cancelled', owner = NULL, finished_at = ? WHERE id = ? AND user_id = ? AND status IN ('queued', 'running')",
          [now(), id, userId],
        ).changes
        if (changed) {
          this.db.run("UPDATE ingest_job_files SET status = 'cancelled' WHERE job_id = ? AND status IN ('queued', 'running')", [id])
          this.db.run('UPDATE ingest_job_files SET data = NULL WHERE job_id = ?', [id])
        }
        return changed > 0
      })
      .immediate()
  }

  heartbeat(owner: string, ids: string[]): string[] {
    if (!ids.length) return []
    const marks = ids.map(() => '?').join(', ')
    return this.db
      .query<{ id: string }, string[]>(`UPDATE ingest_jobs SET heartbeat_at = ? WHERE id IN (${marks}) AND owner = ? AND status = 'running' RETURNING id`)
      .all(now(), ...ids, owner)
      .map((row) => row.id)
  }

  requeueStale(staleMs: number, own?: { owner: string; ms: number }): { id: string; user_id: string }[] {
    const before = (ms: number) => new Date(Date.now() - ms).toISOString()
    return this.db
      .transaction(() => {
        const rows = this.db
          .query<{ id: string; user_id: string }, (string | null)[]>(
            `UPDATE ingest_jobs SET status = 'queued', owner = NULL, heartbeat_at = NULL, progress = 0
             WHERE status = 'running' AND (heartbeat_at IS NULL OR heartbeat_at < ? OR (owner = ? AND heartbeat_at < ?)) RETURNING id, user_id`,
          )
          .all(before(staleMs), own?.owner ?? null, before(own?.ms ?? staleMs))
        for (const row of rows) this.db.run("UPDATE ingest_job_files SET status = 'queued', pages_done = NULL WHERE job_id = ? AND status = 'running'", [row.id])
        return rows
      })
      .immediate()
  }

  release(id: string, owner: string): void {
    this.db
      .transaction(() => {
        if (this.db.run("UPDATE ingest_jobs SET status = 'queued', owner = NULL, heartbeat_at = NULL WHERE id = ? AND owner = ? AND status = 'running'", [id, owner]).changes) {
          this.db.run("UPDATE ingest_job_files SET status = 'queued', pages_done = NULL WHERE job_id = ? AND status = 'running'", [id])
        }
      })
      .immediate()
  }

  prune(before: string): number {
    return this.db.run("DELETE FROM ingest_jobs WHERE status IN ('completed', 'failed', 'cancelled') AND finished_at < ?", [before]).changes
  }
}
