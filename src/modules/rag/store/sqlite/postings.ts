import type { Database } from 'bun:sqlite'
import { accumulatedScores } from './accumulated-scores'
import { BestChunks, contribution, type ScoredTerm, type TermPostings } from './top-k'

/**
 * Postings of a collection's common terms, read from its FTS5 index, and keyword top-k over them
 * with early termination (block-max MaxScore): a large collection's query of common words scores
 * the few chunks that can still reach its top k instead of every chunk holding one of the words.
 * Pure functions over a connection, so that the keyword threads and (for an in-memory database)
 * the server's thread run the same code. See docs/knowledge-base.md, "Keyword top-k".
 */

/** Postings per block: each block keeps its largest term count and shortest chunk, which bound its scores. */
export const BLOCK = 128

export type { ScoredTerm, TermPostings } from './top-k'

/** An SQLite varint (big-endian, 7 bits a byte, the ninth byte whole): [value, offset after it]. */
export function readVarint(bytes: Uint8Array, offset: number): [number, number] {
  let value = 0
  for (let i = 0; i < 8; i++) {
    const byte = bytes[offset + i] ?? 0
    if (byte < 0x80) return [value * 128 + byte, offset + i + 1]
    value = value * 128 + (byte & 0x7f)
  }
  return [value * 256 + (bytes[offset + 8] ?? 0), offset + 9]
}

/** Typed arrays over shared memory when `shared` (handed to other threads without a copy). */
function allocate<T extends Uint16Array | Uint32Array>(make: new (buffer: ArrayBufferLike) => T, bytesPer: number, length: number, shared: boolean): T {
  return new make(shared ? new SharedArrayBuffer(Math.max(1, length) * bytesPer) : new ArrayBuffer(Math.max(1, length) * bytesPer)).subarray(0, length) as T
}

/** Bytes a term's postings take. */
export function postingsBytes(postings: TermPostings): number {
  return postings.ids.byteLength + postings.tfs.byteLength + postings.lengths.byteLength + postings.blockMaxTf.byteLength + postings.blockMinLength.byteLength
}

/** Chunk lengths (in tokens) of a collection's index, by chunk id ascending, as read up to `upto`. */
export interface ChunkLengths {
  ids: Uint32Array
  lengths: Uint32Array
  count: number
  upto: number
}

/**
 * Adds the chunk lengths of the index's rows past `known.upto` (a new array when `known` is null):
 * rows deleted since stay listed, which is harmless, for postings read afterwards never name them.
 */
export function readChunkLengths(db: Database, table: string, known: ChunkLengths | null): ChunkLengths {
  let { ids, lengths, count, upto } = known ?? { ids: new Uint32Array(1024), lengths: new Uint32Array(1024), count: 0, upto: 0 }
  for (const [id, sz] of db.query<unknown, [number]>(`SELECT id, sz FROM ${table}_docsize WHERE id > ? ORDER BY id`).values(upto) as [number, Uint8Array][]) {
    if (count === ids.length) {
      const grownIds = new Uint32Array(ids.length * 2)
      grownIds.set(ids)
      const grownLengths = new Uint32Array(ids.length * 2)
      grownLengths.set(lengths)
      ids = grownIds
      lengths = grownLengths
    }
    ids[count] = id
    lengths[count++] = readVarint(sz, 0)[0]
    upto = id
  }
  return { ids, lengths, count, upto }
}

/**
 * The postings of one term (an FTS5 token) of a collection's index, read through an fts5vocab
 * 'instance' table over it (`vocab`: one row per occurrence, by chunk then offset), with the chunks'
 * lengths from `lengths` (read in the same transaction). Null when a count or a length does not fit
 * 16 bits: such a term is searched as before.
 */
export function readPostings(db: Database, vocab: string, term: string, lengths: ChunkLengths, shared: boolean): TermPostings | null {
  const docs = db.query<unknown, [string]>(`SELECT doc FROM ${vocab} WHERE term = ?`).values(term) as [number][]
  let distinct = 0
  for (let i = 0; i < docs.length; i++) if (i === 0 || docs[i]![0] !== docs[i - 1]![0]) distinct++
  const ids = allocate(Uint32Array, 4, distinct, shared)
  const tfs = allocate(Uint16Array, 2, distinct, shared)
  const own = allocate(Uint16Array, 2, distinct, shared)
  let n = -1
  let at = 0
  for (let i = 0; i < docs.length; i++) {
    const doc = docs[i]![0]
    if (n >= 0 && ids[n] === doc) {
      if (tfs[n] === 0xffff) return null
      tfs[n]!++
      continue
    }
    ids[++n] = doc
    tfs[n] = 1
    // Both ascending: the length is found by walking forward.
    while (at < lengths.count && lengths.ids[at]! < doc) at++
    if (at >= lengths.count || lengths.ids[at] !== doc || lengths.lengths[at]! > 0xffff) return null
    own[n] = lengths.lengths[at]!
  }
  const blocks = Math.ceil(distinct / BLOCK)
  const blockMaxTf = allocate(Uint16Array, 2, blocks, shared)
  const blockMinLength = allocate(Uint16Array, 2, blocks, shared)
  for (let b = 0; b < blocks; b++) {
    let maxTf = 0
    let minLength = 0xffff
    for (let i = b * BLOCK; i < Math.min(distinct, (b + 1) * BLOCK); i++) {
      if (tfs[i]! > maxTf) maxTf = tfs[i]!
      if (own[i]! < minLength) minLength = own[i]!
    }
    blockMaxTf[b] = maxTf
    blockMinLength[b] = minLength
  }
  return { ids, tfs, lengths: own, blockMaxTf, blockMinLength }
}


/** The first index at or after `from` whose id is at least `target` (galloping, then binary search). */
function seek(ids: Uint32Array, from: number, target: number): number {
  const end = ids.length
  if (from >= end || ids[from]! >= target) return from
  let step = 1
  let low = from
  let high = from + 1
  while (high < end && ids[high]! < target) {
    low = high
    step *= 2
    high = low + step
  }
  if (high > end) high = end
  // ids[low] < target; the answer is in (low, high].
  while (low + 1 < high) {
    const middle = (low + high) >>> 1
    if (ids[middle]! < target) low = middle
    else high = middle
  }
  return high
}

/** Past every chunk id (ids are 32 bits). */
const NO_CHUNK = 0x100000000

/**
 * The k best chunks by BM25 over `terms` (summed in their order, as FTS5's bm25() and scoring.ts's
 * bm25() do), best first, ties by chunk id: block-max MaxScore. Terms are ordered by their largest
 * possible score; those whose bounds together cannot lift a chunk past the k-th score found so far
 * stop yielding candidates and are only probed, block bounds first, for chunks the others found.
 * Chunks in `deleted` are skipped. Scores are positive (FTS5 reports them negated).
 */
export function topScores(terms: ScoredTerm[], k: number, averageLength: number, deleted: Set<number> | null): { ids: Float64Array; scores: Float64Array } {
  const count = terms.length
  if (k <= 0 || !count) return { ids: new Float64Array(0), scores: new Float64Array(0) }
  // Each block's bound: its largest count in its shortest chunk (a contribution grows with the one, shrinks with the other).
  const bounds = terms.map(({ postings, idf }) => {
    const blocks = new Float64Array(postings.blockMaxTf.length)
    const last = new Uint32Array(blocks.length)
    let max = 0
    for (let b = 0; b < blocks.length; b++) {
      blocks[b] = contribution(idf, postings.blockMaxTf[b]!, postings.blockMinLength[b]!, averageLength)
      last[b] = postings.ids[Math.min(postings.ids.length, (b + 1) * BLOCK) - 1]!
      if (blocks[b]! > max) max = blocks[b]!
    }
    return { blocks, last, max }
  })
  // Lists by bound ascending; `prefix[j]`: the bounds of lists 0..j together.
  const order = terms.map((_, i) => i).sort((a, b) => bounds[a]!.max - bounds[b]!.max)
  const idsOf = order.map((i) => terms[i]!.postings.ids)
  const tfsOf = order.map((i) => terms[i]!.postings.tfs)
  const lengthsOf = order.map((i) => terms[i]!.postings.lengths)
  const blockBoundsOf = order.map((i) => bounds[i]!.blocks)
  const blockLastOf = order.map((i) => bounds[i]!.last)
  const idfs = Float64Array.from(order, (i) => terms[i]!.idf)
  const ends = Int32Array.from(idsOf, (ids) => ids.length)
  const blockCounts = Int32Array.from(blockBoundsOf, (blocks) => blocks.length)
  const prefix = new Float64Array(count)
  order.forEach((i, j) => (prefix[j] = (j ? prefix[j - 1]! : 0) + bounds[i]!.max))
  // Where each term (by its own index) is among the lists.
  const slot = new Int32Array(count)
  order.forEach((t, j) => (slot[t] = j))
  const at = new Int32Array(count)
  const block = new Int32Array(count)
  const own = new Float64Array(count)
  const held = new Uint8Array(count)
  // A min-heap of the best k: worst on top.
  const best = new BestChunks(k)
  // Below `cut` nothing enters: the k-th score, less a margin for rounding (bounds are sums in another order).
  let cut = -Infinity
  let essential = 0
  for (;;) {
    let doc = NO_CHUNK
    for (let j = essential; j < count; j++) {
      const i = at[j]!
      if (i < ends[j]!) {
        const id = idsOf[j]![i]!
        if (id < doc) doc = id
      }
    }
    if (doc === NO_CHUNK) break
    let score = 0
    for (let j = essential; j < count; j++) {
      const i = at[j]!
      if (i < ends[j]! && idsOf[j]![i] === doc) {
        const value = contribution(idfs[j]!, tfsOf[j]![i]!, lengthsOf[j]![i]!, averageLength)
        own[j] = value
        held[j] = 1
        score += value
        at[j] = i + 1
      } else held[j] = 0
    }
    if (essential > 0) {
      // The other lists' block bounds at this chunk, then each probed, the likeliest first.
      let rest = 0
      for (let j = 0; j < essential; j++) {
        held[j] = 0
        const last = blockLastOf[j]!
        let b = block[j]!
        while (b < blockCounts[j]! && last[b]! < doc) b++
        block[j] = b
        if (b < blockCounts[j]!) rest += blockBoundsOf[j]![b]!
      }
      if (score + rest < cut) continue
      let skipped = false
      for (let j = essential - 1; j >= 0; j--) {
        if (score + rest < cut) {
          skipped = true
          break
        }
        const b = block[j]!
        if (b >= blockCounts[j]!) continue
        rest -= blockBoundsOf[j]![b]!
        const ids = idsOf[j]!
        const from = at[j]! > b * BLOCK ? at[j]! : b * BLOCK
        const i = ids[from]! >= doc ? from : seek(ids, from, doc)
        at[j] = i
        if (i < ends[j]! && ids[i] === doc) {
          const value = contribution(idfs[j]!, tfsOf[j]![i]!, lengthsOf[j]![i]!, averageLength)
          own[j] = value
          held[j] = 1
          score += value
        }
      }
      if (skipped) continue
    }
    if (score < cut || (deleted !== null && deleted.has(doc))) continue
    // The score itself summed in the terms' own order, as the exhaustive sum is.
    let exact = 0
    for (let t = 0; t < count; t++) {
      const j = slot[t]!
      if (held[j]) exact += own[j]!
    }
    if (!best.full) best.push(doc, exact)
    else {
      // Chunks come in id order, so one that only ties the k-th is after it.
      if (exact <= best.worst) continue
      best.replaceWorst(doc, exact)
    }
    if (best.full) {
      const threshold = best.worst
      cut = threshold - 1e-9 * Math.max(1, threshold)
      while (essential < count && prefix[essential]! < cut) essential++
    }
  }
  return best.ranked()
}

/** Chunk lengths kept per index table, read again whole after a deletion (`deletions` changed: a deleted chunk's id may come back). */
export class ChunkLengthsCache {
  private readonly tables = new Map<string, { deletions: number; lengths: ChunkLengths }>()

  /** The table's chunk lengths up to now; call inside the read transaction that reads postings. */
  read(db: Database, table: string, deletions: number): ChunkLengths {
    const known = this.tables.get(table)
    const lengths = readChunkLengths(db, table, known && known.deletions === deletions ? known.lengths : null)
    this.tables.set(table, { deletions, lengths })
    return lengths
  }

  forget(table: string): void {
    this.tables.delete(table)
  }

  clear(): void {
    this.tables.clear()
  }
}

/** A term's postings read whole at query time (a term in fewer chunks than postings are kept for), lengths by point look-ups. */
export function readFreshPostings(db: Database, table: string, vocab: string, term: string): TermPostings | null {
  const docs = db.query<unknown, [string]>(`SELECT DISTINCT doc FROM ${vocab} WHERE term = ?`).values(term) as [number][]
  const found = db
    .query<unknown, [string]>(`SELECT id, sz FROM ${table}_docsize WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`)
    .values(JSON.stringify(docs.map((row) => row[0]))) as [number, Uint8Array][]
  const lengths: ChunkLengths = { ids: Uint32Array.from(found, (row) => row[0]), lengths: Uint32Array.from(found, (row) => readVarint(row[1], 0)[0]), count: found.length, upto: 0 }
  return readPostings(db, vocab, term, lengths, false)
}

/** The fts5vocab 'instance' table over an index, on this connection (temp: nothing on disk). */
export function instanceVocab(db: Database, table: string): string {
  if (!/^rag_fts_\d+$/.test(table)) throw new Error(`not a keyword index: ${table}`)
  db.run(`CREATE VIRTUAL TABLE IF NOT EXISTS temp.${table}_instances USING fts5vocab(main, ${table}, instance)`)
  return `temp.${table}_instances`
}

/**
 * Reads the postings of `terms` of an index in one read transaction: each term's postings (null:
 * cannot be kept, see readPostings) and the highest chunk id they cover.
 */
export function buildPostings(db: Database, table: string, terms: string[], deletions: number, cache: ChunkLengthsCache, shared: boolean): { postings: (TermPostings | null)[]; upto: number } {
  const vocab = instanceVocab(db, table)
  return db.transaction(() => {
    const lengths = cache.read(db, table, deletions)
    return { postings: terms.map((term) => readPostings(db, vocab, term, lengths, shared)), upto: lengths.upto }
  })()
}

/** A top-k query's term: kept postings, or a term (an FTS5 token) whose postings are read now; its idf. */
export type TopKTerm = { idf: number } & ({ postings: TermPostings } | { term: string })

/** Top-k over kept and freshly read postings (see accumulatedScores, else topScores); null when a fresh term's postings cannot be read so. */
export function searchTopK(db: Database, table: string, terms: TopKTerm[], k: number, averageLength: number, deleted: Set<number> | null): { ids: Float64Array; scores: Float64Array } | null {
  const vocab = instanceVocab(db, table)
  const scored: ScoredTerm[] = []
  for (const term of terms) {
    const postings = 'postings' in term ? term.postings : readFreshPostings(db, table, vocab, term.term)
    if (!postings) return null
    scored.push({ postings, idf: term.idf })
  }
  return accumulatedScores(scored, k, averageLength, deleted) ?? topScores(scored, k, averageLength, deleted)
}
