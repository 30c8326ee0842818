import type { Database } from 'bun:sqlite'
import type { WorkerCalls } from '../../../../core/worker-calls'
import type { MaybePromise } from '../../../../db/maybe-promise'
import { BLOCK, buildPostings, ChunkLengthsCache, postingsBytes, searchTopK, type TermPostings, type TopKTerm } from './postings'

export interface KeywordTopKOptions {
  /** Memory the kept postings may take, in all (least recently used dropped first); 0 turns keyword top-k off. */
  budgetBytes: number
  /** Collections of this many chunks and more are searched by top-k; smaller ones as before. */
  minChunks: number
  /** Terms in this many chunks or more have their postings kept (read ahead on a thread); rarer ones are read at query time. */
  keptFrom: number
}

/** UAGENT_KEYWORD_POSTINGS_MB's default. */
export const DEFAULT_KEYWORD_POSTINGS_MB = 128
export const DEFAULT_KEYWORD_TOPK: KeywordTopKOptions = { budgetBytes: DEFAULT_KEYWORD_POSTINGS_MB * 1024 * 1024, minChunks: 50_000, keptFrom: 2_000 }
/** Deleted chunks remembered per collection (skipped in kept postings); past it the collection's postings are read again. */
const DELETED_LIMIT = 10_000

interface CollectionPostings {
  /** Changes whenever the kept postings stop being valid (chunks added, too many deleted): builds asked for before are dropped. */
  generation: number
  /** Kept postings by term; null: the term cannot be kept (larger than the budget, or counts past 16 bits). */
  kept: Map<string, TermPostings | null>
  /** Chunks deleted since the postings were read (they may still be listed in them). */
  deleted: Set<number>
  /**
   * Changes with every deletion (from a counter of this store's, so that a collection made again
   * under a deleted one's id never matches it): chunk lengths read before are read again whole (a
   * deleted chunk's id may come back with another text).
   */
  deletions: number
}

/**
 * Keyword top-k for large collections (see postings.ts): the postings of their common terms are
 * read ahead from the collection's FTS5 index on the warm-up thread into shared memory and kept
 * here (least recently used dropped past the budget); a query's top k is then found on the keyword
 * thread by block-max MaxScore over them and the postings of its rarer terms, read there at once.
 * Kept postings are the index's as of their reading: chunks added since make them stale (they are
 * dropped and read again), chunks deleted since are skipped. Without threads (an in-memory
 * database) both run here.
 */
export class KeywordTopK {
  private readonly collections = new Map<number, CollectionPostings>()
  /** Kept postings by `collection:term`, least recently used first, with their bytes. */
  private readonly recency = new Map<string, { collectionId: number; term: string; bytes: number }>()
  private bytes = 0
  /** Terms waiting to be read, by collection; one read in flight at a time. */
  private readonly wanted = new Map<number, { table: string; terms: Set<string> }>()
  private building: Promise<void> | null = null
  private readonly lengths = new ChunkLengthsCache()
  private deletionCount = 0

  constructor(
    private readonly db: Database,
    private readonly reader: WorkerCalls | null,
    private readonly builder: WorkerCalls | null,
    readonly options: KeywordTopKOptions,
  ) {}

  get enabled(): boolean {
    return this.options.budgetBytes > 0
  }

  private collection(collectionId: number): CollectionPostings {
    let entry = this.collections.get(collectionId)
    if (!entry) this.collections.set(collectionId, (entry = { generation: 0, kept: new Map(), deleted: new Set(), deletions: ++this.deletionCount }))
    return entry
  }

  /** After a committed write: added chunks make the kept postings stale; deleted ones are skipped in them. */
  written(collectionId: number, removed: number[], added: number): void {
    const entry = this.collections.get(collectionId)
    if (!entry) return
    if (removed.length) entry.deletions = ++this.deletionCount
    for (const id of removed) entry.deleted.add(id)
    if (added > 0 || entry.deleted.size > DELETED_LIMIT) this.forget(collectionId, entry)
  }

  /** A collection deleted (its id may be reused): nothing of it is kept. */
  dropped(collectionId: number): void {
    const entry = this.collections.get(collectionId)
    if (entry) this.forget(collectionId, entry)
    this.collections.delete(collectionId)
    this.wanted.delete(collectionId)
  }

  private forget(collectionId: number, entry: CollectionPostings): void {
    entry.generation++
    entry.deleted.clear()
    for (const term of entry.kept.keys()) this.release(collectionId, term)
    entry.kept.clear()
  }

  private release(collectionId: number, term: string): void {
    const key = `${collectionId}:${term}`
    const held = this.recency.get(key)
    if (!held) return
    this.bytes -= held.bytes
    this.recency.delete(key)
  }

  /** Keeps a term's postings, dropping the least recently used past the budget (null when it cannot fit at all). */
  private keep(collectionId: number, entry: CollectionPostings, term: string, postings: TermPostings | null): void {
    const bytes = postings ? postingsBytes(postings) : 0
    if (!postings || bytes > this.options.budgetBytes) {
      entry.kept.set(term, null)
      return
    }
    while (this.bytes + bytes > this.options.budgetBytes && this.recency.size) {
      const [key, oldest] = this.recency.entries().next().value!
      this.recency.delete(key)
      this.bytes -= oldest.bytes
      this.collections.get(oldest.collectionId)?.kept.delete(oldest.term)
    }
    entry.kept.set(term, postings)
    this.recency.set(`${collectionId}:${term}`, { collectionId, term, bytes })
    this.bytes += bytes
  }

  /** Bytes of postings kept now. */
  get keptBytes(): number {
    return this.bytes
  }

  /**
   * The best k chunks by BM25 over `terms` (FTS5 tokens, each with its idf and document
   * frequency), best first with their positive scores; null when a common term's postings are not
   * read yet (they are asked for, and the caller searches as before meanwhile) or cannot be kept.
   */
  search(collectionId: number, table: string, terms: { token: string; idf: number; df: number }[], k: number, averageLength: number): MaybePromise<{ ids: Float64Array; scores: Float64Array } | null> | null {
    const entry = this.collection(collectionId)
    // Postings that could not all be kept at once would push each other out: such a query is searched as before.
    let estimate = 0
    for (const term of terms) if (term.df >= this.options.keptFrom) estimate += term.df * 8 + Math.ceil(term.df / BLOCK) * 4
    if (estimate > this.options.budgetBytes) return null
    const missing: string[] = []
    const query: (TopKTerm | string)[] = []
    for (const term of terms) {
      if (term.df < this.options.keptFrom) {
        query.push({ term: term.token, idf: term.idf })
        continue
      }
      const kept = entry.kept.get(term.token)
      if (kept === null) return null
      if (kept === undefined) {
        missing.push(term.token)
        query.push(term.token)
      } else {
        // Used now: last to be dropped.
        const key = `${collectionId}:${term.token}`
        const held = this.recency.get(key)!
        this.recency.delete(key)
        this.recency.set(key, held)
        query.push({ postings: kept, idf: term.idf })
      }
    }
    if (missing.length) {
      if (this.builder) {
        this.want(collectionId, table, missing)
        return null
      }
      // No thread: read here and now (an in-memory database, small by nature), used by this query whatever is kept.
      const { postings } = buildPostings(this.db, table, missing, entry.deletions, this.lengths, false)
      const read = new Map(missing.map((term, i) => [term, postings[i]!]))
      missing.forEach((term) => this.keep(collectionId, entry, term, read.get(term)!))
      for (const [i, term] of query.entries()) {
        if (typeof term !== 'string') continue
        const postings = read.get(term)
        if (!postings) return null
        query[i] = { postings, idf: terms[i]!.idf }
      }
    }
    return this.run(entry, table, query as TopKTerm[], k, averageLength)
  }

  private run(entry: CollectionPostings, table: string, query: TopKTerm[], k: number, averageLength: number): MaybePromise<{ ids: Float64Array; scores: Float64Array } | null> {
    const deleted = entry.deleted.size ? new Set(entry.deleted) : null
    if (!this.reader) return searchTopK(this.db, table, query, k, averageLength, deleted)
    let reply: Promise<{ ids?: Float64Array; scores?: Float64Array }>
    try {
      reply = this.reader.call({ kind: 'topk', file: this.db.filename, table, terms: query, k, averageLength, deleted: Uint32Array.from(deleted ?? []) })
    } catch {
      return searchTopK(this.db, table, query, k, averageLength, deleted)
    }
    return reply.then(
      (reply) => (reply.ids && reply.scores ? { ids: reply.ids, scores: reply.scores } : null),
      () => null,
    )
  }

  /** Asks for terms' postings to be read on the warm-up thread, one read at a time. */
  private want(collectionId: number, table: string, terms: string[]): void {
    let wanted = this.wanted.get(collectionId)
    if (!wanted) this.wanted.set(collectionId, (wanted = { table, terms: new Set() }))
    for (const term of terms) wanted.terms.add(term)
    if (!this.building) this.building = this.buildNext()
  }

  /** Resolves once every term asked for so far is read (tests; a benchmark's warm-up). */
  async settled(): Promise<void> {
    while (this.building) await this.building
  }

  private async buildNext(): Promise<void> {
    try {
      for (;;) {
        const next = this.wanted.entries().next()
        if (next.done) return
        const [collectionId, { table, terms }] = next.value
        this.wanted.delete(collectionId)
        const entry = this.collection(collectionId)
        const generation = entry.generation
        const asked = [...terms].filter((term) => !entry.kept.has(term))
        if (!asked.length) continue
        try {
          const reply = await this.builder!.call<{ postings?: (TermPostings | null)[]; failure?: string }>({ kind: 'postings', file: this.db.filename, table, terms: asked, deletions: entry.deletions })
          // Written meanwhile (or deleted): what was read may be stale; a later query asks again.
          if (!reply.postings || this.collections.get(collectionId) !== entry || entry.generation !== generation) continue
          asked.forEach((term, i) => this.keep(collectionId, entry, term, reply.postings![i]!))
        } catch {
          // The thread failed: searched as before; a later query asks again.
        }
      }
    } finally {
      this.building = null
    }
  }
}
