import { STOPWORDS, words } from '../../../ml/text'
import { idf } from './scoring'
import type { QueryTerms } from '../store'

/**
 * Neighbouring content words of a query ("file mode bits", "sequence of numbers") found near each
 * other in a chunk say more than the same words scattered over it: a passage about the thing asked,
 * rather than one that mentions its words in passing. Each pair of content words at most
 * PAIR_SPAN words apart in the query is a pair; a chunk holds it when the two occur within that
 * distance plus PAIR_SLACK of each other there, in either order ("bits of the file mode").
 */
export const PAIR_SPAN = 3
export const PAIR_SLACK = 2

export interface WordPair {
  /** Tokens (as the keyword index makes them) of the earlier and the later word. */
  first: string[]
  second: string[]
  /** Words between them in the query, plus one. */
  gap: number
  /** What holding the pair is worth: the smaller idf of its two words. */
  weight: number
}

/** The pairs of neighbouring content words of `query` that the collection holds both of (see `terms`, its keyword statistics). */
export function wordPairs(query: string, terms: QueryTerms): WordPair[] {
  const byWord = new Map(terms.terms.filter((term) => !term.phrase).map((term) => [term.word, term]))
  const sequence = words(query)
  const content: { at: number; word: string }[] = []
  sequence.forEach((word, at) => {
    const term = byWord.get(word)
    if (!STOPWORDS.has(word) && term && term.df > 0 && term.tokens.length) content.push({ at, word })
  })
  const pairs: WordPair[] = []
  const seen = new Set<string>()
  for (let i = 0; i + 1 < content.length; i++) {
    const a = content[i]!
    const b = content[i + 1]!
    const gap = b.at - a.at
    const key = `${a.word} ${b.word}`
    if (gap > PAIR_SPAN || a.word === b.word || seen.has(key)) continue
    seen.add(key)
    const first = byWord.get(a.word)!
    const second = byWord.get(b.word)!
    pairs.push({ first: first.tokens, second: second.tokens, gap, weight: Math.min(idf(first.df, terms.chunks), idf(second.df, terms.chunks)) })
  }
  return pairs
}

/** The share (by weight) of `pairs` a chunk holds, from where the query's tokens occur in it (`offsets`, token → positions). */
export function pairShare(pairs: WordPair[], offsets: Map<string, number[]> | undefined): number {
  if (!pairs.length || !offsets) return 0
  let total = 0
  let held = 0
  for (const pair of pairs) {
    total += pair.weight
    const ends = offsets.get(pair.first[pair.first.length - 1]!)
    const starts = offsets.get(pair.second[0]!)
    if (!ends || !starts) continue
    const reach = pair.gap + PAIR_SLACK
    if (ends.some((end) => starts.some((start) => start !== end && Math.abs(start - end) <= reach))) held += pair.weight
  }
  return total > 0 ? held / total : 0
}
