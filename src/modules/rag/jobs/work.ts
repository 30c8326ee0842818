import { basename } from 'node:path'
import type { AuditContext } from '../../audit/service'
import { AppError } from '../../../core/errors'
import { type Extracted, ExtractionError, extractFile } from '../extract'
import type { DocumentInput, DocumentLibrary } from '../documents/library'
import { MAX_DOCUMENT_BYTES } from '../service'
import type { FileChange, PartOutcome } from './store'

const ID_LIMIT = 512

/** Reads a file's text; `onPages` reports pages read so far (and the total, once known); stops when `signal` aborts. */
export type Extractor = (fileName: string, bytes: Uint8Array, options: { signal: AbortSignal; onPages(done: number, total: number): void }) => Promise<Extracted>

/** The extractors of src/modules/rag/extract, within `timeoutMs` per file (UAGENT_EXTRACT_TIMEOUT_MS), reporting pages as they are read. */
export function extractorWithin(timeoutMs: number | undefined): Extractor {
  return (fileName, bytes, { signal, onPages }) => extractFile(fileName, bytes, { timeoutMs, signal, onProgress: (progress) => onPages(progress.pagesDone, progress.pages) })
}

/** Whether a file will need OCR (then its upload is a job at once). */
export type OcrCheck = (fileName: string, bytes: Uint8Array) => boolean | Promise<boolean>

/** One file of an upload or job, as the work sees it. */
export interface WorkFile {
  position: number
  name: string
  documentId: string
  source: string | null
  bytes: number
  contentHash: string
  /** Set when the file is already done (a job resumed after a restart) or cannot be taken (a bad id). */
  done?: boolean
  invalid?: string
  read(): Promise<Uint8Array | null>
}

/** Where the work reports; `file` answers false once the work must stop (the job ended elsewhere: cancelled). */
export interface WorkSink {
  file(position: number, change: FileChange, done: boolean): Promise<boolean>
  pages(position: number, done: number, total: number): void
}

export interface WorkDeps {
  library: DocumentLibrary
  extract: Extractor
  userId: string
  collection: string
  /** The request that started the work, for the audit log (a collection it makes); none for a job run later. */
  context?: AuditContext
}

/**
 * Reads and ingests the files one after the other, each as its own document: a file that cannot
 * be read is `failed` with its reason and the others go on. Stops between steps once `signal`
 * aborts or the sink says so. Errors other than a file's own (the collection refused, the database
 * lost) are thrown.
 */
export async function ingestFiles(files: WorkFile[], deps: WorkDeps, sink: WorkSink, signal: AbortSignal): Promise<void> {
  for (const file of files) {
    if (signal.aborted) return
    if (file.done) continue
    if (file.invalid) {
      if (!(await sink.file(file.position, { status: 'failed', reason: file.invalid }, true))) return
      continue
    }
    if (!(await sink.file(file.position, { status: 'running' }, false))) return
    const bytes = await file.read()
    if (!bytes) {
      if (!(await sink.file(file.position, { status: 'failed', reason: 'the uploaded bytes are gone' }, true))) return
      continue
    }
    let extracted: Extracted
    try {
      extracted = await deps.extract(file.name, bytes, { signal, onPages: (done, total) => sink.pages(file.position, done, total) })
    } catch (error) {
      if (signal.aborted) return
      if (!(error instanceof ExtractionError)) throw error
      if (!(await sink.file(file.position, { status: 'failed', reason: error.reason }, true))) return
      continue
    }
    if (signal.aborted) return
    const pages = extracted.pageStarts?.length
    const known: FileChange = { type: extracted.type, title: extracted.title, ...(pages !== undefined ? { pages, pagesDone: pages } : {}) }
    const metadata = { fileName: basename(file.name), size: file.bytes, ...(file.source ? { source: file.source } : {}) }
    // A file of several documents (an mbox): a document per message, stored as `<file id>#<Message-ID>`
    // (so `rag sync` knows them as the file's), each carrying the file's hash: an unchanged mailbox
    // is unchanged message by message.
    const parts = extracted.documents?.map((part) => ({ ...part, id: `${file.documentId}#${part.id}` })) ?? [{ ...extracted, id: file.documentId }]
    const outcomes: PartOutcome[] = parts.map((part) => ({ id: part.id, status: 'failed', type: part.type, title: part.title, ...(part.pageStarts ? { pages: part.pageStarts.length } : {}) }))
    const documents: DocumentInput[] = []
    const sent: PartOutcome[] = []
    parts.forEach((part, i) => {
      const outcome = outcomes[i]!
      if (!part.id || part.id.length > ID_LIMIT) outcome.reason = `id: must be 1 to ${ID_LIMIT} characters`
      else if (Buffer.byteLength(part.text) > MAX_DOCUMENT_BYTES) outcome.reason = 'extracted text is larger than 1 MB'
      else {
        documents.push({
          id: part.id,
          content: part.text,
          metadata: { title: part.title, type: part.type, ...metadata },
          title: part.title,
          type: part.type,
          bytes: file.bytes,
          source: file.source,
          contentHash: file.contentHash,
          pageStarts: part.pageStarts,
          ocr: part.ocr,
        })
        sent.push(outcome)
      }
    })
    if (signal.aborted) return
    if (documents.length) {
      const result = await deps.library.ingest(deps.userId, deps.collection, documents, deps.context)
      result.documents.forEach((document, i) => {
        const outcome = sent[i]!
        outcome.status = document.status
        if (document.chunks !== undefined) outcome.chunks = document.chunks
        if (document.message) outcome.reason = document.message
      })
    }
    // A mailbox uploaded again: the documents of its messages no longer in it go.
    const removed = extracted.documents ? await deps.library.removeOthers(deps.userId, deps.collection, `${file.documentId}#`, new Set(parts.map((part) => part.id))) : []
    const change: FileChange = { ...known, ...fileOutcome(outcomes), ...(extracted.documents ? { parts: outcomes } : {}), ...(removed.length ? { removed } : {}) }
    if (!(await sink.file(file.position, change, true))) return
  }
}

/** A file's outcome from its documents': failed when all failed (the first reason), else ingested when any was. */
function fileOutcome(outcomes: PartOutcome[]): FileChange {
  const failed = outcomes.filter((o) => o.status === 'failed')
  const chunks = outcomes.reduce((sum, o) => sum + (o.chunks ?? 0), 0)
  if (failed.length === outcomes.length) return { status: 'failed', reason: failed[0]?.reason ?? 'nothing to ingest' }
  const change: FileChange = { status: outcomes.some((o) => o.status === 'ingested') ? 'ingested' : 'unchanged', chunks }
  if (failed.length) change.reason = `${failed.length} of ${outcomes.length} documents failed: ${failed[0]!.id}: ${failed[0]!.reason}`
  return change
}

/** A job's progress, 0..100, from its files: a file done counts whole, one being read by its pages. */
export function jobProgress(files: { status: string; pages?: number | null; pages_done?: number | null }[]): number {
  if (!files.length) return 0
  let sum = 0
  for (const file of files) {
    if (file.status === 'queued') continue
    if (file.status === 'running') sum += file.pages ? (0.9 * (file.pages_done ?? 0)) / file.pages : 0
    else sum += 1
  }
  return Math.min(100, Math.floor((100 * sum) / files.length))
}

/** What a job's failure says: an AppError's message, never a stack or SQL. */
export function failureReason(error: unknown): string {
  return error instanceof AppError ? error.message : 'The job failed on the server (see its log)'
}
