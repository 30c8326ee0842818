/** Text extracted from a file, ready to ingest. */
export interface Extracted {
  /** The document's own title (PDF info, <title>, first heading, Subject), else the file name. */
  title: string
  type: DocumentType
  text: string
  /** For paged sources (PDF, slides, images): the offset in `text` where each page starts (page n starts at pageStarts[n-1]). */
  pageStarts?: number[]
  /** The pages read by OCR (1-based), with the engine's mean word confidence (0..100) on each. */
  ocr?: OcrPage[]
  /**
   * Set for a file that holds several documents (an .mbox: one per message). Each is ingested as a
   * document of its own, stored as `<the file's id>#<its id>`; the file's own `text` is then empty.
   */
  documents?: ExtractedPart[]
}

/** One document of a file that holds several, with its id within the file (an e-mail's Message-ID). */
export type ExtractedPart = Omit<Extracted, 'documents'> & { id: string }

export interface OcrPage {
  page: number
  confidence: number
}

export type DocumentType =
  | 'pdf'
  | 'docx'
  | 'html'
  | 'markdown'
  | 'text'
  | 'code'
  | 'image'
  | 'pptx'
  | 'odp'
  | 'xlsx'
  | 'ods'
  | 'csv'
  | 'tsv'
  | 'odt'
  | 'rtf'
  | 'epub'
  | 'email'

/** Progress of one file's extraction: pages (slides, sheets, messages) done out of the total known so far. */
export interface ExtractProgress {
  pagesDone: number
  pages: number
}

export interface ExtractOptions {
  /** Called as pages are read (most usefully during OCR). */
  onProgress?: (progress: ExtractProgress) => void
  /** Time allowed for the file, in ms (UAGENT_EXTRACT_TIMEOUT_MS; default 30 s). */
  timeoutMs?: number
  /** Stops the extraction (a cancelled job). */
  signal?: AbortSignal
}

/** A file that cannot be ingested, and why, in words a user can act on. */
export class ExtractionError extends Error {
  constructor(readonly reason: string) {
    super(reason)
    this.name = 'ExtractionError'
  }
}
