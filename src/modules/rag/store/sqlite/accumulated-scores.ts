import { BestChunks, contribution, type ScoredTerm } from './top-k'

/**
 * Slots of the accumulator at most (8 bytes each: 64 MB, on the keyword thread): a query whose
 * postings span more chunk ids is searched by block-max MaxScore (postings.ts, topScores).
 */
export const ACCUMULATOR_SLOTS = 8 * 1024 * 1024

/** Kept from query to query (one per thread): zero everywhere between queries. */
let accumulator = new Float64Array(0)
let touched = new Uint32Array(0)

/**
 * The k best chunks by BM25 over `terms`, best first, ties by chunk id, as topScores finds them (the
 * same ids and the same floats: each chunk's score summed in the terms' order): term at a time, every
 * posting added into an array indexed by chunk id, then the best k of the chunks touched. Where a
 * query's words are all common (the queries top-k serves: none rare enough for the FTS5 plan),
 * MaxScore skips little (five common words at 200,000 chunks: 50,000 of 120,000 postings' chunks
 * visited, ~7 ms) and a plain pass over every posting costs less (~3 ms). Null when the postings
 * span more than ACCUMULATOR_SLOTS chunk ids.
 */
export function accumulatedScores(terms: ScoredTerm[], k: number, averageLength: number, deleted: Set<number> | null): { ids: Float64Array; scores: Float64Array } | null {
  let low = Number.POSITIVE_INFINITY
  let high = -1
  let total = 0
  for (const { postings } of terms) {
    const n = postings.ids.length
    if (!n) continue
    total += n
    if (postings.ids[0]! < low) low = postings.ids[0]!
    if (postings.ids[n - 1]! > high) high = postings.ids[n - 1]!
  }
  if (k <= 0 || high < 0) return { ids: new Float64Array(0), scores: new Float64Array(0) }
  const span = high - low + 1
  if (span > ACCUMULATOR_SLOTS) return null
  if (accumulator.length < span) accumulator = new Float64Array(Math.min(ACCUMULATOR_SLOTS, Math.max(span, accumulator.length * 2)))
  if (touched.length < total) touched = new Uint32Array(Math.max(total, touched.length * 2))
  // Every contribution is positive (idf is floored above 0): a slot at 0 is one no posting touched yet.
  let count = 0
  for (const { postings, idf } of terms) {
    const { ids, tfs, lengths } = postings
    for (let i = 0; i < ids.length; i++) {
      const slot = ids[i]! - low
      const before = accumulator[slot]!
      if (before === 0) touched[count++] = slot
      accumulator[slot] = before + contribution(idf, tfs[i]!, lengths[i]!, averageLength)
    }
  }
  // The best k of the chunks touched; each slot put back to 0 as it is read.
  const best = new BestChunks(k)
  for (let c = 0; c < count; c++) {
    const slot = touched[c]!
    const score = accumulator[slot]!
    accumulator[slot] = 0
    const id = slot + low
    if (deleted !== null && deleted.has(id)) continue
    if (!best.full) best.push(id, score)
    else if (!best.ranksBelowWorst(id, score)) best.replaceWorst(id, score)
  }
  return best.ranked()
}
