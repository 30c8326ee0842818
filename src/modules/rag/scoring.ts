import { words } from '../../ml/text'

/** Weight of vector similarity in a result's score; the rest is keyword relevance. */
export const VECTOR_WEIGHT = 0.6
/** BM25 value at which keyword relevance reaches one half. */
export const BM25_HALF = 4
/** Reciprocal rank fusion constant (Cormack et al.). */
export const RRF_K = 60

/** A safe FTS5 query from free text: each word quoted (so no syntax can be injected), OR-ed. */
export function ftsQuery(text: string): string | null {
  const terms = [...new Set(words(text))].filter((w) => w.length > 1 || /\d/.test(w)).slice(0, 32)
  if (!terms.length) return null
  return terms.map((term) => `"${term.replaceAll('"', '""')}"`).join(' OR ')
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
