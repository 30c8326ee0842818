import type { Database } from 'bun:sqlite'
import { WorkerCalls } from '../../../../core/worker-calls'
import { andThen, type MaybePromise } from '../../../../db/maybe-promise'
import { phraseFrequency } from '../../ranking/phrase'
import { bm25, CAPPED_CANDIDATES, COMMON_SHARE, exactPhrases, ftsQueryOf, idf, KEYWORD_POSTINGS, type KeywordPlan, keywordPlan, queryPhrases, queryWords, RESCORE_POOL } from '../../ranking/scoring'
import type { CollectionRow, QueryTerm, QueryTerms } from '../../store'
import { distinctHits, type VectorCache } from '../../vectors/cache'
import { DEFAULT_KEYWORD_TOPK, KeywordTopK, type KeywordTopKOptions } from './keyword-topk'
import { readVarint } from './postings'

const ftsTable = (collectionId: number) => `rag_fts_${collectionId}`
const vocabTable = (collectionId: number) => `rag_fts_${collectionId}_vocab`
const TOKENIZER = 'porter unicode61 remove_diacritics 2'
const FREQUENCY_CACHE_LIMIT = 50_000
const WORD_TOKENS_LIMIT = 50_000
const CHUNK_TOKENS_LIMIT = 100_000

/** Where tokens occur in one chunk text, and which tokens were looked for (a token looked for and absent has no entry). */
interface ChunkTokens {
  offsets: Map<string, number[]>
  looked: Set<string>
}
/**
 * From this many chunks a collection's common terms are counted ahead whether or not its vectors
 * are in memory, and its counts from before a write stand in until they are counted again.
 */
const LARGE_COLLECTION = 50_000
/** Terms in this many chunks or more are counted ahead in a large collection (see warmFrequencies). */
const WARM_MIN_CHUNKS = 64

/** The order of a keyword query's matches (see keywordCandidates): one array for every search, grown as needed. */
let matchOrder = new Uint32Array(0)

/**
 * The keyword part of the SQLite RAG store: one FTS5 index per collection (external content over
 * rag_chunks), so that BM25's statistics (how many chunks, how long, how rare a word is) are the
 * collection's own; the words of queries as it sees them, their document frequencies (counted
 * ahead for large collections), and keyword candidates, read on a thread of their own for large
 * collections. SqliteRagStore keeps it in step with its writes (ensureFts, unindexDocument,
 * dropFts, forgetFrequencies).
 */
export class SqliteKeywords {
  private readonly ftsTables = new Set<number>()
  /** Chunks per collection, as counted since its last write. */
  readonly chunkCounts = new Map<number, number>()
  /**
   * Document frequency of terms per collection, since its last write: fts5vocab counts a term's
   * chunks by reading its whole posting list (7 ms for "the" at 100,000 chunks), and questions
   * repeat the same common words.
   */
  readonly frequencies = new Map<number, Map<string, number>>()
  private queryTokenizer = false
  /** Token offsets read from chunk texts, by the text's hash and length (see termCounts); how many tokens were looked for in all. */
  private readonly chunkTokens = new Map<string, ChunkTokens>()
  private chunkTokenCount = 0
  /** Tokens FTS5 made of each word (see tokensOf), at most WORD_TOKENS_LIMIT words. */
  private readonly wordTokens = new Map<string, string[]>()
  /** Large collections' keyword queries run on this thread, with a read-only connection of its own (a database file only). */
  readonly reader: WorkerCalls | null
  /** The thread that counts common terms ahead (see warmFrequencies), apart so that searches never wait behind it. */
  readonly warmer: WorkerCalls | null
  /** Frequency maps whose common terms were (or are being) counted ahead. */
  private readonly warmed = new WeakSet<Map<string, number>>()
  /**
   * A large collection's frequencies from before its last write, used while the new ones are
   * counted ahead (see forgetFrequencies): a write of a few documents moves a common term's count
   * in a million chunks by next to nothing, and counting it again reads its whole posting list.
   */
  readonly staleFrequencies = new Map<number, Map<string, number>>()

  constructor(
    private readonly db: Database,
    /** The store's in-memory vectors: where a collection's are, copies of one passage are told apart (see distinctHits). */
    private readonly cache: VectorCache,
    /** Postings ranked to find keyword candidates (see `keywordPlan`); smaller in tests, to reach the limit with a small corpus. */
    private readonly keywordPostings = KEYWORD_POSTINGS,
    topKOptions: KeywordTopKOptions = DEFAULT_KEYWORD_TOPK,
  ) {
    const onFile = Boolean(db.filename) && db.filename !== ':memory:'
    this.reader = onFile ? new WorkerCalls(new URL('./keyword-reader.worker.ts', import.meta.url).href) : null
    this.warmer = onFile ? new WorkerCalls(new URL('./keyword-reader.worker.ts', import.meta.url).href) : null
    this.topk = new KeywordTopK(db, this.reader, this.warmer, topKOptions)
  }

  /** Large collections' keyword top-k over postings of their own (see keyword-topk.ts). */
  readonly topk: KeywordTopK

  /** Stops the keyword threads. */
  close(): void {
    this.reader?.close()
    this.warmer?.close()
  }

  /**
   * The collection's FTS5 index (external content over rag_chunks). Built from its chunks when
   * missing: collections made before indexes were per collection get theirs on first use.
   */
  ensureFts(collectionId: number): string {
    const table = ftsTable(collectionId)
    if (this.ftsTables.has(collectionId)) return table
    if (!this.db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table)) {
      this.db.transaction(() => {
        this.db.run(
          `CREATE VIRTUAL TABLE ${table} USING fts5(content, content = 'rag_chunks', content_rowid = 'id', tokenize = '${TOKENIZER}')`,
        )
        this.db.run(`INSERT INTO ${table} (rowid, content) SELECT id, content FROM rag_chunks WHERE collection_id = ?`, [collectionId])
      }).immediate()
    }
    // Its vocabulary (document frequency of each term), read by keyword search; temp: this connection's, nothing on disk.
    this.db.run(`CREATE VIRTUAL TABLE IF NOT EXISTS temp.${vocabTable(collectionId)} USING fts5vocab(main, ${table}, row)`)
    this.ftsTables.add(collectionId)
    return table
  }

  /** The tokens FTS5 makes of each word (stemmed as the index stems them), through a scratch index of the same tokenizer. */
  private tokensOf(words: string[]): string[][] {
    if (!this.queryTokenizer) {
      // Contentless: 'delete-all' empties it outright (deleted rows would otherwise pile up as tombstones).
      this.db.run(`CREATE VIRTUAL TABLE IF NOT EXISTS temp.rag_query_tokens USING fts5(content, content = '', tokenize = '${TOKENIZER}')`)
      this.db.run('CREATE VIRTUAL TABLE IF NOT EXISTS temp.rag_query_vocab USING fts5vocab(temp, rag_query_tokens, instance)')
      this.queryTokenizer = true
    }
    // The tokenizer is fixed, so a word's tokens are too: words seen before are not tokenized again.
    const missing = [...new Set(words.filter((word) => !this.wordTokens.has(word)))]
    if (missing.length) {
      if (this.wordTokens.size + missing.length > WORD_TOKENS_LIMIT) this.wordTokens.clear()
      const tokens = missing.map(() => [] as string[])
      this.db.transaction(() => {
        const insert = this.db.query<never, [number, string]>('INSERT INTO temp.rag_query_tokens (rowid, content) VALUES (?, ?)')
        missing.forEach((word, i) => insert.run(i, word))
        for (const row of this.db.query<{ term: string; doc: number }, []>('SELECT term, doc FROM temp.rag_query_vocab ORDER BY doc, offset').all()) tokens[row.doc]!.push(row.term)
        this.db.run("INSERT INTO temp.rag_query_tokens (rag_query_tokens) VALUES ('delete-all')")
      })()
      missing.forEach((word, i) => this.wordTokens.set(word, tokens[i]!))
    }
    // Copies: callers may change what they get.
    return words.map((word) => [...this.wordTokens.get(word)!])
  }

  chunkCount(collectionId: number): number {
    let count = this.chunkCounts.get(collectionId)
    if (count === undefined) {
      count = (this.db.query<{ n: number }, [number]>('SELECT count(*) AS n FROM rag_chunks WHERE collection_id = ?').get(collectionId) as { n: number }).n
      this.chunkCounts.set(collectionId, count)
    }
    return count
  }

  /**
   * The words and phrases of a query as keyword search sees them: each with the tokens FTS5 makes
   * of it and its document frequency in the collection (for a phrase — quoted, or an identifier
   * kept whole — the chunks holding the phrase itself), and the collection's chunk count.
   */
  queryTerms(collection: CollectionRow, text: string): QueryTerms {
    const phrases = queryPhrases(text).map((phrase) => phrase.words.join(' '))
    const exact = exactPhrases(text)
    const words = [...queryWords(text), ...phrases]
    const chunks = this.chunkCount(collection.id)
    if (!words.length) return { terms: [], chunks, offsets: new Map() }
    const table = this.ensureFts(collection.id)
    const lookup = this.db.query<{ doc: number }, [string]>(`SELECT doc FROM temp.${vocabTable(collection.id)} WHERE term = ?`)
    let known = this.frequencies.get(collection.id)
    if (!known || known.size > FREQUENCY_CACHE_LIMIT) this.frequencies.set(collection.id, (known = new Map()))
    const stale = this.staleFrequencies.get(collection.id)
    const frequency = (token: string) => {
      let df = known.get(token) ?? stale?.get(token)
      if (df === undefined) known.set(token, (df = lookup.get(token)?.doc ?? 0))
      return df
    }
    const tokens = this.tokensOf(words)
    const phraseCount = this.db.query<{ n: number }, [string]>(`SELECT count(*) AS n FROM ${table} WHERE ${table} MATCH ?`)
    const terms = tokens.map((own, i): QueryTerm => {
      const word = words[i]!
      // A phrase's own count of chunks (BM25's idf for it); its words' counts only bound it.
      if (own.length > 1) {
        let df = known.get(`"${word}"`)
        if (df === undefined) known.set(`"${word}"`, (df = own.some((token) => frequency(token) === 0) ? 0 : phraseCount.get(ftsQueryOf([word])!)!.n))
        return { word, tokens: own, df, phrase: true, exact: exact.has(word) }
      }
      return { word, tokens: own, df: own.length ? frequency(own[0]!) : 0, phrase: false }
    })
    return { terms, chunks, offsets: new Map() }
  }

  /**
   * Keyword candidates for a query's terms (see `queryTerms`), best BM25 first: only the
   * informative terms are searched (see `keywordPlan`), so a question full of common words costs
   * what its rare words cost.
   */
  keywordCandidates(collection: CollectionRow, query: QueryTerms, k: number): { chunkId: number; bm25: number }[]
  keywordCandidates(collection: CollectionRow, query: QueryTerms, k: number, distinct?: { dropped: number }): MaybePromise<{ chunkId: number; bm25: number }[]>
  keywordCandidates(collection: CollectionRow, query: QueryTerms, k: number, distinct?: { dropped: number }): MaybePromise<{ chunkId: number; bm25: number }[]> {
    const { terms } = query
    if (!terms.length) return []
    const table = this.ensureFts(collection.id)
    const plan = keywordPlan(terms, query.chunks, this.keywordPostings)
    if (!plan.query) return []
    const pool = Math.max(k, RESCORE_POOL)
    // Twins (one passage copied into several documents) count once, where the collection's vectors
    // are in memory to tell them (see distinctHits): every match is read and ranked here, which
    // FTS5 does no faster (its own ORDER BY rank seeks each returned row again), and the copies
    // are left out. The plan keeps the matches within the postings budget. Such a collection is a
    // large one: its matches are read on the keyword thread while this one scans the vectors.
    const matrix = distinct ? this.cache.peek(collection.id) : undefined
    // A large collection's matches are read on the keyword thread also when its vectors are not in
    // memory (one served by its approximate index): the index is searched here meanwhile.
    const large = matrix !== undefined || (distinct !== undefined && query.chunks >= LARGE_COLLECTION)
    if (matrix || query.chunks >= LARGE_COLLECTION) this.warmFrequencies(collection.id, table)
    const planned = () => this.plannedCandidates(collection, table, query, plan, pool, k, large, matrix, distinct)
    const topk = this.topKCandidates(collection, table, query, plan, k, pool, matrix !== undefined)
    if (!topk) return planned()
    return andThen(topk.found, (found) => {
      if (!found) return planned()
      if (!this.ftsTables.has(collection.id)) return []
      const ranked = (function* () {
        for (let i = 0; i < found.ids.length; i++) yield { chunkId: found.ids[i]!, bm25: -found.scores[i]! }
      })()
      return this.rescored(collection, query, topk.plan, distinctHits(matrix, ranked, pool, (hit) => hit.bm25, distinct), k)
    })
  }

  /**
   * A large collection's keyword candidates by top-k over every informative word of the query
   * (found, and in at most COMMON_SHARE of the chunks: BM25 gives the others next to nothing; they
   * count when the candidates are rescored), where the plan is capped: even its rarest word matches
   * more chunks than are ranked, so its FTS5 query would rank an arbitrary CAPPED_CANDIDATES of them.
   * Where the plan is not capped, the best matches of its rare words alone, as its FTS5 query would
   * rank them, to be rescored with every word. Null where the query holds a phrase, or where top-k
   * is off. `found` null: the postings are not read yet (searched as before meanwhile).
   */
  private topKCandidates(collection: CollectionRow, table: string, query: QueryTerms, plan: KeywordPlan, k: number, pool: number, twins: boolean) {
    if (!this.topk.enabled || query.chunks < this.topk.options.minChunks) return null
    const present = query.terms.filter((term) => term.df > 0)
    if (present.some((term) => term.tokens.length !== 1)) return null
    const { rows, averageLength } = this.indexStatistics(collection.id)
    if (!plan.capped) {
      // The plan's rare words: the best `pool` of their matches by BM25 over them (what FTS5's
      // bm25() ranking of every match gives first, without scoring each match through FTS5: 28 ms
      // of ~6,000 matches at a million chunks), then rescored with every word as before.
      const kept = plan.words.map((word) => present.find((term) => term.word === word))
      if (kept.some((term) => !term)) return null
      const found = this.topk.search(
        collection.id,
        table,
        kept.map((term) => ({ token: term!.tokens[0]!, idf: idf(term!.df, rows), df: term!.df })),
        pool * (twins ? 2 : 1),
        averageLength,
      )
      return found ? { plan, found } : null
    }
    const informative = present.filter((term) => term.df <= rows * COMMON_SHARE)
    if (!informative.length) return null
    // The best k are the answer when they are scored with every word found; else the best `pool` are rescored. Copies left out take their place (twice as many).
    const size = (informative.length === plan.scored.length ? k : pool) * (twins ? 2 : 1)
    const found = this.topk.search(
      collection.id,
      table,
      informative.map((term) => ({ token: term.tokens[0]!, idf: idf(term.df, rows), df: term.df })),
      size,
      averageLength,
    )
    if (!found) return null
    return { plan: { ...plan, words: informative.map((term) => term.word) }, found }
  }

  /** Keyword candidates by the plan's FTS5 query (see keywordPlan): every match ranked, or the first CAPPED_CANDIDATES when capped. */
  private plannedCandidates(
    collection: CollectionRow,
    table: string,
    query: QueryTerms,
    plan: KeywordPlan,
    pool: number,
    k: number,
    large: boolean,
    matrix: ReturnType<VectorCache['peek']>,
    distinct: { dropped: number } | undefined,
  ): MaybePromise<{ chunkId: number; bm25: number }[]> {
    if (!plan.capped && !large) return this.rescored(collection, query, plan, this.keywordMatches(collection, plan.query!, pool), k)
    return andThen(this.allMatches(collection.id, table, plan.query!, plan.capped ? CAPPED_CANDIDATES : this.keywordPostings, large), ({ ids, ranks }) => {
      // Deleted while its matches were read on the keyword thread: nothing to rank.
      if (!this.ftsTables.has(collection.id)) return []
      // Best BM25 first (then rowid), as indices: objects only for the matches looked at. The
      // indices live in one scratch array, kept from search to search (read to the end right here).
      if (matchOrder.length < ids.length) matchOrder = new Uint32Array(Math.max(ids.length, matchOrder.length * 2))
      const order = matchOrder.subarray(0, ids.length)
      for (let i = 0; i < order.length; i++) order[i] = i
      order.sort((a, b) => ranks[a]! - ranks[b]! || ids[a]! - ids[b]!)
      const ranked = (function* () {
        for (const i of order) yield { chunkId: ids[i]!, bm25: ranks[i]! }
      })()
      return this.rescored(collection, query, plan, distinctHits(matrix, ranked, pool, (hit) => hit.bm25, distinct), k)
    })
  }

  /**
   * After a write: the collection's term frequencies are counted again. A large collection's
   * (LARGE_COLLECTION chunks or more) counted ahead are kept meanwhile, as stand-ins until the
   * new ones are counted (see staleFrequencies); a small one's are simply forgotten.
   */
  forgetFrequencies(collectionId: number): void {
    const known = this.frequencies.get(collectionId)
    this.frequencies.delete(collectionId)
    if ((this.chunkCounts.get(collectionId) ?? 0) < LARGE_COLLECTION) this.staleFrequencies.delete(collectionId)
    // A map not counted ahead yet leaves the older stand-ins in place.
    else if (known && this.warmed.has(known)) this.staleFrequencies.set(collectionId, known)
  }

  /**
   * Counts, on a thread of its own, the chunks of every term of a large collection's index that
   * WARM_MIN_CHUNKS chunks or more hold, once after each write: looking such a term up here reads
   * its whole posting list (a few milliseconds each at 100,000 chunks), which a question with a
   * common word not asked before would otherwise pay. What a write makes stale goes with the map.
   */
  private warmFrequencies(collectionId: number, table: string): void {
    if (!this.warmer) return
    let known = this.frequencies.get(collectionId)
    if (!known) this.frequencies.set(collectionId, (known = new Map()))
    if (this.warmed.has(known)) return
    const map = known
    this.warmed.add(map)
    let reply: Promise<{ terms?: string[]; counts?: number[] }>
    try {
      reply = this.warmer.call({ kind: 'frequent', file: this.db.filename, table, min: WARM_MIN_CHUNKS })
    } catch {
      return
    }
    reply
      .then(({ terms, counts }) => {
        if (!terms || !counts || this.frequencies.get(collectionId) !== map) return
        // The commonest first, within half the cache (the other half for what questions look up).
        const order = terms.map((_, i) => i).sort((a, b) => counts[b]! - counts[a]!)
        for (const i of order.slice(0, FREQUENCY_CACHE_LIMIT / 2)) map.set(terms[i]!, counts[i]!)
        this.staleFrequencies.delete(collectionId)
      })
      .catch(() => {})
  }

  /**
   * Every match of an FTS5 query (up to `limit`), in no order: read on the keyword thread when
   * `offThread` and the database is a file (the caller goes on meanwhile), else here, as it is
   * when the thread fails (unless the collection was deleted meanwhile: nothing then).
   */
  private allMatches(collectionId: number, table: string, ftsQuery: string, limit: number, offThread: boolean): MaybePromise<{ ids: Float64Array; ranks: Float64Array }> {
    const here = () => {
      const rows = this.db.query<unknown, [string, number]>(`SELECT rowid, bm25(${table}) FROM ${table} WHERE ${table} MATCH ? LIMIT ?`).values(ftsQuery, limit) as [number, number][]
      const ids = new Float64Array(rows.length)
      const ranks = new Float64Array(rows.length)
      rows.forEach(([id, rank], i) => {
        ids[i] = id
        ranks[i] = rank
      })
      return { ids, ranks }
    }
    if (!offThread || !this.reader) return here()
    let reply: Promise<{ ids?: Float64Array; ranks?: Float64Array; failure?: string }>
    try {
      reply = this.reader.call({ kind: 'matches', file: this.db.filename, table, query: ftsQuery, limit })
    } catch {
      // No thread could be started here: the query runs on this one.
      return here()
    }
    return reply
      .then((reply) => {
        if (!reply.ids || !reply.ranks) throw new Error(reply.failure ?? 'keyword thread failed')
        return { ids: reply.ids, ranks: reply.ranks }
      })
      .catch(() => (this.ftsTables.has(collectionId) ? here() : { ids: new Float64Array(0), ranks: new Float64Array(0) }))
  }

  /** Keyword hits (best first) with their BM25 by every informative word of the query, as if FTS5 had ranked them all: the first k. */
  private rescored(collection: CollectionRow, query: QueryTerms, plan: KeywordPlan, hits: { chunkId: number; bm25: number }[], k: number): { chunkId: number; bm25: number }[] {
    if (plan.scored.length === plan.words.length || !hits.length) return hits.slice(0, k)
    const scored = plan.scored.map((word) => query.terms.find((term) => term.word === word)!)
    const counts = this.tokenOffsets(
      query,
      hits.map((hit) => hit.chunkId),
    )
    const { rows, averageLength } = this.indexStatistics(collection.id)
    const lengths = this.chunkLengths(
      collection.id,
      hits.map((hit) => hit.chunkId),
    )
    return hits
      .map((hit) => {
        const own = counts.get(hit.chunkId)
        const tf = scored.map((term) => ({ tf: phraseFrequency(term.tokens, own), df: term.df }))
        return { chunkId: hit.chunkId, bm25: bm25(tf, lengths.get(hit.chunkId) ?? averageLength, averageLength, rows) }
      })
      .sort((a, b) => a.bm25 - b.bm25)
      .slice(0, k)
  }

  /** Which of `terms` (of `query`; indices into them) each chunk holds, as the keyword index reads the chunk. */
  termHoldings(query: QueryTerms, chunkIds: number[], terms: QueryTerm[]): Map<number, number[]> {
    const held = new Map<number, number[]>()
    if (!chunkIds.length || !terms.length) return held
    const counts = this.tokenOffsets(query, chunkIds)
    for (const chunkId of chunkIds) {
      const own = counts.get(chunkId)
      if (!own) continue
      const found = terms.flatMap((term, i) => (term.tokens.length && phraseFrequency(term.tokens, own) > 0 ? [i] : []))
      if (found.length) held.set(chunkId, found)
    }
    return held
  }

  /**
   * Where each of the query's tokens occurs in each of the chunks (token offsets), read once per
   * chunk and query (kept in `query.offsets`; a chunk holding none of them has an empty map).
   */
  private tokenOffsets(query: QueryTerms, chunkIds: number[]): Map<number, Map<string, number[]>> {
    const missing = chunkIds.filter((id) => !query.offsets.has(id))
    if (missing.length) {
      const read = this.termCounts(
        missing,
        query.terms.flatMap((term) => term.tokens),
      )
      for (const id of missing) query.offsets.set(id, read.get(id) ?? new Map())
    }
    return query.offsets
  }

  /**
   * Where each of `wanted` tokens occurs in each chunk (token offsets): the chunks' text run through
   * the index's tokenizer. The tokenizer is fixed, so what a text gives is kept (by the text's hash
   * and length, at most CHUNK_TOKENS_LIMIT tokens in all): a text is run through it again only for
   * tokens not looked for in it before.
   */
  private termCounts(chunkIds: number[], wanted: string[]): Map<number, Map<string, number[]>> {
    const tokens = [...new Set(wanted)]
    const counts = new Map<number, Map<string, number[]>>()
    const rows = this.db.query<{ id: number; content: string }, number[]>(`SELECT id, content FROM rag_chunks WHERE id IN (${chunkIds.map(() => '?').join(',')})`).all(...chunkIds)
    const unread: { id: number; content: string; known: ChunkTokens; missing: Set<string> }[] = []
    // Twin texts (one passage in several documents) share one entry: it is read once, not once per twin.
    const reading = new Set<ChunkTokens>()
    for (const row of rows) {
      const key = `${Bun.hash(row.content)}:${row.content.length}`
      let known = this.chunkTokens.get(key)
      if (!known) {
        known = { offsets: new Map(), looked: new Set() }
        this.chunkTokens.set(key, known)
      }
      const missing = new Set(tokens.filter((token) => !known.looked.has(token)))
      if (missing.size && !reading.has(known)) {
        reading.add(known)
        unread.push({ id: row.id, content: row.content, known, missing })
      }
      counts.set(row.id, known.offsets)
    }
    if (unread.length) {
      this.tokensOf([])
      this.db.transaction(() => {
        const insert = this.db.query<never, [number, string]>('INSERT INTO temp.rag_query_tokens (rowid, content) VALUES (?, ?)')
        unread.forEach((chunk, i) => insert.run(i, chunk.content))
        const instances = this.db.query<{ doc: number; offset: number }, [string]>('SELECT doc, offset FROM temp.rag_query_vocab WHERE term = ?')
        for (const token of new Set(unread.flatMap((chunk) => [...chunk.missing]))) {
          for (const { doc, offset } of instances.all(token)) {
            // A text read for other tokens may hold this one too, already kept from an earlier read.
            if (!unread[doc]!.missing.has(token)) continue
            const own = unread[doc]!.known.offsets
            let offsets = own.get(token)
            if (!offsets) own.set(token, (offsets = []))
            offsets.push(offset)
          }
        }
        this.db.run("INSERT INTO temp.rag_query_tokens (rag_query_tokens) VALUES ('delete-all')")
      })()
      for (const chunk of unread) {
        for (const token of chunk.missing) chunk.known.looked.add(token)
        this.chunkTokenCount += chunk.missing.size
      }
      if (this.chunkTokenCount > CHUNK_TOKENS_LIMIT) {
        // Kept for this call (the maps are in `counts`), forgotten for the next.
        this.chunkTokens.clear()
        this.chunkTokenCount = 0
      }
    }
    return counts
  }

  /** Rows and average row length (in tokens) of a collection's keyword index: FTS5's own figures, from its averages record. */
  private indexStatistics(collectionId: number): { rows: number; averageLength: number } {
    const record = this.db.query<{ block: Uint8Array }, []>(`SELECT block FROM ${ftsTable(collectionId)}_data WHERE id = 1`).get()
    if (!record) return { rows: 0, averageLength: 1 }
    const [rows, next] = readVarint(record.block, 0)
    const [tokens] = readVarint(record.block, next)
    return { rows, averageLength: rows ? Math.max(tokens / rows, 1) : 1 }
  }

  /** Each chunk's length in tokens, from FTS5's docsize table. */
  private chunkLengths(collectionId: number, chunkIds: number[]): Map<number, number> {
    return new Map(
      this.db
        .query<{ id: number; sz: Uint8Array }, number[]>(`SELECT id, sz FROM ${ftsTable(collectionId)}_docsize WHERE id IN (${chunkIds.map(() => '?').join(',')})`)
        .all(...chunkIds)
        .map((row) => [row.id, readVarint(row.sz, 0)[0]]),
    )
  }

  dropFts(collectionId: number): void {
    this.topk.dropped(collectionId)
    this.db.run(`DROP TABLE IF EXISTS temp.${vocabTable(collectionId)}`)
    this.db.run(`DROP TABLE IF EXISTS ${ftsTable(collectionId)}`)
    this.ftsTables.delete(collectionId)
  }

  /** Takes a document's chunks out of its collection's keyword index (before the rows go). */
  unindexDocument(collectionId: number, docId: string): void {
    const table = this.ensureFts(collectionId)
    this.db.run(
      `INSERT INTO ${table} (${table}, rowid, content)
       SELECT 'delete', c.id, c.content FROM rag_chunks c JOIN rag_documents d ON d.id = c.document_id WHERE d.collection_id = ? AND d.doc_id = ?`,
      [collectionId, docId],
    )
  }

  /** Chunks matching an FTS5 query, best BM25 first (bm25() is negative: lower is better), from the collection's own index. */
  keywordMatches(collection: CollectionRow, ftsQuery: string, k: number): { chunkId: number; bm25: number }[] {
    const table = this.ensureFts(collection.id)
    return this.db
      .query<{ id: number; rank: number }, [string, number]>(`SELECT rowid AS id, bm25(${table}) AS rank FROM ${table} WHERE ${table} MATCH ? ORDER BY rank LIMIT ?`)
      .all(ftsQuery, k)
      .map((row) => ({ chunkId: row.id, bm25: row.rank }))
  }

}
