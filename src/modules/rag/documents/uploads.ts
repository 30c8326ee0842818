import { mkdirSync, mkdtempSync, rmdirSync, rmSync } from 'node:fs'
import { basename, join } from 'node:path'
import { AppError } from '../../../core/errors'
import type { IngestJobService, UploadedFile } from '../jobs/service'
import { receiveMultipart, multipartBoundary } from './multipart'
import type { AuditContext } from '../../audit/service'
import type { MaybePromise } from '../../../db/maybe-promise'

export interface FileOutcome {
  name: string
  id: string
  status: 'ingested' | 'unchanged' | 'failed'
  type?: string
  title?: string
  bytes: number
  contentHash: string
  source?: string | null
  chunks?: number
  pages?: number
  reason?: string
}

const ID_LIMIT = 512

/**
 * Uploads: a multipart body streamed to a temporary folder in the data dir (removed afterwards),
 * each file's text extracted by its type and ingested as a document. One file that cannot be read
 * is reported `failed` with its reason; the others are ingested. Files that need OCR, or are still
 * being read after the job threshold, go on as an ingestion job: `{ jobId, status }` (202).
 */
export class UploadService {
  constructor(
    private readonly jobs: IngestJobService,
    private readonly tempRoot: string,
    private readonly maxBytes: number,
    /** The collection an upload writes to, for the caller (see RagService.writable): 400, 403 or 404 before a byte is read. */
    private readonly writable: (userId: string, collection: string) => MaybePromise<unknown>,
  ) {}

  async upload(userId: string, collection: string, request: Request, context?: AuditContext) {
    const started = performance.now()
    await this.writable(userId, collection)
    const boundary = multipartBoundary(request.headers.get('content-type'))
    const length = request.headers.get('content-length')
    if (length !== null && Number(length) > this.maxBytes) throw new AppError('PAYLOAD_TOO_LARGE', 'Request body exceeds the upload size limit')
    if (!request.body) throw new AppError('VALIDATION_ERROR', 'body: expected multipart/form-data with one or more files (field "files")')
    mkdirSync(this.tempRoot, { recursive: true, mode: 0o700 })
    const dir = mkdtempSync(join(this.tempRoot, 'upload-'))
    try {
      const { files } = await receiveMultipart(request.body, boundary, dir, this.maxBytes)
      if (!files.length) throw new AppError('VALIDATION_ERROR', 'body.files: send one or more files')
      const uploaded: UploadedFile[] = []
      for (const file of files) {
        const id = (file.fields.id ?? file.fileName).trim()
        const source = file.fields.source ?? null
        const invalid = !id || id.length > ID_LIMIT ? `id: must be 1 to ${ID_LIMIT} characters` : undefined
        const data = invalid ? new Uint8Array(0) : new Uint8Array(await Bun.file(file.path).arrayBuffer())
        uploaded.push({ name: basename(file.fileName), documentId: id, source, bytes: file.bytes, contentHash: file.sha256, data, ...(invalid ? { invalid } : {}) })
      }
      // Files that need OCR, or take long to read, go on as a job (202).
      const handled = await this.jobs.handleUpload(userId, collection, uploaded, request.signal, context)
      if (handled.kind === 'job') return handled
      // A file of several documents (an mbox): an outcome per document, under its own id.
      const outcomes: FileOutcome[] = uploaded.flatMap((file, i) => {
        const state = handled.files[i]!
        return (state.parts ?? [{ ...state, id: file.documentId }]).map((part) => {
          const outcome: FileOutcome = { name: file.name, id: part.id, status: part.status === 'ingested' || part.status === 'unchanged' ? part.status : 'failed', bytes: file.bytes, contentHash: file.contentHash, source: file.source }
          if (part.type) outcome.type = part.type
          if (part.title) outcome.title = part.title
          if (part.pages !== undefined) outcome.pages = part.pages
          if (part.chunks !== undefined) outcome.chunks = part.chunks
          if (part.reason) outcome.reason = part.reason
          return outcome
        })
      })
      // Mailboxes uploaded again: the documents of messages no longer in them, removed.
      const removed = handled.files.flatMap((state) => state.removed ?? [])
      const count = (status: FileOutcome['status']) => outcomes.filter((o) => o.status === status).length
      const body = {
        success: count('failed') === 0,
        collection,
        ingested: count('ingested'),
        unchanged: count('unchanged'),
        failed: count('failed'),
        files: outcomes,
        ...(removed.length ? { removed } : {}),
        processingTime: Math.round(performance.now() - started),
      }
      return { kind: 'done' as const, body }
    } finally {
      rmSync(dir, { recursive: true, force: true })
      try {
        rmdirSync(this.tempRoot)
      } catch {
        // Another upload is using it, or it holds something else: leave it.
      }
    }
  }
}
