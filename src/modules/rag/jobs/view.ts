import type { IngestJobView, JobFileView } from './model'
import type { FileChange, JobFileRow, JobRecord } from './store'

/** The API's view of a stored job. */
export function jobView(record: JobRecord): IngestJobView {
  const { job } = record
  return {
    id: job.id,
    collection: job.collection,
    status: job.status,
    progress: job.progress,
    files: record.files.map(fileView),
    ...(job.error ? { error: job.error } : {}),
    createdAt: job.created_at,
    ...(job.started_at ? { startedAt: job.started_at } : {}),
    ...(job.finished_at ? { finishedAt: job.finished_at } : {}),
  }
}

function fileView(file: JobFileRow): JobFileView {
  return {
    name: file.name,
    id: file.document_id,
    status: file.status,
    bytes: Number(file.bytes),
    ...(file.type ? { type: file.type } : {}),
    ...(file.title ? { title: file.title } : {}),
    ...(file.pages !== null ? { pages: file.pages } : {}),
    ...(file.pages_done !== null ? { pagesDone: file.pages_done } : {}),
    ...(file.chunks !== null ? { chunks: file.chunks } : {}),
    ...(file.reason ? { reason: file.reason } : {}),
  }
}

export function applyChange(file: JobFileRow, change: FileChange): void {
  if (change.status !== undefined) file.status = change.status
  if (change.type !== undefined) file.type = change.type
  if (change.title !== undefined) file.title = change.title
  if (change.pages !== undefined) file.pages = change.pages
  if (change.pagesDone !== undefined) file.pages_done = change.pagesDone
  if (change.chunks !== undefined) file.chunks = change.chunks
  if (change.reason !== undefined) file.reason = change.reason
}
