import { createHash } from 'node:crypto'
import { notFound } from '../../../core/errors'
import type { MaybePromise } from '../../../db/maybe-promise'
import type { EmbedOptions } from '../../../ml'
import type { AuditContext } from '../../audit/service'
import type { RagService, SearchResult } from '../service'
import type { CollectionRow, DocumentInfo, DocumentRow, RagStore } from '../store'
import { runSteps, wait } from '../steps'

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
  /** Pages read by OCR, with the engine's confidence: their chunks carry `metadata.ocr`. */
  ocr?: { page: number; confidence: number }[]
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

/** Stored for paged documents (PDF): how many pages, the page of each chunk, and the pages read by OCR. */
interface PagedChunks {
  pages: number
  chunks: number[]
  ocr?: { page: number; confidence: number }[]
}

export const sha256 = (data: string | Uint8Array) => createHash('sha256').update(data).digest('hex')

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
  constructor(private readonly rag: RagService<RagStore>) {}

  private get store(): RagStore {
    return this.rag.store
  }

  /**
   * Ingests documents: those whose id already holds the same source hash and metadata are
   * `unchanged` and not touched; the others are chunked, embedded and written (replacing their earlier version in one
   * transaction), then described in rag_document_info. `run.signal` stops it (see RagService.ingest).
   */
  async ingest(userId: string, name: string, documents: DocumentInput[], context?: AuditContext, run: EmbedOptions = {}) {
    const started = performance.now()
    const withHash = documents.map((document) => ({ ...document, contentHash: document.contentHash ?? sha256(document.content) }))
    const existing = await this.rag.writable(userId, name)
    const stored = existing ? await this.store.documentHashes(existing, withHash.map((d) => d.id)) : new Map<string, { hash: string; metadata: string }>()
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
      result = await this.rag.ingest(
        userId,
        name,
        changed.map((d) => ({ id: d.id, content: d.content, metadata: d.metadata })),
        (document) => {
          const d = byId.get(document.docId)
          if (!d) return null
          written.set(d.id, document.chunks.length)
          return describe(d, document.chunks)
        },
        context,
        run,
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

  /** The collection an ingest or upload would write to (see RagService.writable). */
  writable(userId: string, ref: string) {
    return this.rag.writable(userId, ref)
  }

  list(userId: string, name: string, options: ListOptions) {
    const store = this.store
    const rag = this.rag
    const summary = (row: DocumentRow) => this.summary(row)
    return runSteps(
      (function* () {
        const collection = yield* wait(rag.collection(userId, name))
        const prefix = options.prefix ?? ''
        const paging = { limit: options.limit, offset: options.offset }
        if (options.view === 'hashes') {
          const { total, rows: documents } = yield* wait(store.listDocumentHashes(collection, prefix, options.limit, options.offset))
          return { collection: name, documents, total, ...paging, hasMore: options.offset + documents.length < total }
        }
        const { total, rows } = yield* wait(store.listDocuments(collection, prefix, options.limit, options.offset))
        const documents = rows.map(summary)
        return { collection: name, documents, total, ...paging, hasMore: options.offset + documents.length < total }
      })(),
    )
  }

  private summary(row: DocumentRow) {
    const metadata = JSON.parse(row.metadata) as Record<string, unknown>
    return {
      id: row.doc_id,
      title: row.title ?? (typeof metadata.title === 'string' && metadata.title ? metadata.title : row.doc_id),
      type: row.type ?? 'text',
      chunks: Number(row.chunks),
      bytes: row.bytes === null ? 0 : Number(row.bytes),
      ingestedAt: row.created_at,
      source: row.source,
      contentHash: row.content_hash,
    }
  }

  /**
   * Removes the documents whose id starts with `prefix` and is not in `keep`: the messages gone
   * from a mailbox uploaded again. Returns their ids.
   */
  async removeOthers(userId: string, name: string, prefix: string, keep: Set<string>, context?: AuditContext): Promise<string[]> {
    const { documents } = await this.list(userId, name, { prefix, limit: 10_000, offset: 0, view: 'hashes' })
    const gone = documents.map((document) => document.id).filter((id) => !keep.has(id))
    for (const id of gone) await this.rag.deleteDocument(userId, name, id, context)
    return gone
  }

  /** One document: its summary, metadata and full extracted text. */
  get(userId: string, name: string, id: string) {
    const store = this.store
    const rag = this.rag
    const summary = (row: DocumentRow) => this.summary(row)
    return runSteps(
      (function* () {
        const collection = yield* wait(rag.collection(userId, name))
        const row = yield* wait(store.getDocument(collection, id))
        if (!row) throw notFound(`Document ${id} in collection ${name}`)
        const paged = row.chunk_pages ? (JSON.parse(row.chunk_pages) as PagedChunks) : null
        return {
          ...summary(row),
          metadata: JSON.parse(row.metadata) as Record<string, unknown>,
          ...(paged ? { pages: paged.pages } : {}),
          ...(paged?.ocr?.length ? { ocr: paged.ocr } : {}),
          text: row.text,
        }
      })(),
    )
  }

  /** Adds `page` (and `ocr: true` for a page read by OCR) to the metadata of results that come from a paged document. */
  withPages(userId: string, name: string, results: SearchResult[]): MaybePromise<SearchResult[]> {
    if (!results.length) return results
    const resolver = this.rag.resolver
    const pagesIn = (collection: CollectionRow) => this.withPagesIn(collection, results)
    return runSteps(
      (function* () {
        const collection = (yield* resolver.find(userId, name))?.collection
        return collection ? yield* wait(pagesIn(collection)) : results
      })(),
    )
  }

  /** withPages() for results of a collection already resolved. */
  withPagesIn(collection: CollectionRow, results: SearchResult[]): MaybePromise<SearchResult[]> {
    if (!results.length) return results
    const store = this.store
    return runSteps(
      (function* () {
        const found = yield* wait(store.chunkPages(collection, [...new Set(results.map((r) => r.id))]))
        if (!found.size) return results
        const paged = new Map([...found].map(([docId, json]) => [docId, JSON.parse(json) as PagedChunks]))
        return results.map((result) => {
          const document = paged.get(result.id)
          const page = document?.chunks[result.metadata.chunk as number]
          if (page === undefined) return result
          const ocr = document!.ocr?.some((p) => p.page === page)
          return { ...result, metadata: { ...result.metadata, page, ...(ocr ? { ocr: true } : {}) } }
        })
      })(),
    )
  }
}

/** A document's info row (title, type, size, text, source, hash, pages of its chunks). */
function describe(d: DocumentInput & { contentHash: string }, texts: string[]): DocumentInfo {
  const metadataTitle = typeof d.metadata?.title === 'string' && d.metadata.title ? d.metadata.title : null
  return {
    title: d.title ?? metadataTitle ?? d.id,
    type: d.type ?? 'text',
    bytes: d.bytes ?? Buffer.byteLength(d.content),
    text: d.content,
    source: d.source ?? null,
    contentHash: d.contentHash,
    chunkPages:
      d.pageStarts && d.pageStarts.length > 0
        ? JSON.stringify({ pages: d.pageStarts.length, chunks: chunkPages(d.content, texts, d.pageStarts), ...(d.ocr?.length ? { ocr: d.ocr } : {}) } satisfies PagedChunks)
        : null,
  }
}
