import type { Database } from 'bun:sqlite'
import { createHash } from 'node:crypto'
import { notFound } from '../../../core/errors'
import type { RagService, SearchResult } from '../service'
import type { CollectionRow } from '../store'

/** A document to ingest, with what the documents listing shows about it. */
export interface DocumentInput {
  id: string
  content: string
  metadata?: Record<string, unknown>
  /** Default: metadata.title, else the id. */
  title?: string
  /** Default: `text`. */
  type?: string
  /** Size of the source in bytes. Default: the content's UTF-8 length. */
  bytes?: number
  /** Where the document came from (a path), when the caller says. */
  source?: string | null
  /** SHA-256 (hex) of the source bytes. Default: of the content. */
  contentHash?: string
  /** Offsets in `content` where each page starts (PDF), so chunks know their page. */
  pageStarts?: number[]
}

export type DocumentStatus = 'ingested' | 'unchanged' | 'failed'

export interface DocumentOutcome {
  id: string
  status: DocumentStatus
  contentHash: string
  chunks?: number
  message?: string
}

export interface ListOptions {
  prefix?: string
  limit: number
  offset: number
  /** `hashes`: only id, source and contentHash — the cheap listing `rag sync` compares against. */
  view: 'full' | 'hashes'
}

interface DocumentRow {
  row: number
  doc_id: string
  metadata: string
  created_at: string
  title: string | null
  type: string | null
  bytes: number | null
  source: string | null
  content_hash: string
  chunks: number
}

/** Stored for paged documents (PDF): how many pages, and the page of each chunk. */
interface PagedChunks {
  pages: number
  chunks: number[]
}

export const sha256 = (data: string | Uint8Array) => createHash('sha256').update(data).digest('hex')

const BATCH = 500

/** Page (1-based) of each chunk: where its text starts in the document, against the page offsets. */
function chunkPages(text: string, chunks: string[], pageStarts: number[]): number[] {
  let cursor = 0
  return chunks.map((chunk) => {
    let at = text.indexOf(chunk, cursor)
    if (at < 0) at = Math.max(0, text.indexOf(chunk))
    cursor = at + 1
    let page = 1
    while (page < pageStarts.length && pageStarts[page]! <= at) page++
    return page
  })
}

/**
 * The knowledge base's documents: ingest that knows each document's source hash (an unchanged
 * document is not ingested again), title, type, size and full text, and listings of them.
 * Chunking, embedding and the indexes are the RagService's; this adds one row per document
 * (rag_document_info, removed with the document).
 */
export class DocumentLibrary {
  constructor(
    private readonly rag: RagService,
    private readonly db: Database,
  ) {}

  /** What some document ids of a collection hold now: hash and metadata as stored. */
  private stored(collection: CollectionRow, ids: string[]): Map<string, { hash: string; metadata: string }> {
    const found = new Map<string, { hash: string; metadata: string }>()
    for (let i = 0; i < ids.length; i += BATCH) {
      const part = ids.slice(i, i + BATCH)
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

  /**
   * Ingests documents: those whose id already holds the same source hash and metadata are
   * `unchanged` and not touched; the others are chunked, embedded and written (replacing their earlier version in one
   * transaction), then described in rag_document_info.
   */
  async ingest(userId: string, name: string, documents: DocumentInput[]) {
    const started = performance.now()
    const withHash = documents.map((document) => ({ ...document, contentHash: document.contentHash ?? sha256(document.content) }))
    const existing = this.rag.store.findCollection(userId, name)
    const stored = existing ? this.stored(existing, withHash.map((d) => d.id)) : new Map<string, { hash: string; metadata: string }>()
    // Unchanged: the same source bytes and the same metadata (a corrected title is an update).
    const isUnchanged = (d: (typeof withHash)[number]) => {
      const now = stored.get(d.id)
      return now !== undefined && now.hash === d.contentHash && now.metadata === JSON.stringify(d.metadata ?? {})
    }
    const unchanged = withHash.filter(isUnchanged)
    const changed = withHash.filter((d) => !isUnchanged(d))
    const outcomes = new Map<string, DocumentOutcome>()
    for (const d of unchanged) outcomes.set(d.id, { id: d.id, status: 'unchanged', contentHash: d.contentHash })
    let result = { success: true, ingested: 0, failed: 0, collection: name, processingTime: 0, errors: [] as { id: string; message: string }[] }
    if (changed.length) {
      const byId = new Map(changed.map((d) => [d.id, d]))
      const written = new Map<string, number>()
      // The info row is written in the same transaction as the document's chunks: a full disk or a
      // crash leaves both or neither, so a 507 never leaves a document behind it.
      const info = this.describer()
      result = await this.rag.ingest(
        userId,
        name,
        changed.map((d) => ({ id: d.id, content: d.content, metadata: d.metadata })),
        (documentRow, document) => {
          const d = byId.get(document.docId)
          if (!d) return
          info(documentRow, d, document.chunks)
          written.set(d.id, document.chunks.length)
        },
      )
      const failed = new Map(result.errors.map((e) => [e.id, e.message]))
      for (const d of changed) {
        const message = failed.get(d.id)
        outcomes.set(
          d.id,
          message !== undefined
            ? { id: d.id, status: 'failed', contentHash: d.contentHash, message }
            : { id: d.id, status: 'ingested', contentHash: d.contentHash, chunks: written.get(d.id) ?? 0 },
        )
      }
    }
    return {
      ...result,
      unchanged: unchanged.length,
      processingTime: Math.round(performance.now() - started),
      documents: withHash.map((d) => outcomes.get(d.id)!),
    }
  }

  /** Writes one document's info row (title, type, size, text, source, hash, pages of its chunks). */
  private describer() {
    const insert = this.db.query(
      `INSERT INTO rag_document_info (document_id, title, type, bytes, text, source, content_hash, chunk_pages) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    return (documentRow: number, d: DocumentInput & { contentHash: string }, texts: string[]) => {
      const metadataTitle = typeof d.metadata?.title === 'string' && d.metadata.title ? d.metadata.title : null
      insert.run(
        documentRow,
        d.title ?? metadataTitle ?? d.id,
        d.type ?? 'text',
        d.bytes ?? Buffer.byteLength(d.content),
        d.content,
        d.source ?? null,
        d.contentHash,
        d.pageStarts && d.pageStarts.length > 0 ? JSON.stringify({ pages: d.pageStarts.length, chunks: chunkPages(d.content, texts, d.pageStarts) } satisfies PagedChunks) : null,
      )
    }
  }

  list(userId: string, name: string, options: ListOptions) {
    const collection = this.rag.collection(userId, name)
    const prefix = options.prefix ?? ''
    const where = 'd.collection_id = ? AND substr(d.doc_id, 1, ?) = ?'
    const args = [collection.id, prefix.length, prefix] as const
    const total = (this.db.query(`SELECT count(*) AS n FROM rag_documents d WHERE ${where}`).get(...args) as { n: number }).n
    if (options.view === 'hashes') {
      const documents = this.db
        .query<{ id: string; source: string | null; contentHash: string }, (string | number)[]>(
          `SELECT d.doc_id AS id, i.source AS source, coalesce(i.content_hash, d.content_hash) AS contentHash
           FROM rag_documents d LEFT JOIN rag_document_info i ON i.document_id = d.id
           WHERE ${where} ORDER BY d.doc_id LIMIT ? OFFSET ?`,
        )
        .all(...args, options.limit, options.offset)
      return { collection: name, documents, total, limit: options.limit, offset: options.offset, hasMore: options.offset + documents.length < total }
    }
    const rows = this.db
      .query<DocumentRow, (string | number)[]>(
        `SELECT d.id AS row, d.doc_id, d.metadata, d.created_at, i.title, i.type, i.bytes, i.source,
                coalesce(i.content_hash, d.content_hash) AS content_hash,
                (SELECT count(*) FROM rag_chunks c WHERE c.document_id = d.id) AS chunks
         FROM rag_documents d LEFT JOIN rag_document_info i ON i.document_id = d.id
         WHERE ${where} ORDER BY d.doc_id LIMIT ? OFFSET ?`,
      )
      .all(...args, options.limit, options.offset)
    const documents = rows.map((row) => this.summary(row))
    return { collection: name, documents, total, limit: options.limit, offset: options.offset, hasMore: options.offset + documents.length < total }
  }

  private summary(row: DocumentRow) {
    const metadata = JSON.parse(row.metadata) as Record<string, unknown>
    return {
      id: row.doc_id,
      title: row.title ?? (typeof metadata.title === 'string' && metadata.title ? metadata.title : row.doc_id),
      type: row.type ?? 'text',
      chunks: row.chunks,
      bytes: row.bytes ?? 0,
      ingestedAt: row.created_at,
      source: row.source,
      contentHash: row.content_hash,
    }
  }

  /** One document: its summary, metadata and full extracted text. */
  get(userId: string, name: string, id: string) {
    const collection = this.rag.collection(userId, name)
    const row = this.db
      .query<DocumentRow & { text: string | null; chunk_pages: string | null }, [number, string]>(
        `SELECT d.id AS row, d.doc_id, d.metadata, d.created_at, i.title, i.type, i.bytes, i.source, i.text, i.chunk_pages,
                coalesce(i.content_hash, d.content_hash) AS content_hash,
                (SELECT count(*) FROM rag_chunks c WHERE c.document_id = d.id) AS chunks
         FROM rag_documents d LEFT JOIN rag_document_info i ON i.document_id = d.id
         WHERE d.collection_id = ? AND d.doc_id = ?`,
      )
      .get(collection.id, id)
    if (!row) throw notFound(`Document ${id} in collection ${name}`)
    // Documents ingested before full texts were kept: their chunks, in order, are what there is.
    const text =
      row.text ??
      this.db
        .query<{ content: string }, [number]>('SELECT content FROM rag_chunks WHERE document_id = ? ORDER BY position')
        .all(row.row)
        .map((c) => c.content)
        .join('\n\n')
    const paged = row.chunk_pages ? (JSON.parse(row.chunk_pages) as PagedChunks) : null
    return {
      ...this.summary(row),
      metadata: JSON.parse(row.metadata) as Record<string, unknown>,
      ...(paged ? { pages: paged.pages } : {}),
      text,
    }
  }

  /** Adds `page` to the metadata of results that come from a paged document (PDF). */
  withPages(userId: string, name: string, results: SearchResult[]): SearchResult[] {
    if (!results.length) return results
    const collection = this.rag.store.findCollection(userId, name)
    if (!collection) return results
    const ids = [...new Set(results.map((r) => r.id))]
    const rows = this.db
      .query<{ doc_id: string; chunk_pages: string }, (string | number)[]>(
        `SELECT d.doc_id, i.chunk_pages FROM rag_documents d JOIN rag_document_info i ON i.document_id = d.id
         WHERE d.collection_id = ? AND i.chunk_pages IS NOT NULL AND d.doc_id IN (${ids.map(() => '?').join(',')})`,
      )
      .all(collection.id, ...ids)
    if (!rows.length) return results
    const pages = new Map(rows.map((row) => [row.doc_id, (JSON.parse(row.chunk_pages) as PagedChunks).chunks]))
    return results.map((result) => {
      const page = pages.get(result.id)?.[result.metadata.chunk as number]
      return page === undefined ? result : { ...result, metadata: { ...result.metadata, page } }
    })
  }
}
