import type { Database } from 'bun:sqlite'
import type { ChunkHit, CollectionRow, DocumentHashes, DocumentPage, DocumentRow } from '../../store'

const BATCH = 500

/**
 * The documents part of the SQLite RAG store: chunks and documents as searches and listings read
 * them (rag_chunks, rag_documents, rag_document_info). Writes stay with SqliteRagStore, which keeps
 * the keyword and vector indexes in step with them.
 */
export class SqliteDocumentReads {
  constructor(private readonly db: Database) {}

  chunks(chunkIds: number[]): Map<number, ChunkHit> {
    if (!chunkIds.length) return new Map()
    const rows = this.db
      .query<{ id: number; content: string; position: number; doc_id: string; metadata: string }, number[]>(
        `SELECT c.id, c.content, c.position, d.doc_id, d.metadata FROM rag_chunks c JOIN rag_documents d ON d.id = c.document_id
         WHERE c.id IN (${chunkIds.map(() => '?').join(',')})`,
      )
      .all(...chunkIds)
    return new Map(
      rows.map((row) => [row.id, { chunkId: row.id, docId: row.doc_id, content: row.content, position: row.position, metadata: JSON.parse(row.metadata) }]),
    )
  }

  /** The first chunks of a collection, for a query that has nothing to match on. */
  firstChunks(collection: CollectionRow, k: number): number[] {
    return this.db
      .query<{ id: number }, [number, number]>('SELECT id FROM rag_chunks WHERE collection_id = ? ORDER BY id LIMIT ?')
      .all(collection.id, k)
      .map((row) => row.id)
  }

  documentHashes(collection: CollectionRow, docIds: string[]): Map<string, { hash: string; metadata: string }> {
    const found = new Map<string, { hash: string; metadata: string }>()
    for (let i = 0; i < docIds.length; i += BATCH) {
      const part = docIds.slice(i, i + BATCH)
      const rows = this.db
        .query<{ doc_id: string; hash: string; metadata: string }, (number | string)[]>(
          `SELECT d.doc_id, i.content_hash AS hash, d.metadata FROM rag_documents d JOIN rag_document_info i ON i.document_id = d.id
           WHERE d.collection_id = ? AND d.doc_id IN (${part.map(() => '?').join(',')})`,
        )
        .all(collection.id, ...part)
      for (const row of rows) found.set(row.doc_id, { hash: row.hash, metadata: row.metadata })
    }
    return found
  }

  private countDocuments(collection: CollectionRow, prefix: string): number {
    return (this.db.query('SELECT count(*) AS n FROM rag_documents d WHERE d.collection_id = ? AND substr(d.doc_id, 1, ?) = ?').get(collection.id, prefix.length, prefix) as { n: number }).n
  }

  listDocumentHashes(collection: CollectionRow, prefix: string, limit: number, offset: number): DocumentHashes {
    const total = this.countDocuments(collection, prefix)
    const rows = this.db
      .query<{ id: string; source: string | null; contentHash: string }, (string | number)[]>(
        `SELECT d.doc_id AS id, i.source AS source, coalesce(i.content_hash, d.content_hash) AS contentHash
         FROM rag_documents d LEFT JOIN rag_document_info i ON i.document_id = d.id
         WHERE d.collection_id = ? AND substr(d.doc_id, 1, ?) = ? ORDER BY d.doc_id LIMIT ? OFFSET ?`,
      )
      .all(collection.id, prefix.length, prefix, limit, offset)
    return { total, rows }
  }

  listDocuments(collection: CollectionRow, prefix: string, limit: number, offset: number): DocumentPage {
    const total = this.countDocuments(collection, prefix)
    const rows = this.db
      .query<DocumentRow, (string | number)[]>(
        `SELECT d.id AS row, d.doc_id, d.metadata, d.created_at, i.title, i.type, i.bytes, i.source,
                coalesce(i.content_hash, d.content_hash) AS content_hash,
                (SELECT count(*) FROM rag_chunks c WHERE c.document_id = d.id) AS chunks
         FROM rag_documents d LEFT JOIN rag_document_info i ON i.document_id = d.id
         WHERE d.collection_id = ? AND substr(d.doc_id, 1, ?) = ? ORDER BY d.doc_id LIMIT ? OFFSET ?`,
      )
      .all(collection.id, prefix.length, prefix, limit, offset)
    return { total, rows }
  }

  getDocument(collection: CollectionRow, docId: string): (DocumentRow & { text: string; chunk_pages: string | null }) | null {
    const row = this.db
      .query<DocumentRow & { text: string | null; chunk_pages: string | null }, [number, string]>(
        `SELECT d.id AS row, d.doc_id, d.metadata, d.created_at, i.title, i.type, i.bytes, i.source, i.text, i.chunk_pages,
                coalesce(i.content_hash, d.content_hash) AS content_hash,
                (SELECT count(*) FROM rag_chunks c WHERE c.document_id = d.id) AS chunks
         FROM rag_documents d LEFT JOIN rag_document_info i ON i.document_id = d.id
         WHERE d.collection_id = ? AND d.doc_id = ?`,
      )
      .get(collection.id, docId)
    if (!row) return null
    // Documents ingested before full texts were kept: their chunks, in order, are what there is.
    const text =
      row.text ??
      this.db
        .query<{ content: string }, [number]>('SELECT content FROM rag_chunks WHERE document_id = ? ORDER BY position')
        .all(row.row)
        .map((c) => c.content)
        .join('\n\n')
    return { ...row, text }
  }

  chunkPages(collection: CollectionRow, docIds: string[]): Map<string, string> {
    const rows = this.db
      .query<{ doc_id: string; chunk_pages: string }, (string | number)[]>(
        `SELECT d.doc_id, i.chunk_pages FROM rag_documents d JOIN rag_document_info i ON i.document_id = d.id
         WHERE d.collection_id = ? AND i.chunk_pages IS NOT NULL AND d.doc_id IN (${docIds.map(() => '?').join(',')})`,
      )
      .all(collection.id, ...docIds)
    return new Map(rows.map((row) => [row.doc_id, row.chunk_pages]))
  }
}
