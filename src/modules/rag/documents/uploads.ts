import { mkdirSync, mkdtempSync, rmdirSync, rmSync } from 'node:fs'
import { basename, join } from 'node:path'
import { AppError } from '../../../core/errors'
import { type WorkPool, workKind } from '../../../core/work-pool'
import type { DocumentInput, DocumentLibrary } from './library'
import type { ExtractOutcome, ExtractTask } from './extract.work'
import { receiveMultipart, multipartBoundary } from './multipart'
import { assertCollectionName, MAX_DOCUMENT_BYTES } from '../service'

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

/** extractFile of an uploaded file, on the work pool (extract.work.ts). */
export const EXTRACT = workKind<ExtractTask, ExtractOutcome>('extract', new URL('./extract.work.ts', import.meta.url).href)

/**
 * Uploads: a multipart body streamed to a temporary folder in the data dir (removed afterwards),
 * each file's text extracted by its type on the work pool, then all of them ingested as documents.
 * One file that cannot be read is reported `failed` with its reason; the others are ingested.
 */
export class UploadService {
  constructor(
    private readonly library: DocumentLibrary,
    private readonly tempRoot: string,
    private readonly maxBytes: number,
    private readonly pool: WorkPool,
  ) {}

  async upload(userId: string, collection: string, request: Request) {
    const started = performance.now()
    assertCollectionName(collection)
    const boundary = multipartBoundary(request.headers.get('content-type'))
    const length = request.headers.get('content-length')
    if (length !== null && Number(length) > this.maxBytes) throw new AppError('PAYLOAD_TOO_LARGE', 'Request body exceeds the upload size limit')
    if (!request.body) throw new AppError('VALIDATION_ERROR', 'body: expected multipart/form-data with one or more files (field "files")')
    mkdirSync(this.tempRoot, { recursive: true, mode: 0o700 })
    const dir = mkdtempSync(join(this.tempRoot, 'upload-'))
    try {
      const { files } = await receiveMultipart(request.body, boundary, dir, this.maxBytes)
      if (!files.length) throw new AppError('VALIDATION_ERROR', 'body.files: send one or more files')
      const outcomes: FileOutcome[] = []
      const documents: (DocumentInput & { outcome: FileOutcome })[] = []
      for (const file of files) {
        const id = (file.fields.id ?? file.fileName).trim()
        const source = file.fields.source ?? null
        const outcome: FileOutcome = { name: basename(file.fileName), id, status: 'failed', bytes: file.bytes, contentHash: file.sha256, source }
        outcomes.push(outcome)
        if (!id || id.length > ID_LIMIT) {
          outcome.reason = `id: must be 1 to ${ID_LIMIT} characters`
          continue
        }
        // The request's signal: a client that goes away stops the extraction it was waiting for.
        const extraction = await this.pool.run(EXTRACT, { fileName: file.fileName, path: file.path }, { signal: request.signal })
        if ('reason' in extraction) {
          outcome.reason = extraction.reason
          continue
        }
        const { extracted } = extraction
        outcome.type = extracted.type
        outcome.title = extracted.title
        if (extracted.pageStarts) outcome.pages = extracted.pageStarts.length
        if (Buffer.byteLength(extracted.text) > MAX_DOCUMENT_BYTES) {
          outcome.reason = 'extracted text is larger than 1 MB'
          continue
        }
        documents.push({
          id,
          content: extracted.text,
          metadata: { title: extracted.title, fileName: basename(file.fileName), type: extracted.type, size: file.bytes, ...(source ? { source } : {}) },
          title: extracted.title,
          type: extracted.type,
          bytes: file.bytes,
          source,
          contentHash: file.sha256,
          pageStarts: extracted.pageStarts,
          outcome,
        })
      }
      if (documents.length) {
        const result = await this.library.ingest(userId, collection, documents)
        result.documents.forEach((document, i) => {
          const outcome = documents[i]!.outcome
          outcome.status = document.status
          if (document.chunks !== undefined) outcome.chunks = document.chunks
          if (document.message) outcome.reason = document.message
        })
      }
      const count = (status: FileOutcome['status']) => outcomes.filter((o) => o.status === status).length
      return {
        success: count('failed') === 0,
        collection,
        ingested: count('ingested'),
        unchanged: count('unchanged'),
        failed: count('failed'),
        files: outcomes,
        processingTime: Math.round(performance.now() - started),
      }
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
