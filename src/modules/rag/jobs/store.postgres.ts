import type { Postgres } from '../../../db/postgres'
import type { JobStatusValue } from './model'
import { type FileChange, type IngestJobStore, type JobFileRow, type JobRecord, type JobRow, type NewJob, type NewJobFile, now } from './store'
import { fileAssignments } from './store.sqlite'

const FILE_COLUMNS = 'job_id, position, name, document_id, source, bytes, content_hash, status, type, title, pages, pages_done, chunks, reason'
const JOB_COLUMNS = 'id, user_id, collection, status, progress, error, created_at, started_at, finished_at'

/** Ingestion jobs in PostgreSQL (UAGENT_DATABASE_URL): one queue every replica claims from, the uploaded bytes with them. */
export class PostgresIngestJobStore implements IngestJobStore {
  constructor(private readonly sql: Postgres) {}

  async create(job: NewJob, files: NewJobFile[]): Promise<void> {
    await this.sql.begin(async (tx) => {
      const started = job.status === 'running' ? now() : null
      await tx`
        INSERT INTO ingest_jobs (id, user_id, collection, status, owner, heartbeat_at, created_at, started_at)
        VALUES (${job.id}, ${job.userId}, ${job.collection}, ${job.status}, ${job.owner ?? null}, ${started ? new Date() : null}, ${now()}, ${started})`
      for (const [position, file] of files.entries()) {
        const state = file.state ?? {}
        await tx`
          INSERT INTO ingest_job_files (job_id, position, name, document_id, source, bytes, content_hash, status, type, title, pages, pages_done, chunks, reason, data)
          VALUES (${job.id}, ${position}, ${file.name}, ${file.documentId}, ${file.source}, ${file.bytes}, ${file.contentHash}, ${state.status ?? 'queued'}, ${state.type ?? null},
            ${state.title ?? null}, ${state.pages ?? null}, ${state.pagesDone ?? null}, ${state.chunks ?? null}, ${state.reason ?? null}, ${file.data})`
      }
    })
  }

  private async records(jobs: JobRow[]): Promise<JobRecord[]> {
    if (!jobs.length) return []
    const files: JobFileRow[] = await this.sql.unsafe(`SELECT ${FILE_COLUMNS} FROM ingest_job_files WHERE job_id = ANY($1) ORDER BY job_id, position`, [jobs.map((job) => job.id)])
    return jobs.map((job) => ({ job, files: files.filter((file) => file.job_id === job.id) }))
  }

  private async one(rows: JobRow[]): Promise<JobRecord | null> {
    return rows[0] ? (await this.records([rows[0]]))[0]! : null
  }

  async find(userId: string, id: string): Promise<JobRecord | null> {
    return this.one(await this.sql.unsafe(`SELECT ${JOB_COLUMNS} FROM ingest_jobs WHERE id = $1 AND user_id = $2`, [id, userId]))
  }

  async get(id: string): Promise<JobRecord | null> {
    return this.one(await this.sql.unsafe(`SELECT ${JOB_COLUMNS} FROM ingest_jobs WHERE id = $1`, [id]))
  }

  async list(userId: string, limit: number, offset: number, status?: JobStatusValue): Promise<{ records: JobRecord[]; total: number }> {
    const filter = status ? ' AND status = $2' : ''
    const args: (string | number)[] = status ? [userId, status] : [userId]
    const jobs: JobRow[] = await this.sql.unsafe(
      `SELECT ${JOB_COLUMNS} FROM ingest_jobs WHERE user_id = $1${filter} ORDER BY created_at DESC, seq DESC LIMIT $${args.length + 1} OFFSET $${args.length + 2}`,
      [...args, limit, offset],
    )
    const [counted]: { n: string }[] = await this.sql.unsafe(`SELECT count(*) AS n FROM ingest_jobs WHERE user_id = $1${filter}`, args)
    return { records: await this.records([...jobs]), total: Number(counted!.n) }
  }

  async claim(owner: string): Promise<JobRecord | null> {
    return this.one(
      await this.sql.unsafe(
        `UPDATE ingest_jobs SET status = 'running', owner = $1, heartbeat_at = now(), started_at = coalesce(started_at, $2)
         WHERE id = (SELECT id FROM ingest_jobs WHERE status = 'queued' ORDER BY seq FOR UPDATE SKIP LOCKED LIMIT 1) AND status = 'queued'
         RETURNING ${JOB_COLUMNS}`,
        [owner, now()],
      ),
    )
  }

  async fileData(jobId: string, position: number): Promise<Uint8Array | null> {
    const rows: { data: Uint8Array | null }[] = await this.sql`SELECT data FROM ingest_job_files WHERE job_id = ${jobId} AND position = ${position}`
    return rows[0]?.data ?? null
  }

  async updateFile(jobId: string, position: number, change: FileChange, done: boolean): Promise<boolean> {
    const { columns, values } = fileAssignments(change)
    const assignments = columns.map((column, i) => `${column} = $${i + 1}`)
    if (done) assignments.push('data = NULL')
    if (!assignments.length) return true
    const n = values.length
    const result = await this.sql.unsafe(
      `UPDATE ingest_job_files SET ${assignments.join(', ')} WHERE job_id = $${n + 1} AND position = $${n + 2}
       AND EXISTS (SELECT 1 FROM ingest_jobs WHERE id = $${n + 1} AND status = 'running') RETURNING position`,
      [...values, jobId, position],
    )
    return result.length > 0
  }

  async setProgress(id: string, progress: number): Promise<void> {
    await this.sql`UPDATE ingest_jobs SET progress = ${progress} WHERE id = ${id} AND status = 'running'`
  }

  async finish(id: string, status: 'completed' | 'failed', error: string | null): Promise<boolean> {
    return this.sql.begin(async (tx) => {
      const result = await tx`
        UPDATE ingest_jobs SET status = ${status}, error = ${error}, progress = CASE WHEN ${status} = 'completed' THEN 100 ELSE progress END, owner = NULL, finished_at = ${now()}
        WHERE id = ${id} AND status = 'running'`
      if (result.count) {
        if (status === 'failed') await tx`UPDATE ingest_job_files SET status = 'failed', reason = coalesce(reason, ${error}) WHERE job_id = ${id} AND status IN ('queued', 'running')`
        await tx`UPDATE ingest_job_files SET data = NULL WHERE job_id = ${id}`
      }
      return result.count > 0
    })
  }

  async cancel(userId: string, id: string): Promise<boolean> {
    return this.sql.begin(async (tx) => {
      const result = await tx`
        UPDATE ingest_jobs SET status = 'cancelled', owner = NULL, finished_at = ${now()} WHERE id = ${id} AND user_id = ${userId} AND status IN ('queued', 'running')`
      if (result.count) {
        await tx`UPDATE ingest_job_files SET status = 'cancelled' WHERE job_id = ${id} AND status IN ('queued', 'running')`
        await tx`UPDATE ingest_job_files SET data = NULL WHERE job_id = ${id}`
      }
      return result.count > 0
    })
  }

  async heartbeat(owner: string, ids: string[]): Promise<string[]> {
    if (!ids.length) return []
    const rows: { id: string }[] = await this.sql`
      UPDATE ingest_jobs SET heartbeat_at = now() WHERE id IN ${this.sql(ids)} AND owner = ${owner} AND status = 'running' RETURNING id`
    return rows.map((row) => row.id)
  }

  async requeueStale(staleMs: number, own?: { owner: string; ms: number }): Promise<{ id: string; user_id: string }[]> {
    return this.sql.begin(async (tx) => {
      const rows: { id: string; user_id: string }[] = await tx`
        UPDATE ingest_jobs SET status = 'queued', owner = NULL, heartbeat_at = NULL, progress = 0
        WHERE status = 'running' AND (heartbeat_at IS NULL OR heartbeat_at < now() - make_interval(secs => ${staleMs / 1000})
          OR (owner = ${own?.owner ?? null} AND heartbeat_at < now() - make_interval(secs => ${(own?.ms ?? staleMs) / 1000})))
        RETURNING id, user_id`
      if (rows.length) {
        await tx`UPDATE ingest_job_files SET status = 'queued', pages_done = NULL WHERE job_id IN ${tx(rows.map((row) => row.id))} AND status = 'running'`
      }
      return [...rows]
    })
  }

  async release(id: string, owner: string): Promise<void> {
    await this.sql.begin(async (tx) => {
      const result = await tx`UPDATE ingest_jobs SET status = 'queued', owner = NULL, heartbeat_at = NULL WHERE id = ${id} AND owner = ${owner} AND status = 'running'`
      if (result.count) await tx`UPDATE ingest_job_files SET status = 'queued', pages_done = NULL WHERE job_id = ${id} AND status = 'running'`
    })
  }

  async prune(before: string): Promise<number> {
    return (await this.sql`DELETE FROM ingest_jobs WHERE status IN ('completed', 'failed', 'cancelled') AND finished_at < ${before}`).count
  }
}
