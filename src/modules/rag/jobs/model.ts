import { t } from 'elysia'

export const JobStatus = t.Union([t.Literal('queued'), t.Literal('running'), t.Literal('completed'), t.Literal('failed'), t.Literal('cancelled')])

export const FileStatus = t.Union(
  [t.Literal('queued'), t.Literal('running'), t.Literal('ingested'), t.Literal('unchanged'), t.Literal('failed'), t.Literal('cancelled')],
  { description: 'queued (not started), running (being read), ingested, unchanged (same bytes already stored), failed (see reason), cancelled' },
)

export const JobFile = t.Object({
  name: t.String({ description: 'The file name sent' }),
  id: t.String({ description: 'Document id' }),
  status: FileStatus,
  bytes: t.Integer(),
  type: t.Optional(t.String()),
  title: t.Optional(t.String()),
  pages: t.Optional(t.Integer({ description: 'Pages (or slides, sheets) of the file, once known' })),
  pagesDone: t.Optional(t.Integer({ description: 'Pages read so far' })),
  chunks: t.Optional(t.Integer()),
  reason: t.Optional(t.String({ description: 'Why the file failed' })),
})

export const IngestJob = t.Object({
  id: t.String(),
  collection: t.String(),
  status: JobStatus,
  progress: t.Integer({ minimum: 0, maximum: 100 }),
  files: t.Array(JobFile),
  error: t.Optional(t.String({ description: 'Why the job failed' })),
  createdAt: t.String(),
  startedAt: t.Optional(t.String()),
  finishedAt: t.Optional(t.String()),
})

export const JobAccepted = t.Object({
  jobId: t.String(),
  status: t.Union([t.Literal('queued'), t.Literal('running')], { description: 'queued, or running when the upload had already started reading its files' }),
})

export const JobParams = t.Object({ id: t.String({ minLength: 1, maxLength: 100 }) })

export const JobsQuery = t.Object({
  status: t.Optional(JobStatus),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 20 })),
  offset: t.Optional(t.Integer({ minimum: 0, maximum: 1_000_000_000, default: 0 })),
})

export const JobsResponse = t.Object({
  jobs: t.Array(IngestJob, { description: 'Newest first' }),
  total: t.Integer(),
  limit: t.Integer(),
  offset: t.Integer(),
})

export type IngestJobView = typeof IngestJob.static
export type JobFileView = typeof JobFile.static
export type JobStatusValue = typeof JobStatus.static
export type FileStatusValue = typeof FileStatus.static
