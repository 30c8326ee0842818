// The corpus of `bun run bench rag-scale` (issue 54), shared by its SQLite part (bench/rag-scale.ts)
// and its PostgreSQL part (bench/rag-scale-postgres.ts): one-chunk documents of 45 words drawn
// from a common vocabulary (Zipf-distributed, English function words among the commonest) and a
// long tail of rare words, 200 short notes each answering one question, and the three kinds of
// query the bench times. Everything is a pure function of the seed and an index: document i is the
// same whichever batch, process or backend asks for it, so a run can make any slice of the corpus
// without holding the rest.

/** A document: `id` `scale-<i>`, its text of DOCUMENT_WORDS words. */
export interface ScaleDocument {
  id: string
  content: string
  metadata: Record<string, unknown>
}

/** A note that answers exactly one question (`answers`: the note's document id). */
export interface Needle {
  note: ScaleDocument
  question: string
}

export type QueryKind = 'document' | 'common' | 'rare'

export const DOCUMENT_WORDS = 45
/** Words of each document drawn from the rare tail (the rest from the common vocabulary). */
export const RARE_PER_DOCUMENT = 3
export const COMMON_WORDS = 2_000
export const RARE_WORDS = 250_000
export const NEEDLES = 200
export const DEFAULT_SEED = 54

/** A 32-bit mix of two integers (murmur3's finalizer over a combination): a document's own seed. */
function mix(a: number, b: number): number {
  let h = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b + 0x632be5ab, 0xc2b2ae35)
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}

/** mulberry32: a small, fast, seeded generator of numbers in [0, 1). */
export function generator(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const ONSETS = ['b', 'c', 'd', 'f', 'g', 'h', 'j', 'k', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'w', 'z', 'br', 'ch', 'dr', 'gl', 'pl', 'st', 'tr', 'sk', 'th', 'qu']
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'ai', 'ou', 'ea', 'io']
const CODAS = ['', 'n', 'r', 'l', 'm', 'x', 'k', 'nd', 'st', 'rt', 'p', 'ld']

/**
 * A pronounceable made-up word for a number: distinct numbers give distinct words (the syllables
 * spell the number in a mixed base), and none ends in "s", "ed" or "ing", so the porter stemmer
 * leaves each its own token.
 */
function madeUpWord(n: number, syllables: number, salt: number): string {
  let rest = n
  let word = ''
  for (let i = 0; i < syllables; i++) {
    const onset = ONSETS[rest % ONSETS.length]!
    rest = Math.floor(rest / ONSETS.length)
    const vowel = VOWELS[(rest + salt + i) % VOWELS.length]!
    rest = Math.floor(rest / VOWELS.length)
    word += onset + vowel
  }
  return word + CODAS[(n + salt) % CODAS.length]! + (rest > 0 ? rest.toString(36) : '')
}

/** English function words: the commonest of the common vocabulary, as in real prose. */
const FUNCTION_WORDS = ['the', 'of', 'and', 'to', 'in', 'is', 'for', 'that', 'with', 'on', 'as', 'by', 'at', 'from', 'this', 'be', 'are', 'an', 'or', 'it']

/** The common vocabulary, commonest first: function words, then made-up words of two syllables. */
export const COMMON_VOCABULARY: string[] = (() => {
  const words = [...FUNCTION_WORDS]
  const seen = new Set(words)
  for (let n = 0; words.length < COMMON_WORDS; n++) {
    // 7919 is prime to the 63,504 two-syllable spellings: a permutation of them, no digits needed.
    const word = madeUpWord((n * 7919 + 13) % 63_504, 2, 1)
    if (!seen.has(word)) {
      seen.add(word)
      words.push(word)
    }
  }
  return words
})()
const commonSet = new Set(COMMON_VOCABULARY)

/** The i-th rare word (0 <= i < RARE_WORDS): three syllables, none a common word. */
export function rareWord(i: number): string {
  const word = madeUpWord(i, 3, 5)
  return commonSet.has(word) ? `${word}q` : word
}

/** Cumulative Zipf weights (exponent 1) of the common vocabulary, for drawing by binary search. */
const ZIPF = (() => {
  const cumulative = new Float64Array(COMMON_WORDS)
  let sum = 0
  for (let i = 0; i < COMMON_WORDS; i++) cumulative[i] = sum += 1 / (i + 1)
  for (let i = 0; i < COMMON_WORDS; i++) cumulative[i]! /= sum
  return cumulative
})()

function commonWord(random: () => number): string {
  const u = random()
  let low = 0
  let high = COMMON_WORDS - 1
  while (low < high) {
    const middle = (low + high) >> 1
    if (ZIPF[middle]! < u) low = middle + 1
    else high = middle
  }
  return COMMON_VOCABULARY[low]!
}

/** The words of document i, in order. */
export function documentWords(i: number, seed = DEFAULT_SEED): string[] {
  const random = generator(mix(seed, i))
  const words: string[] = []
  for (let w = 0; w < DOCUMENT_WORDS - RARE_PER_DOCUMENT; w++) words.push(commonWord(random))
  for (let r = 0; r < RARE_PER_DOCUMENT; r++) {
    const at = Math.floor(random() * (words.length + 1))
    words.splice(at, 0, rareWord(Math.floor(random() * RARE_WORDS)))
  }
  return words
}

/** Document i of the corpus (0-based). */
export function scaleDocument(i: number, seed = DEFAULT_SEED): ScaleDocument {
  const words = documentWords(i, seed)
  return { id: `scale-${i}`, content: `${words.join(' ')}.`, metadata: { title: `Scale document ${i}` } }
}

/** Documents [from, to) of the corpus. */
export function scaleDocuments(from: number, to: number, seed = DEFAULT_SEED): ScaleDocument[] {
  const documents: ScaleDocument[] = []
  for (let i = from; i < to; i++) documents.push(scaleDocument(i, seed))
  return documents
}

// The notes: each names a thing no other text names (a made-up name of four syllables) and says one
// fact about it in ordinary words; its question asks for that fact in other words around the name.
const SUBJECTS = ['pump', 'bridge', 'server', 'library', 'garden', 'tunnel', 'harbor', 'clinic', 'archive', 'turbine']
const FACTS: [note: (name: string, subject: string, n: number) => string, question: (name: string, subject: string) => string][] = [
  [(name, subject, n) => `The ${name} ${subject} is inspected every ${n} days by the night crew.`, (name, subject) => `How often is the ${name} ${subject} inspected?`],
  [(name, subject, n) => `Keys for the ${name} ${subject} hang in locker ${n} beside the east door.`, (name, subject) => `Where are the keys of the ${name} ${subject} kept?`],
  [(name, subject, n) => `The ${name} ${subject} opened in ${1900 + n} after a long dispute.`, (name, subject) => `When did the ${name} ${subject} open?`],
  [(name, subject, n) => `Questions about the ${name} ${subject} go to extension ${1000 + n} at the front desk.`, (name, subject) => `Who answers questions about the ${name} ${subject}?`],
]

/** The notes and their questions (NEEDLES of them), with ids `needle-<i>`. */
export function needles(seed = DEFAULT_SEED): Needle[] {
  const random = generator(mix(seed, -1))
  return Array.from({ length: NEEDLES }, (_, i) => {
    const name = madeUpWord(i * 104729 + 7, 4, 3)
    const subject = SUBJECTS[Math.floor(random() * SUBJECTS.length)]!
    const [note, question] = FACTS[i % FACTS.length]!
    const n = 2 + Math.floor(random() * 97)
    return { note: { id: `needle-${i}`, content: note(name, subject, n), metadata: { title: `Note ${i}` } }, question: question(name, subject) }
  })
}

/**
 * `count` queries of one kind over a corpus of `documents` documents: `document`, eight words in a
 * row from a random document (its rare words among them, mostly); `common`, five of the 50
 * commonest content words; `rare`, two rare words of the tail.
 */
export function scaleQueries(kind: QueryKind, count: number, documents: number, seed = DEFAULT_SEED): string[] {
  const random = generator(mix(seed, kind === 'document' ? -2 : kind === 'common' ? -3 : -4))
  return Array.from({ length: count }, () => {
    if (kind === 'document') {
      const words = documentWords(Math.floor(random() * documents), seed)
      const start = Math.floor(random() * (words.length - 8))
      return words.slice(start, start + 8).join(' ')
    }
    if (kind === 'common') {
      const picked = new Set<string>()
      while (picked.size < 5) picked.add(COMMON_VOCABULARY[FUNCTION_WORDS.length + Math.floor(random() * 50)]!)
      return [...picked].join(' ')
    }
    return [rareWord(Math.floor(random() * RARE_WORDS)), rareWord(Math.floor(random() * RARE_WORDS))].join(' ')
  })
}
