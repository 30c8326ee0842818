// Word-level text handling shared by the built-in engines: tokens, light stemming, sentences.

const WORD = /[\p{L}\p{N}]+(?:['’][\p{L}]+)?/gu

export const STOPWORDS = new Set(
  `a an and are as at be been but by can could did do does for from had has have he her his how i if in into is it its
  me my no not of on or our she so than that the their them then there these they this those to was we were what when
  where which who whom why will with would you your yours about after again all am any because before being between both
  during each few further here just more most other own same should some such through too under until up very while`.split(/\s+/),
)

/** Lowercased word tokens, accents folded. */
export function words(text: string): string[] {
  // ASCII text (most of it) has nothing to normalise or fold: the same tokens, several times faster.
  const found = ASCII.test(text) ? text.toLowerCase().match(ASCII_WORD) : text.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase().match(WORD)
  if (!found) return []
  for (let i = 0; i < found.length; i++) if (found[i]!.length > 2 && /['’]s$/.test(found[i]!)) found[i] = found[i]!.slice(0, -2)
  return found
}
const ASCII = /^[\x00-\x7f]*$/
const ASCII_WORD = /[a-z0-9]+(?:'[a-z]+)?/g

/** A light suffix-stripping stemmer: "connections", "connected", "connecting" → "connect". */
export function stem(word: string): string {
  if (word.length <= 3) return word
  let w = word
  for (const [suffix, replacement] of [
    ['ational', 'ate'],
    ['ization', 'ize'],
    ['fulness', 'ful'],
    ['iveness', 'ive'],
    ['ations', 'ate'],
    ['ation', 'ate'],
    ['ments', ''],
    ['ment', ''],
    ['ness', ''],
    ['ings', ''],
    ['ing', ''],
    ['ies', 'y'],
    ['ied', 'y'],
    ['edly', ''],
    ['ed', ''],
    ['ly', ''],
    ['es', ''],
    ['s', ''],
  ] as const) {
    if (w.endsWith(suffix) && w.length - suffix.length >= 3) {
      w = w.slice(0, w.length - suffix.length) + replacement
      break
    }
  }
  if (/(.)\1$/.test(w) && !/[lsz]$/.test(w)) w = w.slice(0, -1)
  return w
}

/** Content words, stemmed: what two texts must share to be about the same thing. */
export function keyTerms(text: string): string[] {
  return words(text)
    .filter((w) => !STOPWORDS.has(w))
    .map(stem)
}

/** A piece of text that starts inside a sentence (lowercase, or punctuation): a chunk's cut. */
export const STARTS_INSIDE_SENTENCE = /^[\p{Ll},;:)\]]/u
/** A piece of text that ends a sentence (or a clause that introduces what follows). */
export const ENDS_SENTENCE = /[.!?:;]["')\]]*$/

/**
 * Splits prose into sentences where . ! or ? (and any closing quote or bracket) is followed by
 * white space. Every character is kept: "1.2.3" and "example.com" stay whole, and text of
 * punctuation alone is a sentence too. Runs of white space become one space.
 */
export function sentences(text: string): string[] {
  return text
    .replace(/\s+/g, ' ')
    .trim()
    .split(/(?<=[.!?]["')\]]*) /)
    .filter(Boolean)
}
