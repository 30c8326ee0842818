import { readdirSync, readFileSync, statSync } from 'node:fs'
import { basename, extname, join, relative } from 'node:path'
import { htmlToStructuredText } from '../../src/modules/rag/extract/html'
import type { ApiClient } from '../client'
import { CliError, EXIT } from '../client'
import { jobOutcome, waitForJob } from './rag-jobs'

export const TEXT_EXTENSIONS = new Set(['.txt', '.md', '.markdown', '.json', '.html', '.htm'])
/**
 * Files whose text the server extracts (sent through the upload route). Images are read by OCR
 * when named directly; a folder's pictures are left out, as they are mostly not documents.
 */
export const EXTRACTED_EXTENSIONS = new Set(['.pdf', '.docx', '.odt', '.rtf', '.epub', '.pptx', '.odp', '.xlsx', '.ods', '.csv', '.tsv', '.eml', '.mbox'])

export interface FileDocument {
  id: string
  content: string
  metadata: { title: string; path: string }
}

/** Visible text of an HTML page: scripts and styles dropped, every entity decoded, structure kept (a real HTML parser). */
export function htmlToText(html: string): string {
  return htmlToStructuredText(html).text
}

/** A file to upload for the server to extract (PDF, Word, or anything that is not plain text). */
export interface UploadFile {
  id: string
  path: string
}

/** A plain-text file as a document; null when it is not text (a NUL byte or invalid UTF-8), for the server to extract or refuse. */
function readDocument(path: string, id: string): FileDocument | null {
  const ext = extname(path).toLowerCase()
  if (EXTRACTED_EXTENSIONS.has(ext)) return null
  let raw: string
  try {
    raw = new TextDecoder('utf-8', { fatal: true }).decode(readFileSync(path))
  } catch {
    return null
  }
  if (raw.includes('\u0000')) return null
  return { id, content: ext === '.html' || ext === '.htm' ? htmlToText(raw) : raw, metadata: { title: basename(path), path } }
}

/**
 * Documents from files and folders. Folders are walked recursively for .txt .md .json .html
 * (read here, sent as JSON) and the EXTRACTED_EXTENSIONS (uploaded for the server to extract); a file named
 * directly may be anything: plain text is read here, the rest is uploaded. A file's id is its path
 * relative to the folder it was found in, or its name when given directly.
 */
export function collectDocuments(inputs: string[]): { documents: FileDocument[]; uploads: UploadFile[] } {
  const documents: FileDocument[] = []
  const uploads: UploadFile[] = []
  const add = (path: string, id: string) => {
    const document = readDocument(path, id)
    if (document) documents.push(document)
    else uploads.push({ id, path })
  }
  for (const input of inputs) {
    let stats
    try {
      stats = statSync(input)
    } catch {
      throw new CliError('USAGE', `no such file or folder: ${input}`, EXIT.usage)
    }
    if (stats.isFile()) {
      add(input, basename(input))
      continue
    }
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
        if (entry.name.startsWith('.')) continue
        const path = join(dir, entry.name)
        if (entry.isDirectory()) walk(path)
        else if (entry.isFile() && (TEXT_EXTENSIONS.has(extname(entry.name).toLowerCase()) || EXTRACTED_EXTENSIONS.has(extname(entry.name).toLowerCase()))) {
          add(path, relative(input, path))
        }
      }
    }
    walk(input)
  }
  return { documents, uploads }
}

export interface UploadOutcome {
  id: string
  /** `queued`: the server made it a job, not waited for (`jobId`). */
  status: 'ingested' | 'unchanged' | 'failed' | 'queued'
  chunks?: number
  contentHash?: string
  reason?: string
  jobId?: string
}

/**
 * Uploads one file through POST /rag/collections/{name}/files (the server extracts its text),
 * with its id and source path. A file over the server's request size limit is a failure of that
 * file, not of the run. A file the server makes a job (202: OCR, a long read) is followed with a
 * progress bar until the job ends, unless `wait` is false (then its outcome is `queued` with the job id).
 */
export async function uploadFile(client: ApiClient, collection: string, file: UploadFile, source?: string, wait = true): Promise<UploadOutcome> {
  const form = new FormData()
  form.append('id', file.id)
  if (source !== undefined) form.append('source', source)
  form.append('files', Bun.file(file.path), basename(file.path))
  try {
    const response = await client.fetch(`/rag/collections/${encodeURIComponent(collection)}/files`, { method: 'POST', body: form })
    if (response.status === 202) {
      const { jobId } = (await response.json()) as { jobId: string }
      if (!wait) return { id: file.id, status: 'queued', jobId }
      const job = await waitForJob(client, jobId, `${file.id} (job ${jobId.slice(0, 8)})`)
      return { id: file.id, jobId, ...jobOutcome(job) }
    }
    const body = (await response.json()) as { files: { status: UploadOutcome['status']; chunks?: number; contentHash: string; reason?: string }[] }
    const outcome = body.files[0]!
    return { id: file.id, status: outcome.status, chunks: outcome.chunks, contentHash: outcome.contentHash, ...(outcome.reason ? { reason: outcome.reason } : {}) }
  } catch (error) {
    if (error instanceof CliError && error.code === 'PAYLOAD_TOO_LARGE') return { id: file.id, status: 'failed', reason: `larger than the server's request size limit (${error.message})` }
    throw error
  }
}

/** Groups documents into requests of at most `maxDocs` documents and about `maxBytes` of content. */
export function batches<T extends { content: string }>(documents: T[], maxDocs = 50, maxBytes = 4 * 1024 * 1024): T[][] {
  const out: T[][] = []
  let current: T[] = []
  let size = 0
  for (const document of documents) {
    const bytes = Buffer.byteLength(document.content)
    if (current.length && (current.length >= maxDocs || size + bytes > maxBytes)) {
      out.push(current)
      current = []
      size = 0
    }
    current.push(document)
    size += bytes
  }
  if (current.length) out.push(current)
  return out
}
