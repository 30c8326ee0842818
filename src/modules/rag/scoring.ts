import { STOPWORDS, words } from '../../ml/text'

/** Weight of vector similarity in a result's score; the rest is keyword relevance. */
export const VECTOR_WEIGHT = 0.6
/** BM25 value at which keyword relevance reaches one half. */
export const BM25_HALF = 4
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
 */
export function queryPhrases(text: string): { words: string[]; quoted: boolean }[] {
  const found = new Map<string, { words: string[]; quoted: boolean }>()
  const add = (parts: string[], quoted: boolean) => {
    const key = parts.join(' ')
    if (parts.length >= 2 && !(found.get(key)?.quoted ?? false)) found.set(key, { words: parts, quoted })
  }
  const rest = text.replace(/["“”]([^"“”]+)["“”]/g, (_, inner: string) => {
    add(words(inner), true)
    return ' '
  })
  for (const token of rest.split(/\s+/)) {
    const core = token.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, '')
    if (/[\p{L}\p{N}][_.\-@:/+#]+[\p{L}\p{N}]/u.test(core)) add(words(core), false)
  }
  return [...found.values()].slice(0, 8)
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
export const KEYWORD_POSTINGS = 12_000
/** When even the rarest word matches more than KEYWORD_POSTINGS chunks: how many of them are ranked. */
export const CAPPED_CANDIDATES = 2_000

/** Keyword candidates re-scored with every informative word of the query (see `keywordPlan`). */
export const RESCORE_POOL = 200

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
    let idf = Math.log((chunks - df + 0.5) / (df + 0.5))
    if (idf <= 0) idf = 1e-6
    score += (idf * (tf * (k1 + 1))) / (tf + k1 * (1 - b + (b * length) / averageLength))
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

/** Keyword relevance in [0, 1): BM25 (FTS5 reports it negated) saturated at BM25_HALF. */
export function keywordRelevance(bm25: number | undefined): number {
  if (bm25 === undefined) return 0
  const score = Math.max(0, -bm25)
  return score / (score + BM25_HALF)
}

export interface Scored {
  chunkId: number
  score: number
  rrf: number
}

/**
 * Fuses the vector and keyword rankings. Every candidate from either list gets a score in [0, 1]:
 * `VECTOR_WEIGHT × cosine similarity + (1 − VECTOR_WEIGHT) × keyword relevance`, so a threshold
 * means the same thing whichever list found it. Results are ordered by score, reciprocal-rank
 * fusion breaking ties.
 */
export function fuse(
  vectorRanking: { chunkId: number; distance: number | null }[],
  keywordRanking: { chunkId: number; bm25: number }[],
  distanceOf: (chunkId: number) => number | null,
): Scored[] {
  const rrf = new Map<number, number>()
  vectorRanking.forEach((hit, rank) => rrf.set(hit.chunkId, (rrf.get(hit.chunkId) ?? 0) + 1 / (RRF_K + rank + 1)))
  keywordRanking.forEach((hit, rank) => rrf.set(hit.chunkId, (rrf.get(hit.chunkId) ?? 0) + 1 / (RRF_K + rank + 1)))
  const bm25 = new Map(keywordRanking.map((hit) => [hit.chunkId, hit.bm25]))
  const distances = new Map(vectorRanking.map((hit) => [hit.chunkId, hit.distance]))
  return [...rrf]
    .map(([chunkId, fused]) => {
      const distance = distances.has(chunkId) ? distances.get(chunkId)! : distanceOf(chunkId)
      const score = VECTOR_WEIGHT * similarity(distance) + (1 - VECTOR_WEIGHT) * keywordRelevance(bm25.get(chunkId))
      return { chunkId, score: Math.round(score * 10_000) / 10_000, rrf: fused }
    })
    .sort((a, b) => b.score - a.score || b.rrf - a.rrf)
}
