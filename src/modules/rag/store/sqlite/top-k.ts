/* What block-max MaxScore (postings.ts) and the term-at-a-time pass (accumulated-scores.ts) share. */

const K1 = 1.2
const B = 0.75

/** What a term's count in a chunk of `length` tokens adds to the chunk's BM25 (the same floats as scoring.ts's bm25()). */
export function contribution(idf: number, tf: number, length: number, averageLength: number): number {
  return (idf * (tf * (K1 + 1))) / (tf + K1 * (1 - B + (B * length) / averageLength))
}

/** One term's postings: chunk ids ascending, the term's count in each and each chunk's length in tokens. */
export interface TermPostings {
  ids: Uint32Array
  tfs: Uint16Array
  lengths: Uint16Array
  /** Per block of BLOCK postings: the largest count and the shortest chunk. */
  blockMaxTf: Uint16Array
  blockMinLength: Uint16Array
}

/** One term of a top-k query: its postings and its idf (BM25's, as FTS5 computes it). */
export interface ScoredTerm {
  postings: TermPostings
  idf: number
}

/**
 * The k best chunks of a keyword top-k (postings.ts, accumulated-scores.ts): a min-heap of ids and
 * scores, the worst on top, ties broken by chunk id (the larger id ranks lower).
 */
export class BestChunks {
  readonly ids: Float64Array
  readonly scores: Float64Array
  size = 0

  constructor(readonly k: number) {
    this.ids = new Float64Array(k)
    this.scores = new Float64Array(k)
  }

  /** The k-th score so far (the heap's top); only meaningful once full. */
  get worst(): number {
    return this.scores[0]!
  }

  get full(): boolean {
    return this.size === this.k
  }

  /** Whether `id` with `score` would rank below the worst kept (a lower score, or the same and a larger id). */
  ranksBelowWorst(id: number, score: number): boolean {
    return score < this.scores[0]! || (score === this.scores[0] && id > this.ids[0]!)
  }

  /** Adds a chunk while fewer than k are kept. */
  push(id: number, score: number): void {
    let i = this.size++
    this.ids[i] = id
    this.scores[i] = score
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!this.below(i, parent)) break
      this.swap(i, parent)
      i = parent
    }
  }

  /** Puts a chunk in the worst one's place (k kept). */
  replaceWorst(id: number, score: number): void {
    this.ids[0] = id
    this.scores[0] = score
    for (let i = 0; ; ) {
      const left = 2 * i + 1
      const right = left + 1
      let least = i
      if (left < this.size && this.below(left, least)) least = left
      if (right < this.size && this.below(right, least)) least = right
      if (least === i) return
      this.swap(i, least)
      i = least
    }
  }

  /** The chunks kept, best first, ties by chunk id. */
  ranked(): { ids: Float64Array; scores: Float64Array } {
    const order = Array.from({ length: this.size }, (_, i) => i).sort((a, b) => this.scores[b]! - this.scores[a]! || this.ids[a]! - this.ids[b]!)
    return { ids: Float64Array.from(order, (i) => this.ids[i]!), scores: Float64Array.from(order, (i) => this.scores[i]!) }
  }

  private below(a: number, b: number): boolean {
    return this.scores[a]! < this.scores[b]! || (this.scores[a] === this.scores[b] && this.ids[a]! > this.ids[b]!)
  }

  private swap(a: number, b: number): void {
    const id = this.ids[a]!
    const score = this.scores[a]!
    this.ids[a] = this.ids[b]!
    this.scores[a] = this.scores[b]!
    this.ids[b] = id
    this.scores[b] = score
  }
}
