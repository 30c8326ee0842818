import { basename } from 'node:path'
import { AppError } from '../../../core/errors'
import { type Extracted, ExtractionError, extractFile } from '../extract'
import type { DocumentLibrary } from '../documents/library'
import { MAX_DOCUMENT_BYTES } from '../service'
import type { FileChange } from './store'

/** Reads a file's text; `onPages` reports pages read so far (and the total, once known); stops when `signal` aborts. */
export type Extractor = (fileName: string, bytes: Uint8Array, options: { signal: AbortSignal; onPages(done: number, total: number): void }) => Promise<Extracted>

/** The extractors of src/modules/rag/extract: a file at a time, its pages counted when it is read. */
export const extractWithProgress: Extractor = async (fileName, bytes) => extractFile(fileName, bytes)

/** Whether a file will need OCR (then its upload is a job at once). */
export type OcrCheck = (fileName: string, bytes: Uint8Array) => boolean

export const noOcr: OcrCheck = () => false

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
    if (Buffer.byteLength(extracted.text) > MAX_DOCUMENT_BYTES) {
      if (!(await sink.file(file.position, { ...known, status: 'failed', reason: 'extracted text is larger than 1 MB' }, true))) return
      continue
    }
    const name = basename(file.name)
    const result = await deps.library.ingest(deps.userId, deps.collection, [
      {
        id: file.documentId,
        content: extracted.text,
        metadata: { title: extracted.title, fileName: name, type: extracted.type, size: file.bytes, ...(file.source ? { source: file.source } : {}) },
        title: extracted.title,
        type: extracted.type,
        bytes: file.bytes,
        source: file.source,
        contentHash: file.contentHash,
        pageStarts: extracted.pageStarts,
      },
    ])
    const outcome = result.documents[0]!
    const change: FileChange = { ...known, status: outcome.status }
    if (outcome.chunks !== undefined) change.chunks = outcome.chunks
    if (outcome.message) change.reason = outcome.message
    if (!(await sink.file(file.position, change, true))) return
  }
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
