/** Text extracted from a file, ready to ingest. */
export interface Extracted {
  /** The document's own title (PDF info, <title>, first heading), else the file name. */
  title: string
  type: DocumentType
  text: string
  /** For paged sources: the offset in `text` where each page starts (page n starts at pageStarts[n-1]). */
  pageStarts?: number[]
}

export type DocumentType = 'pdf' | 'docx' | 'html' | 'markdown' | 'text' | 'code'

/** A file that cannot be ingested, and why, in words a user can act on. */
export class ExtractionError extends Error {
  constructor(readonly reason: string) {
    super(reason)
    this.name = 'ExtractionError'
  }
}
