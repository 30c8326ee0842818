import { STOPWORDS, words } from '../../../ml/text'

/** Reciprocal rank fusion constant (Cormack et al.). */
export const RRF_K = 60

/** The words of a query that keyword search considers: distinct, longer than one letter unless numeric, at most 32. */
export function queryWords(text: string): string[] {
  return [...new Set(words(text))].filter((w) => w.length > 1 || /\d/.test(w)).slice(0, 32)
}

/**
 * The phrases a query asks for, each as its words: text in double quotes (two words or more), and
 * identifiers that FTS5 splits into several tokens — `ERR_SSL_PROTOCOL_ERROR`, `fs.readFileSync`,
 * `CVE-2024-3094`, `v1.4.30`, `user@example.com` — kept whole as phrases, beside their parts.
 * `exact`: asked for as written — quoted, or an identifier proper (see `identifier`); an ordinary
 * hyphenated word ("one-line", "point-in-time", "keep-daily") or a pair like "from/to" is a phrase
 * too, but not an exact one (see rankCandidates).
 */
export function queryPhrases(text: string): { words: string[]; quoted: boolean; exact: boolean }[] {
  const found = new Map<string, { words: string[]; quoted: boolean; exact: boolean }>()
  const add = (parts: string[], quoted: boolean, exact: boolean) => {
    const key = parts.join(' ')
    const before = found.get(key)
    if (parts.length >= 2 && !(before?.quoted ?? false)) found.set(key, { words: parts, quoted, exact: exact || (before?.exact ?? false) })
  }
  const rest = text.replace(/["“”]([^"“”]+)["“”]/g, (_, inner: string) => {
    add(words(inner), true, true)
    return ' '
  })
  for (const token of rest.split(/\s+/)) {
    const core = token.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, '')
    if (/[\p{L}\p{N}][_.\-@:/+#]+[\p{L}\p{N}]/u.test(core)) add(words(core), false, identifier(token, core))
  }
  return [...found.values()].slice(0, 8)
}

/**
 * Whether a token FTS5 would split is an identifier proper: a digit, a capital past its first
 * letter, an underscore, dot, @, colon, plus or hash, or a path (a slash with a leading / or ~, or
 * three parts or more). Words joined by hyphens or one slash ("point-in-time", "from/to",
 * "read/write") are ordinary words.
 */
function identifier(token: string, core: string): boolean {
  if (/[\p{N}_.@:+#]/u.test(core) || /.\p{Lu}/u.test(core)) return true
  return core.includes('/') && (/^[/~]/.test(token) || core.split('/').length >= 3)
}

/** The phrases of a query asked for exactly (see queryPhrases), as their words joined by spaces. */
export function exactPhrases(text: string): Set<string> {
  return new Set(
    queryPhrases(text)
      .filter((phrase) => phrase.exact)
      .map((phrase) => phrase.words.join(' ')),
  )
}

/** A safe FTS5 query from words: each quoted (so no syntax can be injected; "a_b" becomes the phrase "a b"), OR-ed. */
export function ftsQueryOf(terms: string[]): string | null {
  if (!terms.length) return null
  return terms.map((term) => `"${term.replaceAll('"', '""')}"`).join(' OR ')
}

/** A safe FTS5 query from free text, every word OR-ed (see `keywordPlan` for the one search runs). */
export function ftsQuery(text: string): string | null {
  return ftsQueryOf(queryWords(text))
}

/**
 * A word in more than this share of a collection's chunks says little about which chunk is meant
 * (BM25's own idf for it is about zero): it is left out of the keyword query when a rarer word is there.
 */
export const COMMON_SHARE = 0.5
/**
 * At most this many postings (Σ document frequency of the words kept) are ranked by BM25. FTS5
 * scores every chunk any OR-ed word matches, so "how does the …" made it score most of the
 * collection; rarest words first, a word that would overflow this is dropped.
 */
export const KEYWORD_POSTINGS = 6_000
/** When even the rarest word matches more than KEYWORD_POSTINGS chunks: how many of them are ranked. */
export const CAPPED_CANDIDATES = 2_000

/** Keyword candidates re-scored with every informative word of the query (see `keywordPlan`). */
export const RESCORE_POOL = 120

export interface KeywordPlan {
  /** The FTS5 query that finds candidates, or null when no word of the query is in the collection. */
  query: string | null
  /** The words that find candidates, rarest first. */
  words: string[]
  /** The words the candidates' BM25 is computed with: every word of the query found in the collection. */
  scored: string[]
  /** True when the query's matches are too many to rank all: only the first CAPPED_CANDIDATES are. */
  capped: boolean
}

/**
 * Which words of a query keyword search uses, from their document frequency in the collection
 * (`df`: chunks holding the word; for a word FTS5 reads as several tokens, the smallest of theirs).
 * Every word found in the collection counts in the candidates' BM25 (`scored`: the score one OR
 * query of them all would give), but only some find candidates (`words`): FTS5 computes BM25 for
 * every chunk a query matches (about a microsecond each), so "how does the …" made it score most
 * of the collection. Candidates come from the rarest words, English function words and words in
 * more than COMMON_SHARE of the chunks left out when another word is there, while their postings
 * fit KEYWORD_POSTINGS. The rarest word is always used, so a query of common words alone still
 * finds chunks.
 */
export function keywordPlan(terms: { word: string; df: number; phrase?: boolean }[], chunks: number, budget = KEYWORD_POSTINGS): KeywordPlan {
  // Function words ("how", "is", "the") go first when the query has others, whatever their count in
  // this collection (in documentation "how" is rare enough to look informative); the rest is by frequency.
  // Phrases (quoted, or identifiers kept whole) always find candidates.
  const found = terms.filter((term) => term.df > 0)
  const phrases = found.filter((term) => term.phrase)
  const content = found.filter((term) => !term.phrase && !STOPWORDS.has(term.word))
  const present = (content.length ? content : found.filter((term) => !term.phrase)).sort((a, b) => a.df - b.df)
  const kept: string[] = phrases.map((term) => term.word)
  let postings = 0
  for (const [i, term] of present.entries()) {
    if (i > 0 && (term.df > chunks * COMMON_SHARE || postings + term.df > budget)) break
    kept.push(term.word)
    postings += term.df
  }
  // Every word found scores, as it did in one OR query: BM25 gives a word in most chunks next to nothing.
  const scored = found.map((term) => term.word)
  return { query: ftsQueryOf(kept), words: kept, scored, capped: postings > budget }
}

/**
 * BM25 exactly as FTS5's bm25() computes it for one column (k1 1.2, b 0.75, idf floored at 1e-6),
 * negated as FTS5 reports it: `terms` are each query term's count in the chunk (tf) and number of
 * chunks holding it (df), `length` the chunk's size in tokens, `averageLength` the collection's.
 */
export function bm25(terms: { tf: number; df: number }[], length: number, averageLength: number, chunks: number): number {
  const k1 = 1.2
  const b = 0.75
  let score = 0
  for (const { tf, df } of terms) {
    if (!tf) continue
    score += (idf(df, chunks) * (tf * (k1 + 1))) / (tf + k1 * (1 - b + (b * length) / averageLength))
  }
  return -score
}

/** Cosine similarity of two normalised vectors, clamped to [0, 1]. */
export function similarity(distance: number | null): number {
  if (distance === null || Number.isNaN(distance)) return 0
  return Math.min(1, Math.max(0, 1 - distance))
}

export function cosineDistance(a: Float32Array, b: Float32Array): number | null {
  let dot = 0
  let na = 0
  let nb = 0
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!
    na += a[i]! * a[i]!
    nb += b[i]! * b[i]!
  }
  if (na === 0 || nb === 0) return null
  return 1 - dot / Math.sqrt(na * nb)
}

/**
 * How retrieval fuses its two rankings, fitted on the labelled set (scripts/fit-ranking.ts) and
 * stored per embedder id in ranking/params.json: the fitted values depend on how the embedder's
 * similarities are spread.
 */
export interface RankingParams {
  /** Weight of vector similarity (damped for feature-poor chunks, see minFeatures). */
  vectorWeight: number
  /** Weight of keyword relevance: BM25 saturated at bm25Half. */
  keywordWeight: number
  /** Weight of the share of the query's rare terms a chunk holds (idf-weighted); the three weights sum to 1. */
  rareWeight: number
  /** BM25 at which keyword relevance reaches one half. */
  bm25Half: number
  /** A term held by at most this share of the collection's chunks (and at least by one) is rare. */
  rareShare: number
  /**
   * Distinct content words a chunk needs for its vector similarity to count in full; below, it is
   * scaled down in proportion: a vector made of a handful of hashed features resembles anything by
   * chance. 0 turns damping off.
   */
  minFeatures: number
  /** Candidates taken from each ranking (at least; see candidatePools). */
  vectorPool: number
  keywordPool: number
  /** Scores below this are not relevant enough to answer from (see /rag/answer). */
  relevanceFloor: number
}

/** One candidate chunk of a query, with what its score is made of. */
export interface Candidate {
  chunkId: number
  /** Cosine similarity to the query in [0, 1] (0 when the query has no direction). */
  similarity: number
  /** BM25 as FTS5 reports it (negated), for chunks among the keyword candidates. */
  bm25?: number
  /** What the query's synonyms the chunk holds are worth, negated as BM25 (see synonymScore), for chunks holding any. */
  synonymBm25?: number
  /** Indices of the query's terms (see QueryTerms) the chunk holds: its rare terms and phrases. */
  held: number[]
  /** Distinct content words of the chunk. */
  features: number
  /** Positions in the vector and keyword rankings (Infinity when not in one). */
  vectorRank: number
  keywordRank: number
  /** The document the chunk is part of (see REPEAT_SHARE); unset, every chunk counts as its own. */
  document?: string
  /** The share of the query's pairs of neighbouring words the chunk holds near each other (proximity.ts). */
  pairs?: number
  /** The share of the query's content words its document's name holds (names.ts). */
  named?: number
}

export interface RankingTerms {
  /** `exact` false: a phrase that only weighs, never put first (see queryPhrases); unset counts as exact. */
  terms: { word: string; df: number; phrase: boolean; exact?: boolean }[]
  /** Chunks in the collection. */
  chunks: number
}

/**
 * BM25's idf of a term held by `df` of `chunks` chunks, as FTS5 computes it (1e-6 where it would
 * not be positive). A term found nowhere weighs as one found once: in a small collection its idf
 * would otherwise dwarf every word that is there.
 */
export function idf(df: number, chunks: number): number {
  const held = Math.max(1, df)
  const value = Math.log((chunks - held + 0.5) / (held + 0.5))
  return value <= 0 ? 1e-6 : value
}

/**
 * Keyword relevance in [0, 1): BM25 (FTS5 reports it negated) saturated at `half`. BM25 grows with
 * a collection (rarer words, larger idf), so in a small collection keyword relevance stays modest
 * and vector similarity decides more, as it should where word statistics mean little.
 */
export function keywordRelevance(bm25: number | undefined, half: number): number {
  if (bm25 === undefined) return 0
  const score = Math.max(0, -bm25)
  return score / (score + half)
}

/**
 * The query's rare terms (indices) and each one's idf: held by at most `rareShare` of the chunks,
 * function words aside. A term found in no chunk counts too (weighed as one found once), held by none:
 * a question whose distinctive words the collection lacks ("what is the capital of France?" asked
 * of a database manual that mentions "capital" once) is mostly not about it.
 */
export function rareTerms(query: RankingTerms, rareShare: number): Map<number, number> {
  const limit = Math.max(1, rareShare * query.chunks)
  const rare = new Map<number, number>()
  query.terms.forEach((term, i) => {
    if (term.df > limit || (!term.phrase && STOPWORDS.has(term.word))) return
    // A phrase absent as a phrase but made of words that are present is not a missing word: its parts say what they say.
    if (term.df === 0 && term.phrase) return
    rare.set(i, idf(term.df, query.chunks))
  })
  return rare
}

export interface Scored {
  chunkId: number
  score: number
  rrf: number
}

/** Candidates taken from each ranking for `limit` results: the fitted pool, or twice `limit` when that is more. */
export function candidatePools(limit: number, params: Pick<RankingParams, 'vectorPool' | 'keywordPool'>) {
  return { vectorPool: Math.max(limit * 2, params.vectorPool), keywordPool: Math.max(limit * 2, params.keywordPool) }
}

/**
 * What a chunk's BM25 by the query's synonyms counts, of its BM25 by the query's own words: a
 * passage with the exact word still ranks above one with a synonym of it.
 */
export const SYNONYM_SHARE = 0.7
/**
 * What the synonyms of a word the collection does not hold at all count for: no passage can have
 * the exact word, so its synonyms stand in for it.
 */
export const STAND_IN_SHARE = 0.9

/** A content word of a query with its synonyms in a collection: indices into the synonyms' terms, with their weights. */
export interface SynonymGroupTerms {
  word: string
  /** What the group's synonyms count for, of the word's own matches: SYNONYM_SHARE, or STAND_IN_SHARE for a word the collection lacks. */
  share: number
  /** The word's own idf in the collection (as one found once when it is not there): what a synonym standing in for it is worth. */
  idf: number
  synonyms: { index: number; weight: number }[]
}

/**
 * What a chunk's synonyms of the query's words are worth, on BM25's scale: for each word of the
 * query the chunk lacks (`lacks`, by group), its best synonym there stands in for it: the word's
 * own idf times that synonym's weight (the rank of its sense) times the group's share. A word
 * counts once, however many of its synonyms the chunk holds, and not at all when the chunk holds
 * the word itself; a rare synonym of an unlikely sense is worth no more than a common one.
 */
export function synonymScore(groups: SynonymGroupTerms[], lacks: boolean[], held: Set<number>): number {
  let score = 0
  groups.forEach((group, g) => {
    if (!lacks[g]) return
    let best = 0
    for (const synonym of group.synonyms) {
      if (held.has(synonym.index)) best = Math.max(best, synonym.weight)
    }
    score += group.share * best * group.idf
  })
  return score
}

/** A candidate's BM25 (negated, as FTS5 reports it) by the query's words and, at SYNONYM_SHARE, its synonyms. */
function withSynonyms(c: Candidate): number | undefined {
  if (c.synonymBm25 === undefined) return c.bm25
  return (c.bm25 ?? 0) + c.synonymBm25
}

/** What a document whose name holds every content word of the query adds to each of its chunks' scores (see names.ts). */
export const NAME_WEIGHT = 0.1

/** What holding all of the query's pairs of neighbouring words near each other adds to a score (see proximity.ts). */
export const PAIR_WEIGHT = 0.1

/**
 * What a chunk's score keeps for each better chunk of its document above it in the ranking: a
 * second passage of a document already found says less that is new than the first passage of
 * another, so the first ten results hold more documents (the one asked about among them more
 * often), while a document's other passages still follow where nothing better is left.
 */
export const REPEAT_SHARE = 0.65

/**
 * Scores and orders candidates: `vectorWeight × similarity × damping + keywordWeight × keyword
 * relevance + rareWeight × rare-term share + PAIR_WEIGHT × pair share + NAME_WEIGHT × name share`,
 * in [0, 1] (keyword
 * relevance counting the BM25 of the query's synonyms at SYNONYM_SHARE), so a threshold means the
 * same thing whichever ranking found a chunk; then REPEAT_SHARE of it kept per better chunk of the
 * same document (candidates with a `document`). A chunk holding one of the query's exact phrases
 * (quoted, or identifiers: see queryPhrases) comes first; ties are broken by reciprocal-rank fusion.
 */
export function rankCandidates(candidates: Candidate[], query: RankingTerms, params: RankingParams): Scored[] {
  const rare = rareTerms(query, params.rareShare)
  let rareTotal = 0
  for (const idf of rare.values()) rareTotal += idf
  const phrased = query.terms.some((term) => term.phrase)
  const scored: (Scored & { phrase: boolean; document?: string })[] = []
  for (const c of candidates) {
    let held = 0
    if (rareTotal > 0) for (const i of c.held) held += rare.get(i) ?? 0
    const damping = params.minFeatures > 0 ? Math.min(1, c.features / params.minFeatures) : 1
    const score =
      params.vectorWeight * c.similarity * damping +
      params.keywordWeight * keywordRelevance(withSynonyms(c), params.bm25Half) +
      (rareTotal > 0 ? params.rareWeight * (held / rareTotal) : 0) +
      PAIR_WEIGHT * (c.pairs ?? 0) +
      NAME_WEIGHT * (c.named ?? 0)
    const rrf = (c.vectorRank < Infinity ? 1 / (RRF_K + c.vectorRank + 1) : 0) + (c.keywordRank < Infinity ? 1 / (RRF_K + c.keywordRank + 1) : 0)
    scored.push({ chunkId: c.chunkId, score: Math.round(Math.min(1, score) * 10_000) / 10_000, rrf, phrase: phrased && c.held.some((i) => query.terms[i]!.phrase && query.terms[i]!.exact !== false), document: c.document })
  }
  const order = (a: (typeof scored)[number], b: (typeof scored)[number]) => Number(b.phrase) - Number(a.phrase) || b.score - a.score || b.rrf - a.rrf
  scored.sort(order)
  // Each chunk keeps REPEAT_SHARE of its score per better chunk of its document (see REPEAT_SHARE).
  const seen = new Map<string, number>()
  let repeated = false
  for (const hit of scored) {
    if (hit.document === undefined) continue
    const before = seen.get(hit.document) ?? 0
    seen.set(hit.document, before + 1)
    if (before) {
      hit.score = Math.round(hit.score * REPEAT_SHARE ** before * 10_000) / 10_000
      repeated = true
    }
  }
  if (repeated) scored.sort(order)
  return scored.map(({ chunkId, score, rrf }) => ({ chunkId, score, rrf }))
}
