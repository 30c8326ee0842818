import type { Migration } from '.'

/**
 * Document-level storage for the knowledge base: what each document is (title, type, size of its
 * source), its full extracted text, where it came from (`source`), the SHA-256 of its source bytes
 * (`content_hash`, so an unchanged file is not ingested twice) and, for paged sources (PDF), the
 * page count and the page of each chunk (JSON `{ pages, chunks }`). One row per rag_documents row; it goes when the document goes.
 */
export const ragDocuments: Migration = {
  version: 8,
  name: 'rag documents',
  sql: `
    CREATE TABLE rag_document_info (
      document_id INTEGER PRIMARY KEY REFERENCES rag_documents(id) ON DELETE CASCADE,
      title TEXT NOT NULL,
      type TEXT NOT NULL,
      bytes INTEGER NOT NULL,
      text TEXT NOT NULL,
      source TEXT,
      content_hash TEXT NOT NULL,
      chunk_pages TEXT
    );
  `,
}
