// Follow-up questions: a message that only makes sense with the turns before it, and the terms of
// those turns that a search or an extractive answer should use beside its own.
import { keyTerms, STOPWORDS, words } from './text'

/** Opens with a connective: "and which command…", "what about weekly ones?", "does it also…". */
const CONNECTIVE = /^\s*(and|also|but|so|then|or|ok(ay)?|what about|how about|what if|same for|and what|and how)\b/i
/** Points back at something named before. */
const POINTS_BACK = /\b(it|its|that|this|they|them|those|these|there|one|ones|he|she|him|her|also|too|either|instead|afterwards?|then)\b/i

/**
 * A message that only makes sense with the turn before it: it opens with a connective ("and…",
 * "what about…") or is short and points back ("how do I disable it?", "does it also sync photos?").
 */
export function isFollowUp(message: string): boolean {
  return CONNECTIVE.test(message) || (message.trim().split(/\s+/).length <= 12 && POINTS_BACK.test(message))
}

/** Earlier turns looked at for a follow-up's subject, the latest first. */
export const EARLIER_TURNS = 2

/**
 * The words of the earlier questions a follow-up leans on (the latest first, at most EARLIER_TURNS
 * of them), content words only and not already in the message: what to search with beside it.
 * Empty when the message stands on its own.
 */
export function carriedWords(message: string, earlier: string[]): string[] {
  if (!earlier.length || !isFollowUp(message)) return []
  const own = new Set(keyTerms(message))
  const carried: string[] = []
  const seen = new Set<string>()
  for (const turn of earlier.slice(-EARLIER_TURNS).reverse()) {
    for (const word of words(turn)) {
      if (STOPWORDS.has(word) || word.length < 2 && !/\d/.test(word)) continue
      const key = keyTerms(word)[0]
      if (!key || own.has(key) || seen.has(key)) continue
      seen.add(key)
      carried.push(word)
    }
  }
  return carried
}

/** The text a follow-up is searched with: the message, then the earlier turns' words it leans on. */
export function followUpQuery(message: string, earlier: string[]): string {
  const carried = carriedWords(message, earlier)
  return carried.length ? `${message}\n${carried.join(' ')}` : message
}
