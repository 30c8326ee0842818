// Query expansion with synonyms (WordNet): the words a question may mean besides its own, searched
// on the query side only (keyword candidates of the synonyms, and a query vector leaned towards
// theirs), so stored vectors are untouched (no re-embedding, the embedder's id unchanged) and a
// chunk holding the exact word still scores above one holding a synonym (SYNONYM_SHARE in scoring.ts).
import { STOPWORDS, words } from '../../../ml/text'
import { wordnet } from '../../../ml/wordnet'

/** How far a query's vector leans towards its synonyms' (see RagService.queryVector). */
export const SYNONYM_VECTOR_SHARE = 0.5

/** Synonyms taken per word of the query. */
export const SYNONYMS_PER_WORD = 8
export const MOST_SYNONYMS = 12
/** A synonym held by more than this share of a collection's chunks (and more than RARE_SYNONYM_MIN) is not searched for. */
export const RARE_SYNONYM_SHARE = 0.02
export const RARE_SYNONYM_MIN = 20
/** Synonyms looked up in a collection (RagService.expansion keeps those it holds, at most MOST_SYNONYMS). */
export const LOOKED_UP = 32

/** Two words that share their first five letters (or are equal): forms of one word, as far as search is concerned. */
const sameRoot = (a: string, b: string) => a === b || (a.length >= 5 && b.length >= 5 && a.slice(0, 5) === b.slice(0, 5))

/**
 * The synonyms of a query's content words (function words, numbers and one- or two-letter words
 * aside), from their most frequent sense, single alphabetic words that are not a form of a word of
 * the query ("installing" for "installation": keyword search finds those already); none when
 * WordNet is not installed.
 */
export function synonymsOf(query: string): string[] {
  const lexicon = wordnet()
  if (!lexicon) return []
  const own = new Set(words(query))
  const out: string[] = []
  for (const word of own) {
    if (STOPWORDS.has(word) || word.length < 3 || !/^[a-z]+$/.test(word)) continue
    let taken = 0
    for (const synonym of lexicon.synonyms(word, 1)) {
      if (taken >= SYNONYMS_PER_WORD || out.length >= LOOKED_UP) break
      if (!/^[a-z]{3,}$/.test(synonym) || out.includes(synonym) || STOPWORDS.has(synonym) || [...own].some((w) => sameRoot(w, synonym))) continue
      out.push(synonym)
      taken++
    }
    if (out.length >= LOOKED_UP) break
  }
  return out
}
