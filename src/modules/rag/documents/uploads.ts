import { mkdirSync, mkdtempSync, rmdirSync, rmSync } from 'node:fs'
import { basename, join } from 'node:path'
import { AppError } from '../../../core/errors'
import type { DocumentInput, DocumentLibrary } from './library'
import { extractFile, ExtractionError } from '../extract'
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

/**
 * Uploads: a multipart body streamed to a temporary folder in the data dir (removed afterwards),
 * each file's text extracted by its type, then all of them ingested as documents. One file that
 * cannot be read is reported `failed` with its reason; the others are ingested.
 */
export class UploadService {
  constructor(
    private readonly library: DocumentLibrary,
    private readonly tempRoot: string,
    private readonly maxBytes: number,
    private readonly extractTimeoutMs?: number,
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
      /** Files of several documents (mailboxes): the id prefix of their documents, and the ids they hold now. */
      const containers = new Map<string, Set<string>>()
      const removed: string[] = []
      for (const file of files) {
        const id = (file.fields.id ?? file.fileName).trim()
        const source = file.fields.source ?? null
        const outcome: FileOutcome = { name: basename(file.fileName), id, status: 'failed', bytes: file.bytes, contentHash: file.sha256, source }
        outcomes.push(outcome)
        if (!id || id.length > ID_LIMIT) {
          outcome.reason = `id: must be 1 to ${ID_LIMIT} characters`
          continue
        }
        try {
          const extracted = await extractFile(file.fileName, new Uint8Array(await Bun.file(file.path).arrayBuffer()), { timeoutMs: this.extractTimeoutMs })
          const metadata = { fileName: basename(file.fileName), size: file.bytes, ...(source ? { source } : {}) }
          // A file of several documents (an mbox): one outcome and one document per message, stored as
          // `<file id>#<Message-ID>` (so `rag sync` knows them as the file's), each carrying the file's
          // hash: an unchanged mailbox is unchanged message by message.
          const parts = extracted.documents?.map((part) => ({ ...part, id: `${id}#${part.id}` })) ?? [{ ...extracted, id }]
          if (extracted.documents) containers.set(`${id}#`, new Set(parts.map((part) => part.id)))
          parts.forEach((part, i) => {
            const partOutcome: FileOutcome = i === 0 ? outcome : { ...outcome }
            if (i > 0) outcomes.push(partOutcome)
            partOutcome.id = part.id
            partOutcome.type = part.type
            partOutcome.title = part.title
            if (part.pageStarts) partOutcome.pages = part.pageStarts.length
            if (!part.id || part.id.length > ID_LIMIT) {
              partOutcome.reason = `id: must be 1 to ${ID_LIMIT} characters`
              return
            }
            if (Buffer.byteLength(part.text) > MAX_DOCUMENT_BYTES) {
              partOutcome.reason = 'extracted text is larger than 1 MB'
              return
            }
            documents.push({
              id: part.id,
              content: part.text,
              metadata: { title: part.title, type: part.type, ...metadata },
              title: part.title,
              type: part.type,
              bytes: file.bytes,
              source,
              contentHash: file.sha256,
              pageStarts: part.pageStarts,
              ocr: part.ocr,
              outcome: partOutcome,
            })
          })
        } catch (error) {
          if (!(error instanceof ExtractionError)) throw error
          outcome.reason = error.reason
        }
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
      // A mailbox uploaded again: its messages that are no longer in it go.
      for (const [prefix, kept] of containers) {
        if (kept.size) removed.push(...(await this.library.removeOthers(userId, collection, prefix, kept)))
      }
      const count = (status: FileOutcome['status']) => outcomes.filter((o) => o.status === status).length
      return {
        success: count('failed') === 0,
        collection,
        ingested: count('ingested'),
        unchanged: count('unchanged'),
        failed: count('failed'),
        files: outcomes,
        ...(removed.length ? { removed } : {}),
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
