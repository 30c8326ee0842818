import type { Database } from 'bun:sqlite'
import { CONVERSATION_FILES_PREFIX, isConversationFiles } from './reserved'
import { AppError, notFound } from '../../core/errors'
import { andThen, type MaybePromise } from '../../db/maybe-promise'
import type { EmbedOptions, Embedder, Generator } from '../../ml'
import { abortReason } from '../../core/work-pool'
import { STOPWORDS, words } from '../../ml/text'
import { type ChunkOptions, chunkDocument, chunkOptionsFor } from './chunking'
import { formsOf, MOST_SYNONYMS, RARE_SYNONYM_MIN, RARE_SYNONYM_SHARE, SYNONYM_POSTINGS, SYNONYM_VECTOR_SHARE, synonymGroups } from './ranking/expansion'
import { rankingParams } from './ranking/params'
import { nameQuery, nameShare, nameWords } from './ranking/names'
import { pairShare, wordPairs } from './ranking/proximity'
import { questionFocus } from './ranking/question'
import { type Candidate, candidatePools, cosineDistance, idf, keywordPlan, type RankingParams, rankCandidates, rareTerms, similarity, STAND_IN_SHARE, SYNONYM_SHARE, type SynonymGroupTerms, synonymScore } from './ranking/scoring'
import type { CollectionRow, CollectionSummary, DescribeHook, QueryTerms, RagStore, StoredDocument } from './store'
import { SqliteRagStore } from './store/sqlite'
import type { VectorIndexOptions } from './store/sqlite/vector-index'
import type { KeywordTopKOptions } from './store/sqlite/keyword-topk'
import { runSteps, type Steps, wait } from './steps'
import type { VectorCacheOptions } from './vectors/cache'
import { COLLECTION_NAME, CollectionResolver, isQualified, type Need, type Resolved } from './access/resolver'
import type { Access, AccessibleRow, AccessStore } from './access/store'
import type { AuditContext, AuditRecorder } from '../audit/service'
import { SqliteAccessStore } from './access/store.sqlite'

export { COLLECTION_NAME }
export const MAX_DOCUMENTS = 1000
export const MAX_DOCUMENT_BYTES = 1024 * 1024
export const MAX_METADATA_BYTES = 64 * 1024
/** Chunks per call to the embedder (other requests get a turn after each). */
export const EMBED_BATCH = 64
/** Chunks per write transaction (whole documents: a batch closes after the document that fills it). */
export const WRITE_BATCH = 256

export interface IngestDocument {
  id: string
  content: string
  metadata?: Record<string, unknown>
}

/** The synonyms a query is searched with in a collection, and their keyword statistics there. */
export interface Expansion {
  words: string[]
  terms?: QueryTerms
  /** Per content word of the query that has synonyms here: the word, and its synonyms as indices into `terms.terms` with their weights. */
  groups?: SynonymGroupTerms[]
  /** The written forms of the synonyms (formsOf), each with its index in `terms.terms`. */
  forms?: Map<string, number>
  /** The query's own terms in the collection, looked up once for the expansion and the search. */
  query?: QueryTerms
}
const NO_EXPANSION: Expansion = { words: [] }

export interface RetrieveOptions {
  /**
   * Passages to answer from rather than results to find documents by: ranked by what each passage
   * holds alone (no share of a better passage of its document given up, no bonus for the question's
   * neighbouring words near each other or for its words in the document's name), so an answer is composed from the best passages even when
   * several are of one document. /rag/answer, grounded chat and the agents' research use it.
   */
  passages?: boolean
}

export interface SearchResult {
  id: string
  content: string
  score: number
  metadata: Record<string, unknown>
}

export interface RagDeps<S extends RagStore = SqliteRagStore> {
  db: Database
  /** The store; default: the SQLite one over `db`. */
  store?: S
  /** The access lists (shares); default: the SQLite ones over `db`. */
  access?: AccessStore
  vectorCache?: VectorCacheOptions
  /** Large collections' approximate vector indexes (SQLite; see store/sqlite/vector-index.ts). */
  vectorIndex?: VectorIndexOptions
  /** See RagStore: postings ranked to find keyword candidates. */
  keywordPostings?: number
  /** Large SQLite collections' keyword top-k (see store/sqlite/keyword-topk.ts). */
  keywordTopK?: KeywordTopKOptions
  embedder: () => Promise<Embedder>
  generator: () => Promise<Generator>
  /** The free-space floor: an ingest that would leave less is refused (507) before anything is written. */
  storage?: { assertRoom(bytes: number): void }
  /** Whether searches also look for the query's synonyms (see expansion.ts); on unless false. */
  synonyms?: boolean
}

/** Bytes a document takes once stored: its text twice (chunks overlap), the keyword index and vectors. */
const STORED_BYTES_PER_BYTE = 4

/** Distinct content words of a text (function words aside): what a hashed vector of it is made of. */
export function contentWords(text: string): number {
  return readChunk(text).features
}

/**
 * Results with the same text as a better one (the same passage ingested twice, or in two
 * documents) moved after those whose text differs, in order: a repeated passage says nothing new,
 * so it takes a place only when nothing else is left.
 */
export function distinctFirst<T>(ranked: T[], text: (hit: T) => string): T[] {
  const seen = new Set<string>()
  const first: T[] = []
  const repeated: T[] = []
  for (const hit of ranked) {
    const key = text(hit)
    if (seen.has(key)) repeated.push(hit)
    else {
      seen.add(key)
      first.push(hit)
    }
  }
  return repeated.length ? [...first, ...repeated] : ranked
}

/** A chunk's distinct content words, and which of the synonyms whose written forms are `forms` (form → index) it holds. */
function readChunk(text: string, forms?: Map<string, number>): { features: number; synonyms: Set<number> } {
  const seen = new Set<string>()
  const synonyms = new Set<number>()
  for (const word of words(text)) {
    if (STOPWORDS.has(word)) continue
    seen.add(word)
    const synonym = forms?.get(word)
    if (synonym !== undefined) synonyms.add(synonym)
  }
  return { features: seen.size, synonyms }
}

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve))

export function assertCollectionName(name: string): void {
  if (!COLLECTION_NAME.test(name)) {
    throw new AppError('VALIDATION_ERROR', 'collection: must be 1-64 characters: ASCII letters (A-Z, a-z), digits, "_" or "-"')
  }
  if (isConversationFiles(name)) throw new AppError('VALIDATION_ERROR', `collection: names starting with ${CONVERSATION_FILES_PREFIX} are kept for conversations' files`)
}

/**
 * What a method answers: on SQLite (whose store answers at once) the value itself, as it always
 * was; on another store (PostgreSQL) the value or a promise of it.
 */
export type Answer<S extends RagStore, T> = S extends SqliteRagStore ? T : MaybePromise<T>

/** How many candidates each search finds; `distinct`: copies of a passage count once (see RagStore.nearest), `dropped` counting those left out. */
export interface CandidatePools {
  vectorPool: number
  keywordPool: number
  rareShare: number
  distinct?: { dropped: number }
}

/** The knowledge base: ingestion, hybrid search and the collections of each user. */
export class RagService<S extends RagStore = SqliteRagStore> {
  readonly store: S
  /** The one rule for who reaches which collection (see CollectionResolver). */
  readonly resolver: CollectionResolver
  /** Where collection.created / collection.deleted / document.deleted go (set by the app). */
  audit?: AuditRecorder

  constructor(private readonly deps: RagDeps<S>) {
    this.store = deps.store ?? (new SqliteRagStore(deps.db, deps.vectorCache, deps.keywordPostings, deps.vectorIndex, deps.keywordTopK) as RagStore as S)
    // A store that keeps its own access lists (PostgreSQL's) gives them; else SQLite's, over the service's database.
    const own = (this.store as { accessStore?(): AccessStore }).accessStore?.()
    this.resolver = new CollectionResolver(deps.access ?? own ?? new SqliteAccessStore(deps.db))
  }

  /** Runs store steps (see runSteps): synchronous on SQLite. */
  private run<T>(steps: Steps<T>): Answer<S, T> {
    return runSteps(steps) as Answer<S, T>
  }

  /**
   * The collection a reference names for the caller (see CollectionResolver): 404 when they reach
   * none, 403 when their access is below `need`.
   */
  collection(userId: string, ref: string, need: Need = 'viewer'): Answer<S, CollectionRow> {
    return this.run(this.collectionSteps(userId, ref, need))
  }

  /** The collection with the caller's access (see CollectionResolver). */
  resolve(userId: string, ref: string, need: Need = 'viewer'): Answer<S, Resolved> {
    return this.run(this.resolver.steps(userId, ref, need))
  }

  private *collectionSteps(userId: string, ref: string, need: Need = 'viewer'): Steps<CollectionRow> {
    return (yield* this.resolver.steps(userId, ref, need)).collection
  }

  /**
   * Whether `collection` is still there, unchanged. Called after every await: while this request
   * waited, the collection may have been deleted, or deleted and made anew — and SQLite may hand
   * its row id to someone else's new collection. Looked up by its public id (a UUID, never
   * reused) and compared by row id, so neither case goes unnoticed.
   */
  private stillThere(_userId: string, collection: CollectionRow): MaybePromise<boolean> {
    return andThen(this.resolver.store.byPublicId(collection.public_id), (current) => current !== null && current.id === collection.id && current.created_at === collection.created_at)
  }

  private assertSameEmbedder(collection: CollectionRow, embedder: Embedder): void {
    if (collection.embedder !== embedder.id) {
      throw new AppError(
        'CONFLICT',
        `Collection ${collection.name} was embedded with ${collection.embedder}, but the active embedder is ${embedder.id}: ` +
          're-index it (delete the collection and ingest its documents again)',
      )
    }
  }

  /**
   * Chunks, embeds and writes documents, in write batches of whole documents (each its own
   * transaction), the next batch embedded while this one is written. A failure, or `run.signal`
   * aborting (the client went away: its embedding leaves the work pool's queue or is stopped), ends
   * it between batches: the batches written stay, each document whole; a new collection is made
   * only once the first batch is embedded, so an ingest stopped before that leaves nothing.
   */
  async ingest(userId: string, name: string, documents: IngestDocument[], describe?: DescribeHook, context?: AuditContext, run: EmbedOptions = {}) {
    const started = performance.now()
    const { signal } = run
    if (documents.length > MAX_DOCUMENTS) throw new AppError('VALIDATION_ERROR', `documents: at most ${MAX_DOCUMENTS} per request, got ${documents.length}`)
    const errors: { id: string; message: string }[] = []
    const accepted = documents.filter((document) => {
      if (!document.content.trim()) errors.push({ id: document.id, message: 'content is empty' })
      else if (Buffer.byteLength(document.content) > MAX_DOCUMENT_BYTES) errors.push({ id: document.id, message: 'content is larger than 1 MB' })
      // Metadata comes back with every result: a large one would make every answer large.
      else if (document.metadata && Buffer.byteLength(JSON.stringify(document.metadata)) > MAX_METADATA_BYTES) {
        errors.push({ id: document.id, message: 'metadata is larger than 64 KB' })
      }
      else return true
      return false
    })
    this.deps.storage?.assertRoom(accepted.reduce((sum, document) => sum + Buffer.byteLength(document.content), 0) * STORED_BYTES_PER_BYTE)
    let collection: CollectionRow | null = await this.writable(userId, name)
    const embedder = await this.deps.embedder()
    if (collection) this.assertSameEmbedder(collection, embedder)

    const options = chunkOptionsFor(embedder.maxTokens)
    // Write batches: whole documents, closed once they hold WRITE_BATCH chunks (or the store's own
    // figure); chunked as they are reached.
    const writeBatch = this.store.writeBatch ?? WRITE_BATCH
    let next = 0
    const nextBatch = (): { document: IngestDocument; chunks: string[] }[] => {
      const batch: { document: IngestDocument; chunks: string[] }[] = []
      let chunkCount = 0
      while (next < accepted.length && chunkCount < writeBatch) {
        const document = accepted[next++]!
        const chunks = chunkDocument(document.content, options)
        batch.push({ document, chunks })
        chunkCount += chunks.length
      }
      return batch
    }
    const embedBatch = async (batch: { chunks: string[] }[]): Promise<Float32Array[]> => {
      const texts = batch.flatMap((entry) => entry.chunks)
      // An embedder off this thread takes the batch whole; one on it is fed slices, with other requests let in between.
      if (embedder.offThread) return embedder.embed(texts, run)
      const vectors: Float32Array[] = []
      for (let i = 0; i < texts.length; i += EMBED_BATCH) {
        if (signal?.aborted) throw abortReason(signal)
        vectors.push(...(await embedder.embed(texts.slice(i, i + EMBED_BATCH), run)))
        await yieldToEventLoop()
      }
      return vectors
    }
    // A pipeline: the next batch is chunked and embedded while this one is written.
    const begin = (batch: { document: IngestDocument; chunks: string[] }[]) => {
      const vectors = embedBatch(batch)
      // Awaited below; until then a failure must not count as unhandled.
      vectors.catch(() => {})
      return { batch, vectors }
    }
    let ingested = 0
    let current = begin(nextBatch())
    while (current.batch.length) {
      const vectors = await current.vectors
      // Embedded, but no one waits for it any more: nothing more is written.
      if (signal?.aborted) throw abortReason(signal)
      const { batch } = current
      current = begin(nextBatch())
      let offset = 0
      const stored = batch.map(({ document, chunks }) => {
        const own = vectors.slice(offset, offset + chunks.length)
        offset += chunks.length
        return { docId: document.id, content: document.content, metadata: document.metadata ?? {}, chunks, vectors: own }
      })
      // On SQLite the checks and the write run with nothing in between (no await).
      const written = runSteps(this.writeBatchSteps(userId, name, embedder, collection, stored, ingested, describe, current.batch.length > 0, context))
      collection = written instanceof Promise ? await written : written
      ingested += stored.length
      // Let other requests in between batches: a large ingest never stalls the server.
      await yieldToEventLoop()
    }
    return {
      success: true,
      ingested,
      failed: errors.length,
      collection: name,
      processingTime: Math.round(performance.now() - started),
      errors,
    }
  }

  /**
   * Writes one batch of an ingest into its collection: made now if it is new (once the first batch
   * is embedded, so a failed embedding leaves nothing behind; another ingest may have made it
   * meanwhile), else checked to be still there.
   */
  private *writeBatchSteps(
    userId: string,
    name: string,
    embedder: Embedder,
    known: CollectionRow | null,
    stored: StoredDocument[],
    ingested: number,
    describe: DescribeHook | undefined,
    more: boolean,
    context?: AuditContext,
  ): Steps<CollectionRow> {
    let collection = known
    if (!collection) {
      collection = (yield* wait(this.store.findCollection(userId, name))) ?? (yield* wait(this.createOrFind(userId, name, embedder, context)))
      this.assertSameEmbedder(collection, embedder)
    } else if (!(yield* wait(this.stillThere(userId, collection)))) {
      // Other requests ran while this batch was embedded: the collection may have been deleted
      // (or deleted and made anew). Writing on would resurrect it or fail; say what happened.
      throw deletedMeanwhile(name, ingested)
    }
    yield* wait(this.store.writeDocuments(collection, stored, describe, more))
    return collection
  }

  async search(userId: string, name: string, query: string, limit: number, threshold?: number | null, options?: RetrieveOptions) {
    return this.searchIn(userId, await this.collection(userId, name), query, limit, threshold, options)
  }

  /** search() over a collection the caller's reference was already resolved to (see CollectionResolver). */
  async searchIn(userId: string, collection: CollectionRow, query: string, limit: number, threshold?: number | null, options?: RetrieveOptions) {
    const started = performance.now()
    const embedder = await this.deps.embedder()
    this.assertSameEmbedder(collection, embedder)
    const results = await this.retrieve(userId, collection, embedder, query, limit, threshold, options)
    return { results, query, totalResults: results.length, searchTime: Math.round(performance.now() - started) }
  }

  /**
   * The collection an ingest or upload writes to: the one the reference names, where the caller
   * is at least an editor (403 below that); null when it names none and is a name, for the
   * caller's own new collection of that name (made once the first batch is embedded).
   */
  writable(userId: string, ref: string): Answer<S, CollectionRow | null> {
    const resolver = this.resolver
    return this.run(
      (function* () {
        try {
          return (yield* resolver.steps(userId, ref, 'editor')).collection
        } catch (error) {
          // `<owner email>/<name>` names someone's collection: one the caller cannot reach stays 404.
          if (!(error instanceof AppError && error.code === 'NOT_FOUND') || isQualified(ref)) throw error
          assertCollectionName(ref)
          return null
        }
      })(),
    )
  }

  /** Hybrid retrieval: vector KNN and BM25 candidates, fused and scored in [0, 1] (see rankCandidates). */
  async retrieve(userId: string, collection: CollectionRow, embedder: Embedder, query: string, limit: number, threshold?: number | null, options: RetrieveOptions = {}): Promise<SearchResult[]> {
    const params = rankingParams(embedder.id)
    // What is asked about, without the words that only make it a question (see questionFocus).
    const asked = questionFocus(query)
    const synonyms = await this.expansion(collection, asked)
    const vector = await this.queryVector(embedder, asked, synonyms)
    // On SQLite everything below is synchronous: checked here, the collection cannot change before the
    // queries. A store that tells from its own queries (PostgreSQL: RagStore.stillThere) is asked
    // once its keyword query and candidates' rows were read (candidateSteps): no look-up of its own.
    if (!this.store.stillThere) {
      const there = this.stillThere(userId, collection)
      if (!(there instanceof Promise ? await there : there)) throw notFound(`Collection ${collection.name}`)
    }
    // Copies of one passage in several documents count once among the candidates, so the pools
    // hold as many different passages as they would without copies; in a search's results the
    // copies come back only when there are not `limit` different passages to show (after them, as
    // distinctFirst orders: the search is run again without leaving them out). Passages to answer
    // from never need them: a copy says nothing its original does not.
    const distinct = { dropped: 0 }
    const pools = { ...candidatePools(limit, params), rareShare: params.rareShare }
    const first = this.ranked(collection, vector, asked, { ...pools, distinct }, params, synonyms, limit, threshold, options)
    const results = first instanceof Promise ? await first : first
    if (results.length >= limit || distinct.dropped === 0 || options.passages) return results
    return this.ranked(collection, vector, asked, pools, params, synonyms, limit, threshold, options)
  }

  /** The candidates of a query ranked (see rankCandidates), those under `threshold` left out, distinct passages first: the first `limit`. */
  private ranked(collection: CollectionRow, vector: Float32Array, asked: string, pools: CandidatePools, params: RankingParams, synonyms: Expansion, limit: number, threshold: number | null | undefined, options: RetrieveOptions): MaybePromise<SearchResult[]> {
    return andThen(this.candidates(collection, vector, asked, pools, synonyms), ({ candidates, terms, chunks }) => {
      // Passages to answer from: the best ones, several of a document if they are (see RetrieveOptions).
      if (options.passages) for (const candidate of candidates) candidate.document = candidate.pairs = candidate.named = undefined
      const ranked = rankCandidates(candidates, terms, params)
      const scored = distinctFirst(
        ranked.filter((hit) => threshold === undefined || threshold === null || hit.score >= threshold),
        (hit) => chunks.get(hit.chunkId)!.content,
      ).slice(0, limit)
      return scored.map((hit) => {
        const chunk = chunks.get(hit.chunkId)!
        return { id: chunk.docId, content: chunk.content, score: hit.score, metadata: { ...chunk.metadata, chunk: chunk.position } }
      })
    })
  }

  /**
   * The synonyms a query is searched with in this collection: those of its words (synonymsOf) that
   * the collection holds, in at most RARE_SYNONYM_SHARE of its chunks (a synonym in most of them
   * tells nothing and costs a long posting list), at most MOST_SYNONYMS; none when synonyms are
   * turned off. With their keyword statistics, for the keyword search of them.
   */
  expansion(collection: CollectionRow, query: string): Answer<S, Expansion> {
    return this.run(this.expansionSteps(collection, query))
  }

  private *expansionSteps(collection: CollectionRow, query: string): Steps<Expansion> {
    if (this.deps.synonyms === false) return NO_EXPANSION
    const groups = synonymGroups(query)
    if (!groups.length) return NO_EXPANSION
    const weights = new Map<string, number>()
    for (const group of groups) for (const synonym of group.synonyms) weights.set(synonym.word, synonym.weight)
    const found = yield* wait(this.store.queryTerms(collection, [...weights.keys()].join(' ')))
    const most = Math.max(RARE_SYNONYM_MIN, found.chunks * RARE_SYNONYM_SHARE)
    const kept = found.terms
      .filter((term) => !term.phrase && term.df > 0 && term.df <= most && weights.has(term.word))
      .sort((a, b) => weights.get(b.word)! - weights.get(a.word)!)
      .slice(0, MOST_SYNONYMS)
    if (!kept.length) return NO_EXPANSION
    const index = new Map(kept.map((term, i) => [term.word, i]))
    const own = yield* wait(this.store.queryTerms(collection, query))
    const absent = new Set(own.terms.filter((term) => !term.phrase && term.df === 0 && !STOPWORDS.has(term.word)).map((term) => term.word))
    const missing = new Set(groups.filter((group) => group.word.split(' ').every((word) => absent.has(word))).map((group) => group.word))
    const held = groups
      .map((group) => ({
        word: group.word,
        share: missing.has(group.word) ? STAND_IN_SHARE : SYNONYM_SHARE,
        idf: idf(Math.min(...group.word.split(' ').map((word) => own.terms.find((term) => !term.phrase && term.word === word)?.df ?? 0)), own.chunks),
        synonyms: group.synonyms.filter((synonym) => index.has(synonym.word)).map((synonym) => ({ index: index.get(synonym.word)!, weight: synonym.weight })),
      }))
      .filter((group) => group.synonyms.length)
    const forms = new Map<string, number>()
    kept.forEach((term, i) => {
      for (const form of formsOf(term.word)) if (!forms.has(form)) forms.set(form, i)
    })
    return { words: kept.map((term) => term.word), terms: { ...found, terms: kept }, groups: held, forms, query: own }
  }

  /**
   * The vector a query is searched with: its embedding, leaned towards the embedding of its synonyms
   * (SYNONYM_VECTOR_SHARE of it), so passages that say the same with other words come nearer. Only
   * the query's vector changes: stored vectors (and the embedder's id) stay as they are.
   */
  async queryVector(embedder: Embedder, query: string, synonyms: Expansion): Promise<Float32Array> {
    // Only synonyms of a word's most frequent sense (a vector has no weights to tell likely meanings
    // from unlikely ones), each word's embedded apart and counted once: a word with many synonyms
    // does not pull the query towards itself more than a word with one.
    const leaning = (synonyms.groups ?? [])
      .map((group) => group.synonyms.filter((synonym) => synonym.weight >= 1).map((synonym) => synonyms.words[synonym.index]!))
      .filter((words) => words.length)
    if (!leaning.length) return (await embedder.embed([query]))[0]!
    const [own, ...others] = await embedder.embed([query, ...leaning.map((words) => words.join(' '))])
    const blended = Float32Array.from(own!)
    for (const other of others) for (let i = 0; i < blended.length; i++) blended[i]! += (SYNONYM_VECTOR_SHARE * other[i]!) / others.length
    let norm = 0
    for (let i = 0; i < blended.length; i++) norm += blended[i]! * blended[i]!
    if (norm > 0) for (let i = 0; i < blended.length; i++) blended[i]! /= Math.sqrt(norm)
    return blended
  }

  /**
   * The candidates of a query with what their scores are made of: the `vectorPool` nearest chunks,
   * the `keywordPool` best by BM25, and the `keywordPool` best by BM25 of the query's synonyms, each with its similarity, BM25, the query terms it holds
   * (the rare ones, up to `rareShare` of the chunks, and the phrases) and its count of distinct
   * content words. Synchronous on SQLite, so the collection cannot change meanwhile.
   */
  candidates(collection: CollectionRow, vector: Float32Array, query: string, pools: CandidatePools, synonyms?: Expansion) {
    return this.run(this.candidateSteps(collection, vector, query, pools, synonyms))
  }

  private *candidateSteps(collection: CollectionRow, vector: Float32Array, query: string, pools: CandidatePools, given?: Expansion) {
    const synonyms = given ?? (yield* this.expansionSteps(collection, query))
    const hasDirection = vector.some((x) => x !== 0)
    // The keyword search is asked for before the vectors are scanned: a store that answers later
    // (PostgreSQL) runs its query meanwhile; SQLite answers at once, as it always did.
    const terms = synonyms.query ?? (yield* wait(this.store.queryTerms(collection, query)))
    const keywordAnswer = this.store.keywordCandidates(collection, terms, pools.keywordPool, pools.distinct)
    // The query's synonyms find candidates too (their best by BM25 of the rarest of them: no
    // rescoring, as what a synonym is worth comes from the word it stands for; see synonymScore).
    // Only the rarest of them, within SYNONYM_POSTINGS: all searched, so none is rescored.
    const plan = synonyms.words.length ? keywordPlan(synonyms.terms!.terms, synonyms.terms!.chunks, SYNONYM_POSTINGS) : null
    const searched = plan && { ...synonyms.terms!, terms: synonyms.terms!.terms.filter((term) => plan.words.includes(term.word)) }
    const synonymAnswer = searched?.terms.length ? this.store.keywordCandidates(collection, searched, pools.keywordPool, pools.distinct) : []
    // Awaited below; a failure while the vectors are scanned must not count as unhandled.
    for (const answer of [keywordAnswer, synonymAnswer]) if (answer instanceof Promise) answer.catch(() => {})
    const vectorRanking = hasDirection
      ? yield* wait(this.store.nearest(collection, vector, pools.vectorPool, pools.distinct))
      : (yield* wait(this.store.firstChunks(collection, pools.vectorPool))).map((chunkId) => ({ chunkId, distance: null }))
    // While the keyword query runs elsewhere (a thread, the database), the vector candidates' words
    // are read here: termHoldings below then finds them read (the reads are kept per query).
    const known = terms.terms.find((term) => term.df > 0 && !term.phrase)
    if (keywordAnswer instanceof Promise && known && vectorRanking.length) {
      yield* wait(
        this.store.termHoldings(
          terms,
          vectorRanking.map((hit) => hit.chunkId),
          [known],
        ),
      )
    }
    const keywordRanking = yield* wait(keywordAnswer)
    // Deleted while the search waited (its embedding, its queries): 404, as retrieve's own check says on SQLite.
    if (this.store.stillThere && !(yield* wait(this.store.stillThere(collection, terms)))) throw notFound(`Collection ${collection.name}`)
    const byId = new Map<number, Candidate>()
    vectorRanking.forEach((hit, rank) =>
      byId.set(hit.chunkId, { chunkId: hit.chunkId, similarity: similarity(hit.distance), held: [], features: 0, vectorRank: rank, keywordRank: Infinity }),
    )
    const keywordOnly: number[] = []
    keywordRanking.forEach((hit, rank) => {
      const known = byId.get(hit.chunkId)
      if (known) Object.assign(known, { bm25: hit.bm25, keywordRank: rank })
      else {
        byId.set(hit.chunkId, { chunkId: hit.chunkId, similarity: 0, bm25: hit.bm25, held: [], features: 0, vectorRank: Infinity, keywordRank: rank })
        keywordOnly.push(hit.chunkId)
      }
    })
    for (const hit of yield* wait(synonymAnswer)) {
      const known = byId.get(hit.chunkId)
      if (known) known.synonymBm25 = hit.bm25
      else {
        byId.set(hit.chunkId, { chunkId: hit.chunkId, similarity: 0, synonymBm25: hit.bm25, held: [], features: 0, vectorRank: Infinity, keywordRank: Infinity })
        keywordOnly.push(hit.chunkId)
      }
    }
    if (hasDirection) {
      for (const [chunkId, stored] of yield* wait(this.store.vectors(collection, keywordOnly))) byId.get(chunkId)!.similarity = similarity(cosineDistance(vector, stored))
    }
    const ids = [...byId.keys()]
    // The terms whose presence counts: the rare ones and the phrases (quoted, or identifiers kept whole).
    const rare = rareTerms(terms, pools.rareShare)
    const wanted = terms.terms.map((term, i) => (term.df > 0 && (rare.has(i) || term.phrase) ? i : -1)).filter((i) => i >= 0)
    const holdings = yield* wait(
      this.store.termHoldings(
        terms,
        ids,
        wanted.map((i) => terms.terms[i]!),
      ),
    )
    // Neighbouring words of the query found near each other (see proximity.ts): from where the
    // query's tokens occur in each candidate, read by termHoldings (here too when no rare term did).
    const pairs = wordPairs(query, terms)
    // The question's words in the documents' names (see names.ts), worked out once per document.
    const named = nameQuery(query, terms)
    const names = new Map<string, number>()
    if (pairs.length && !wanted.length) yield* wait(this.store.termHoldings(terms, ids, terms.terms.filter((term) => term.df > 0 && !term.phrase).slice(0, 1)))
    const chunks = yield* wait(this.store.chunks(ids, terms))
    // A replica's in-memory vectors may still hold a chunk another server deleted a moment ago (see
    // store.postgres.ts): what is no longer in the database is no candidate. (SQLite: never.)
    for (const id of ids) if (!chunks.has(id)) byId.delete(id)
    // What the query's synonyms give each candidate: for each word it lacks, its best synonym there
    // (the synonyms a chunk holds read from its words, in the pass that counts its content words).
    const groups = synonyms.groups ?? []
    const own = groups.map((group) => terms.terms.findIndex((term) => !term.phrase && term.word === group.word))
    const ownTerms = own.filter((i) => i >= 0 && terms.terms[i]!.df > 0)
    const ownHeld = groups.length ? yield* wait(this.store.termHoldings(terms, ids, ownTerms.map((i) => terms.terms[i]!))) : new Map<number, number[]>()
    for (const candidate of byId.values()) {
      candidate.document = chunks.get(candidate.chunkId)?.docId
      if (pairs.length) candidate.pairs = pairShare(pairs, terms.offsets.get(candidate.chunkId))
      const chunk = chunks.get(candidate.chunkId)
      if (named.length && chunk) {
        let share = names.get(chunk.docId)
        if (share === undefined) names.set(chunk.docId, (share = nameShare(named, nameWords(chunk.docId, chunk.metadata))))
        candidate.named = share
      }
      candidate.held = (holdings.get(candidate.chunkId) ?? []).map((j) => wanted[j]!)
      const read = readChunk(chunks.get(candidate.chunkId)?.content ?? '', synonyms.forms)
      candidate.features = read.features
      if (!groups.length) continue
      const holds = new Set((ownHeld.get(candidate.chunkId) ?? []).map((j) => ownTerms[j]!))
      const score = synonymScore(
        groups,
        own.map((i) => i < 0 || !holds.has(i)),
        read.synonyms,
      )
      candidate.synonymBm25 = score > 0 ? -score : undefined
    }
    return { candidates: [...byId.values()], terms, chunks }
  }

  /**
   * The content words of a question with how many of the collection's chunks hold each (`df`) and
   * the collection's chunk count: what tells a question's telling words from its common ones.
   */
  questionTerms(userId: string, name: string, question: string): Answer<S, { terms: { word: string; df: number }[]; chunks: number }> {
    const store = this.store
    const collection = this.collectionSteps(userId, name)
    return this.run(
      (function* () {
        const { terms, chunks } = yield* wait(store.queryTerms(yield* collection, question))
        return { terms: terms.filter((term) => !term.phrase && !STOPWORDS.has(term.word)).map(({ word, df }) => ({ word, df })), chunks }
      })(),
    )
  }

  /** The score below which a passage of this collection is not relevant enough to answer from: fitted per embedder (ranking/params.json). */
  relevanceFloor(userId: string, name: string): Answer<S, number> {
    const collection = this.collectionSteps(userId, name)
    return this.run(
      (function* () {
        return rankingParams((yield* collection).embedder).relevanceFloor
      })(),
    )
  }

  /** The caller's own collections and those shared with them (see AccessStore.accessible). */
  listCollections(userId: string): Answer<S, { collections: CollectionView[] }> {
    const access = this.resolver.store
    return this.run(
      (function* () {
        // A conversation's files (reserved.ts) are the conversation's, not a collection to list.
        return { collections: (yield* wait(access.accessible(userId))).filter((row) => !isConversationFiles(row.name)).map(collectionView) }
      })(),
    )
  }

  /** The caller's own collections only (what goes with a deleted account). */
  ownCollections(userId: string): Answer<S, CollectionSummary[]> {
    return this.run(
      (function* (store: RagStore) {
        return yield* wait(store.listCollections(userId))
      })(this.store),
    )
  }

  /** A new collection, or the one another request made meanwhile (UNIQUE (user_id, name)). */
  private createOrFind(userId: string, name: string, embedder: Embedder, context?: AuditContext): MaybePromise<CollectionRow> {
    const store = this.store
    const created = (row: CollectionRow) => this.recordCreated(userId, row, context)
    return runSteps(
      (function* () {
        try {
          const row = yield* wait(store.createCollection(userId, name, embedder.id, embedder.dimensions))
          created(row)
          return row
        } catch (error) {
          if (!isUniqueViolation(error)) throw error
          const made = yield* wait(store.findCollection(userId, name))
          if (!made) throw error
          return made
        }
      })(),
    )
  }

  /** An empty collection with the current embedder, for documents to come; 409 when the name is taken. */
  /** `collection.created` in the audit log: the caller, or the owner when no request is known. */
  private recordCreated(userId: string, row: CollectionRow, context?: AuditContext): void {
    const audit = this.audit
    if (!audit) return
    const event = { action: 'collection.created', target: row.public_id, details: { name: row.name, owner: userId } }
    if (context) audit.record({ ...context, ...event })
    // Made by work that outlived its request (an ingestion job): its owner did it.
    else void Promise.resolve(this.resolver.store.owner(userId)).then((owner) => audit.record({ actor: owner, ip: null, requestId: null, ...event }), () => audit.record(event))
  }

  async createCollection(userId: string, name: string, context?: AuditContext, reserved = false): Promise<{ success: boolean; collection: CollectionView }> {
    if (!reserved) assertCollectionName(name)
    const embedder = await this.deps.embedder()
    const taken = () => new AppError('CONFLICT', `You already have a collection named ${name}`)
    if (await this.store.findCollection(userId, name)) throw taken()
    let row
    try {
      row = await this.store.createCollection(userId, name, embedder.id, embedder.dimensions)
    } catch (error) {
      // Made by another request between the look-up and the insert (UNIQUE (user_id, name)).
      if (isUniqueViolation(error)) throw taken()
      throw error
    }
    this.recordCreated(userId, row, context)
    const owner = (await this.resolver.store.owner(userId)) ?? { id: userId, email: '' }
    return { success: true, collection: collectionView({ ...row, documents: 0, chunks: 0, owner_email: owner.email, access: 'owner' }) }
  }

  deleteCollection(userId: string, name: string, context?: AuditContext): Answer<S, { success: boolean; collection: string }> {
    const store = this.store
    const audit = this.audit
    const collection = this.collectionSteps(userId, name, 'manager')
    return this.run(
      (function* () {
        const row = yield* collection
        yield* wait(store.deleteCollection(row))
        audit?.record({ ...(context ?? {}), action: 'collection.deleted', target: row.public_id, details: { name: row.name, owner: row.user_id } })
        return { success: true, collection: name }
      })(),
    )
  }

  deleteDocument(userId: string, name: string, docId: string, context?: AuditContext): Answer<S, { success: boolean; collection: string; id: string }> {
    const store = this.store
    const audit = this.audit
    const collection = this.collectionSteps(userId, name, 'editor')
    return this.run(
      (function* () {
        const row = yield* collection
        if (!(yield* wait(store.deleteDocument(row, docId)))) throw notFound(`Document ${docId} in collection ${name}`)
        audit?.record({ ...(context ?? {}), action: 'document.deleted', target: row.public_id, details: { collection: row.name, owner: row.user_id, id: docId } })
        return { success: true, collection: name, id: docId }
      })(),
    )
  }

  get generator() {
    return this.deps.generator
  }

  get embedder() {
    return this.deps.embedder
  }
}

/** A collection as the listings show it: with its owner and the caller's access. */
export interface CollectionView {
  id: string
  name: string
  owner: { id: string; email: string }
  access: Access
  documents: number
  chunks: number
  embedder: string
  dimensions: number
  createdAt: string
}

/** What the caller names a collection by: its name when it is theirs, else `<owner email>/<name>` (never ambiguous). */
export function collectionRef(collection: { name: string; access: Access; owner: { email: string } }): string {
  return collection.access === 'owner' ? collection.name : `${collection.owner.email}/${collection.name}`
}

function collectionView(row: AccessibleRow): CollectionView {
  const owner = { id: row.user_id, email: row.owner_email }
  return {
    id: row.public_id,
    name: row.name,
    owner,
    access: row.access,

    documents: Number(row.documents),
    chunks: Number(row.chunks),
    embedder: row.embedder,
    dimensions: row.dimensions,
    createdAt: row.created_at,
  }
}

/** The ingest's collection went while it ran. Thrown before a write, or by a store that finds it gone when writing. */
export function deletedMeanwhile(name: string, ingested: number): AppError {
  return new AppError(
    'CONFLICT',
    `Collection ${name} was deleted while this ingest was running; the ${ingested} documents written before went with it, ` + 'and nothing more was written',
  )
}

/** A UNIQUE constraint refused the insert (SQLite: "UNIQUE constraint failed"; PostgreSQL: SQLSTATE 23505). */
function isUniqueViolation(error: unknown): boolean {
  const { message, errno, code } = error as { message?: string; errno?: string; code?: string }
  return String(message).includes('UNIQUE') || errno === '23505' || code === '23505' || String(message).includes('duplicate key')
}

export type { ChunkOptions }
