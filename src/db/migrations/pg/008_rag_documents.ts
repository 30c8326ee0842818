import type { PostgresMigration } from '.'

// What each document is (title, type, size of its source), its full extracted text, its source
// and the SHA-256 of its source bytes, and for paged sources the page of each chunk: SQLite's
// migration 8. One row per rag_documents row; it goes when the document goes.
export const ragDocuments: PostgresMigration = {
  version: 8,
  name: 'rag documents',
  sql: `
    CREATE TABLE rag_document_info (
      document_id INTEGER PRIMARY KEY REFERENCES rag_documents(id) ON DELETE CASCADE,
      title TEXT NOT NULL,
      type TEXT NOT NULL,
      bytes BIGINT NOT NULL,
      text TEXT NOT NULL,
      source TEXT,
      content_hash TEXT NOT NULL,
      chunk_pages TEXT
    );
  `,
}
