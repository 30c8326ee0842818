// The ranking before issue 23, kept verbatim as the ranking bench's baseline (not a product option):
// a fixed 0.6 / 0.4 blend of cosine similarity and saturated BM25 over pools of max(4 × limit, 40),
// and chunks holding a phrase of the query moved first. Paired with ./chunking.ts, the chunker of then.
import { words } from '../../../src/ml/text'
import { cosineDistance, queryPhrases } from '../../../src/modules/rag/ranking/scoring'
import type { CollectionRow } from '../../../src/modules/rag/store'
import type { SqliteRagStore as RagStore } from '../../../src/modules/rag/store/sqlite'

const VECTOR_WEIGHT = 0.6
const BM25_HALF = 4
const RRF_K = 60

const similarity = (distance: number | null) => (distance === null || Number.isNaN(distance) ? 0 : Math.min(1, Math.max(0, 1 - distance)))
const keywordRelevance = (bm25: number | undefined) => (bm25 === undefined ? 0 : Math.max(0, -bm25) / (Math.max(0, -bm25) + BM25_HALF))

/** The old `fuse`: every candidate of either list scored 0.6 × similarity + 0.4 × keyword relevance, RRF breaking ties. */
function fuse(
  vectorRanking: { chunkId: number; distance: number | null }[],
  keywordRanking: { chunkId: number; bm25: number }[],
  distanceOf: (chunkId: number) => number | null,
) {
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

/** The old `retrieve`, on the same store: the document id of each of the first `limit` results. */
export function retrieveBefore(store: RagStore, collection: CollectionRow, vector: Float32Array, query: string, limit: number): string[] {
  const pool = Math.max(limit * 4, 40)
  const vectorRanking = store.nearest(collection, vector, pool)
  const keywordRanking = store.keywordCandidates(collection, store.queryTerms(collection, query), pool)
  const keywordOnly = keywordRanking.map((hit) => hit.chunkId).filter((id) => !vectorRanking.some((hit) => hit.chunkId === id))
  const stored = store.vectors(collection, keywordOnly)
  const fused = fuse(vectorRanking, keywordRanking, (chunkId) => {
    const v = stored.get(chunkId)
    return v ? cosineDistance(vector, v) : null
  })
  const phrases = queryPhrases(query)
  const chunks = store.chunks(fused.map((hit) => hit.chunkId))
  let ordered = fused
  if (phrases.length) {
    const holds = (chunkId: number) => {
      const text = words(chunks.get(chunkId)?.content ?? '')
      return phrases.some(({ words: phrase }) => text.some((_, i) => phrase.every((word, j) => text[i + j] === word)))
    }
    const holders = new Set(fused.filter((hit) => holds(hit.chunkId)).map((hit) => hit.chunkId))
    ordered = [...fused.filter((hit) => holders.has(hit.chunkId)), ...fused.filter((hit) => !holders.has(hit.chunkId))]
  }
  return ordered.slice(0, limit).map((hit) => chunks.get(hit.chunkId)!.docId)
}
