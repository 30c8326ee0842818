import type { Postgres } from '../../../../db/postgres'
import type { CollectionRow, DocumentHashes, DocumentPage, DocumentRow } from '../../store'

// The document library's reads in PostgreSQL (PostgresRagStore's): listings, one document, hashes, pages.

export async function documentHashes(sql: Postgres, collection: CollectionRow, docIds: string[]): Promise<Map<string, { hash: string; metadata: string }>> {
  const found = new Map<string, { hash: string; metadata: string }>()
  if (!docIds.length) return found
  const rows = await sql`SELECT d.doc_id, i.content_hash AS hash, d.metadata FROM rag_documents d JOIN rag_document_info i ON i.document_id = d.id
    WHERE d.collection_id = ${collection.id} AND d.doc_id = ANY(${docIds}::text[])`
  for (const row of rows) found.set(row.doc_id, { hash: row.hash, metadata: row.metadata })
  return found
}

async function countDocuments(sql: Postgres, collection: CollectionRow, prefix: string): Promise<number> {
  const [row] = await sql`SELECT count(*)::int AS n FROM rag_documents WHERE collection_id = ${collection.id} AND starts_with(doc_id, ${prefix})`
  return Number(row.n)
}

export async function listDocumentHashes(sql: Postgres, collection: CollectionRow, prefix: string, limit: number, offset: number): Promise<DocumentHashes> {
  const total = await countDocuments(sql, collection, prefix)
  const rows = await sql`SELECT d.doc_id AS id, i.source AS source, coalesce(i.content_hash, d.content_hash) AS "contentHash"
    FROM rag_documents d LEFT JOIN rag_document_info i ON i.document_id = d.id
    WHERE d.collection_id = ${collection.id} AND starts_with(d.doc_id, ${prefix}) ORDER BY d.doc_id LIMIT ${limit} OFFSET ${offset}`
  return { total, rows: rows.map((row: { id: string; source: string | null; contentHash: string }) => ({ id: row.id, source: row.source, contentHash: row.contentHash })) }
}

export async function listDocuments(sql: Postgres, collection: CollectionRow, prefix: string, limit: number, offset: number): Promise<DocumentPage> {
  const total = await countDocuments(sql, collection, prefix)
  const rows = await sql`SELECT d.id AS row, d.doc_id, d.metadata, d.created_at, i.title, i.type, i.bytes, i.source,
      coalesce(i.content_hash, d.content_hash) AS content_hash,
      (SELECT count(*)::int FROM rag_chunks c WHERE c.document_id = d.id) AS chunks
    FROM rag_documents d LEFT JOIN rag_document_info i ON i.document_id = d.id
    WHERE d.collection_id = ${collection.id} AND starts_with(d.doc_id, ${prefix}) ORDER BY d.doc_id LIMIT ${limit} OFFSET ${offset}`
  return { total, rows: rows.map(documentRow) }
}

export async function getDocument(sql: Postgres, collection: CollectionRow, docId: string): Promise<(DocumentRow & { text: string; chunk_pages: string | null }) | null> {
  const [row] = await sql`SELECT d.id AS row, d.doc_id, d.metadata, d.created_at, i.title, i.type, i.bytes, i.source, i.text, i.chunk_pages,
      coalesce(i.content_hash, d.content_hash) AS content_hash,
      (SELECT count(*)::int FROM rag_chunks c WHERE c.document_id = d.id) AS chunks
    FROM rag_documents d LEFT JOIN rag_document_info i ON i.document_id = d.id
    WHERE d.collection_id = ${collection.id} AND d.doc_id = ${docId}`
  if (!row) return null
  let text = row.text as string | null
  if (text === null) {
    const chunks = await sql`SELECT content FROM rag_chunks WHERE document_id = ${row.row} ORDER BY position`
    text = chunks.map((c: { content: string }) => c.content).join('\n\n')
  }
  return { ...documentRow(row), text: text!, chunk_pages: row.chunk_pages ?? null }
}

export async function chunkPages(sql: Postgres, collection: CollectionRow, docIds: string[]): Promise<Map<string, string>> {
  const rows = await sql`SELECT d.doc_id, i.chunk_pages FROM rag_documents d JOIN rag_document_info i ON i.document_id = d.id
    WHERE d.collection_id = ${collection.id} AND i.chunk_pages IS NOT NULL AND d.doc_id = ANY(${docIds}::text[])`
  return new Map(rows.map((row: { doc_id: string; chunk_pages: string }) => [row.doc_id, row.chunk_pages]))
}

function documentRow(row: Record<string, unknown>): DocumentRow {
  return {
    row: Number(row.row),
    doc_id: row.doc_id as string,
    metadata: row.metadata as string,
    created_at: row.created_at as string,
    title: (row.title as string | null) ?? null,
    type: (row.type as string | null) ?? null,
    bytes: row.bytes === null || row.bytes === undefined ? null : Number(row.bytes),
    source: (row.source as string | null) ?? null,
    content_hash: row.content_hash as string,
    chunks: Number(row.chunks),
  }
}
