import type { Postgres } from '../../../../db/postgres'
import { phraseFrequency } from '../../ranking/phrase'

// The keyword side of PostgreSQL's RAG store: text as the index cuts it, tsvectors built by the
// server (KeywordVectorBuilder), and the readers of the keyword query's answers.

/** The text search configuration of the keyword index (migration 004): Porter stems, no stop words, as FTS5's `porter unicode61`. */
export const CONFIG = 'rag_english'
/** Words whose lexemes an ingest remembers (see keywordVectors): some 10 MB. */
const WORD_CACHE_LIMIT = 100_000
/** PostgreSQL keeps at most 255 positions of a lexeme and none past 16,383: chunks that reach either get the database's own to_tsvector. */
const MOST_POSITIONS = 255
const LAST_POSITION = 16_383
/** A lexeme's occurrence in a chunk as one number: lexeme id × POSITIONS + position. */
const POSITIONS = 16_384

/**
 * Text as FTS5's unicode61 tokenizer cuts it: letters and digits kept (diacritics removed), every
 * other character a separator. PostgreSQL's parser then sees only plain words and numbers, each
 * one token, so positions, lengths and phrases are counted as FTS5 counts them.
 */
export function keywordText(text: string): string {
  // ASCII text (most of it) with the same classes spelled in ASCII: several times faster.
  if (/^[\x00-\x7f]*$/.test(text)) return text.replace(/[^A-Za-z0-9]+/g, ' ').trim()
  return text.normalize('NFD').replace(/\p{M}+/gu, '').replace(/[^\p{L}\p{N}]+/gu, ' ').trim()
}


/** A tsquery lexeme, quoted (lexemes are letters and digits; quotes are doubled all the same). */
export const lexeme = (token: string) => `'${token.replaceAll("'", "''")}'`

/** A tsquery for a term's tokens: one lexeme, or the phrase of them. */
export const termQuery = (tokens: string[]) => (tokens.length === 1 ? lexeme(tokens[0]!) : `(${tokens.map(lexeme).join(' <-> ')})`)

/**
 * The lexemes to_tsvector makes of one word, in the order of their positions in it (1, 2, ...), as
 * ids into the store's list of lexemes; null when the word cannot be placed alone (see keywordVectors).
 */
export type WordLexemes = number[] | null

/** The tsvectors of a write's chunks as text (tsvector input), and how many of the chunks hold each lexeme. */
export interface KeywordVectors {
  literals: string[]
  held: Map<string, number>
  /** Each chunk's length in tokens (its words). */
  tokens: number[]
}

/** A lexeme as tsvector input takes it: letters and digits as they are (cheaper to send than quoted), anything else quoted. */
const vectorLexeme = (lexeme: string) => (/^[\p{L}\p{N}]+$/u.test(lexeme) ? lexeme : `'${lexeme.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`)

/** Builds the tsvectors of chunks (see keywordVectors), remembering the lexemes of each word it met. */
export class KeywordVectorBuilder {
  /** The lexemes of each word an ingest met, as ids into `lexemes`. */
  private readonly wordLexemes = new Map<string, WordLexemes>()
  private readonly lexemes: { name: string; input: string }[] = []
  private readonly lexemeIds = new Map<string, number>()

  /**
   * The tsvector of each chunk's keyword text, exactly as `to_tsvector('rag_english', text)` makes
   * it, built here: the text is words separated by single spaces (keywordText), and the parser
   * reads each word alone, so a chunk's tsvector is its words' lexemes at their running positions.
   * Each distinct word is run through to_tsvector once (then remembered), where the database
   * otherwise parsed and stemmed every chunk whole: that, and counting the lexemes of each write in
   * SQL, took most of an ingest's time in PostgreSQL. A chunk this cannot place exactly (a word with
   * gaps in its positions or no lexeme, more positions than PostgreSQL keeps) gets the database's own.
   */
  async keywordVectors(sql: Postgres, texts: string[]): Promise<KeywordVectors> {
    // Each chunk's words, and their lexemes looked up once: undefined for the words not met before, asked for below.
    const words = texts.map((text) => (text ? text.split(' ') : []))
    const found = words.map((own) => {
      const ids: (WordLexemes | undefined)[] = new Array(own.length)
      for (let j = 0; j < own.length; j++) ids[j] = this.wordLexemes.get(own[j]!)
      return ids
    })
    const unknown = new Set<string>()
    found.forEach((ids, i) => {
      for (let j = 0; j < ids.length; j++) if (ids[j] === undefined) unknown.add(words[i]![j]!)
    })
    if (unknown.size) {
      if (this.wordLexemes.size + unknown.size > WORD_CACHE_LIMIT) {
        // Forgotten all at once (lexeme ids with them); this write's words are asked for again.
        this.wordLexemes.clear()
        this.lexemes.length = 0
        this.lexemeIds.clear()
        for (const own of words) for (const word of own) unknown.add(word)
        for (const ids of found) ids.fill(undefined)
      }
      const asked = [...unknown]
      const rows = await sql`SELECT w.i::int AS i, l.lexeme, l.positions FROM unnest(${asked}::text[]) WITH ORDINALITY AS w(word, i)
        CROSS JOIN LATERAL unnest(to_tsvector(${CONFIG}::regconfig, w.word)) l`
      const entries = asked.map(() => [] as { lexeme: string; at: number }[])
      for (const row of rows) for (const at of row.positions as number[]) entries[Number(row.i) - 1]!.push({ lexeme: row.lexeme, at })
      asked.forEach((word, i) => {
        const own = entries[i]!.sort((a, b) => a.at - b.at)
        // Placed alone only when its tokens are positions 1, 2, ... each with one lexeme.
        if (!own.length || own.some((entry, j) => entry.at !== j + 1)) {
          this.wordLexemes.set(word, null)
          return
        }
        this.wordLexemes.set(
          word,
          own.map(({ lexeme }) => {
            let id = this.lexemeIds.get(lexeme)
            if (id === undefined) {
              this.lexemeIds.set(lexeme, (id = this.lexemes.length))
              this.lexemes.push({ name: lexeme, input: vectorLexeme(lexeme) })
            }
            return id
          }),
        )
      })
      found.forEach((ids, i) => {
        for (let j = 0; j < ids.length; j++) if (ids[j] === undefined) ids[j] = this.wordLexemes.get(words[i]![j]!)
      })
    }
    const literals: string[] = []
    const heldById = new Int32Array(this.lexemes.length)
    const odd: number[] = []
    // Each occurrence as lexeme id × 2^14 + position: sorted, they are the tsvector's entries in order.
    let keys = new Float64Array(1024)
    found.forEach((words, chunk) => {
      let position = 0
      for (const ids of words) {
        if (!ids) {
          position = -1
          break
        }
        if (position + ids.length > keys.length) {
          const larger = new Float64Array(Math.max(keys.length * 2, position + ids.length))
          larger.set(keys)
          keys = larger
        }
        for (let j = 0; j < ids.length; j++) {
          position++
          keys[position - 1] = ids[j]! * POSITIONS + position
        }
      }
      if (position < 0 || position > LAST_POSITION) {
        odd.push(chunk)
        literals.push('')
        return
      }
      const sorted = keys.subarray(0, position).sort()
      let literal = ''
      const own: number[] = []
      let count = 0
      for (let j = 0; j < sorted.length; j++) {
        const id = Math.floor(sorted[j]! / POSITIONS)
        const at = sorted[j]! - id * POSITIONS
        if (id !== own[own.length - 1]) {
          literal += (own.length ? ' ' : '') + this.lexemes[id]!.input + ':' + at
          own.push(id)
          count = 1
        } else {
          literal += ',' + at
          if (++count > MOST_POSITIONS) break
        }
      }
      if (count > MOST_POSITIONS) {
        odd.push(chunk)
        literals.push('')
        return
      }
      for (const id of own) heldById[id]!++
      literals.push(literal)
    })
    const held = new Map<string, number>()
    heldById.forEach((n, id) => {
      if (n) held.set(this.lexemes[id]!.name, n)
    })
    if (odd.length) {
      const rows = await sql`SELECT w.i::int AS i, v::text AS literal, tsvector_to_array(v) AS lexemes
        FROM unnest(${odd.map((i) => texts[i]!)}::text[]) WITH ORDINALITY AS w(text, i) CROSS JOIN LATERAL to_tsvector(${CONFIG}::regconfig, w.text) v`
      for (const row of rows) {
        literals[odd[Number(row.i) - 1]!] = row.literal
        for (const lexeme of row.lexemes as string[]) held.set(lexeme, (held.get(lexeme) ?? 0) + 1)
      }
    }
    return { literals, held, tokens: words.map((own) => own.length) }
  }
}

/** A lexeme as a tsvector's text shows it: always quoted, quotes and backslashes doubled. */
export const printedLexeme = (lexeme: string) => `'${lexeme.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`

/** Where a lexeme's positions are in a tsvector's text (`'lexeme':3A,9A`), as [start, end), or null when it is not there. */
function positionsSpan(text: string, quoted: string): [number, number] | null {
  const needle = `${quoted}:`
  let at = text.indexOf(needle)
  // At the start of an entry: the first one, or after a space.
  while (at > 0 && text[at - 1] !== ' ') at = text.indexOf(needle, at + 1)
  if (at < 0) return null
  const start = at + needle.length
  const space = text.indexOf(' ', start)
  return [start, space < 0 ? text.length : space]
}

/**
 * How often a term (its tokens as tsvector text quotes them) occurs in a chunk, from the chunk's
 * tsvector text cut down to the query's tokens: a word's count of positions; a phrase's count of
 * places where its tokens follow one another (as phraseFrequency counts them).
 */
export function termFrequency(text: string, quoted: string[]): number {
  if (quoted.length === 1) {
    const span = positionsSpan(text, quoted[0]!)
    if (!span) return 0
    let count = 1
    for (let i = span[0]; i < span[1]; i++) if (text.charCodeAt(i) === 44) count++
    return count
  }
  const offsets = new Map<string, number[]>()
  for (const [i, token] of quoted.entries()) {
    const span = positionsSpan(text, token)
    if (!span) return 0
    offsets.set(String(i), text.slice(span[0], span[1]).split(',').map((position) => Number.parseInt(position, 10)))
  }
  return phraseFrequency(
    quoted.map((_, i) => String(i)),
    offsets,
  )
}

/**
 * The keyword query's matches from its lines (`id tokens found`, see keywordCandidates): each
 * chunk's id, length in tokens and tsvector text cut down to the query's tokens.
 */
export function matchLines(text: string): { ids: Float64Array; lengths: Float64Array; texts: string[] } {
  let lines = text ? 1 : 0
  for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) lines++
  const ids = new Float64Array(lines)
  const lengths = new Float64Array(lines)
  const texts: string[] = new Array(lines)
  let at = 0
  for (let r = 0; r < lines; r++) {
    let end = text.indexOf('\n', at)
    if (end < 0) end = text.length
    let id = 0
    let i = at
    for (; i < end && text.charCodeAt(i) !== 32; i++) id = id * 10 + text.charCodeAt(i) - 48
    let tokens = 0
    for (i++; i < end && text.charCodeAt(i) !== 32; i++) tokens = tokens * 10 + text.charCodeAt(i) - 48
    ids[r] = id
    lengths[r] = tokens
    texts[r] = text.slice(i + 1, end)
    at = end + 1
  }
  return { ids, lengths, texts }
}

/**
 * How many positions a lexeme has in a tsvector's text (`needle`: the lexeme as the text quotes it,
 * then a colon): termFrequency's count for a one-token term, without building its needle per row.
 */
export function positionCount(text: string, needle: string): number {
  let at = text.indexOf(needle)
  // At the start of an entry: the first one, or after a space.
  while (at > 0 && text.charCodeAt(at - 1) !== 32) at = text.indexOf(needle, at + 1)
  if (at < 0) return 0
  let count = 1
  for (let i = at + needle.length; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === 32) break
    if (code === 44) count++
  }
  return count
}

/**
 * Row numbers in the order of (score, id), lowest first, as sorting them all would give them (ids
 * are distinct: the order is total), sorted only as far as read: the first `first` from a heap
 * over all of them, the rest sorted only when more are asked for (distinctHits reads past its
 * pool only when it leaves twins out).
 */
export function* bestFirst(scores: Float64Array, ids: Float64Array, first: number): Generator<number> {
  const n = scores.length
  const before = (a: number, b: number) => scores[a]! < scores[b]! || (scores[a] === scores[b] && ids[a]! < ids[b]!)
  if (n <= first * 2) {
    const all = Array.from({ length: n }, (_, r) => r).sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0))
    yield* all
    return
  }
  // A heap of the `first` best so far, its worst at the top.
  const heap: number[] = []
  const down = (from: number) => {
    let at = from
    for (;;) {
      const left = at * 2 + 1
      if (left >= heap.length) return
      const right = left + 1
      const worse = right < heap.length && before(heap[left]!, heap[right]!) ? right : left
      if (!before(heap[at]!, heap[worse]!)) return
      ;[heap[at], heap[worse]] = [heap[worse]!, heap[at]!]
      at = worse
    }
  }
  for (let r = 0; r < n; r++) {
    if (heap.length < first) {
      heap.push(r)
      let at = heap.length - 1
      while (at > 0) {
        const parent = (at - 1) >> 1
        if (!before(heap[parent]!, heap[at]!)) break
        ;[heap[at], heap[parent]] = [heap[parent]!, heap[at]!]
        at = parent
      }
    } else if (before(r, heap[0]!)) {
      heap[0] = r
      down(0)
    }
  }
  const best = heap.sort((a, b) => (before(a, b) ? -1 : 1))
  yield* best
  const taken = new Set(best)
  const rest: number[] = []
  for (let r = 0; r < n; r++) if (!taken.has(r)) rest.push(r)
  yield* rest.sort((a, b) => (before(a, b) ? -1 : 1))
}

/**
 * Where each lexeme occurs in a chunk, from a tsvector's text whose positions all carry weight A
 * (`'backup':3A,9A 'restor':4A`; see keywordCandidates): lexeme → positions.
 */
export function filteredOffsets(text: string): Map<string, number[]> {
  const offsets = new Map<string, number[]>()
  let at = 0
  while (at < text.length) {
    // A quoted lexeme ('' inside is one quote), a colon, positions separated by commas.
    let end = at + 1
    let lexeme = ''
    for (;;) {
      const quote = text.indexOf("'", end)
      if (quote < 0) return offsets
      lexeme += text.slice(end, quote)
      if (text[quote + 1] === "'") {
        lexeme += "'"
        end = quote + 2
      } else {
        end = quote + 1
        break
      }
    }
    const space = text.indexOf(' ', end)
    const stop = space < 0 ? text.length : space
    const positions = text
      .slice(end + 1, stop)
      .split(',')
      .map((position) => Number.parseInt(position, 10))
    offsets.set(lexeme.replaceAll('\\\\', '\\'), positions)
    at = stop + 1
  }
  return offsets
}

