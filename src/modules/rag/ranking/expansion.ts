// Query expansion with synonyms (WordNet): the words a question may mean besides its own, searched
// on the query side only (keyword candidates of the synonyms, and a query vector leaned towards
// theirs), so stored vectors are untouched (no re-embedding, the embedder's id unchanged) and a
// chunk holding the exact word still scores above one holding a synonym (SYNONYM_SHARE in scoring.ts).
import { STOPWORDS, words } from '../../../ml/text'
import { type WeightedSynonym, wordnet } from '../../../ml/wordnet'

/** How far a query's vector leans towards its synonyms' (see RagService.queryVector). */
export const SYNONYM_VECTOR_SHARE = 0.5

/** Synonyms taken per word of the query. */
export const SYNONYMS_PER_WORD = 8
export const MOST_SYNONYMS = 12
/** A synonym held by more than this share of a collection's chunks (and more than RARE_SYNONYM_MIN) is not searched for. */
export const RARE_SYNONYM_SHARE = 0.02
export const RARE_SYNONYM_MIN = 20
/** Postings (chunks holding them) the synonyms' keyword search ranks at most, rarest synonyms first: an expansion costs a fraction of a search. */
export const SYNONYM_POSTINGS = 3_000
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

/** Senses of a query word whose synonyms are searched (SENSE_WEIGHTS weighs them). */
export const SENSES = 4

/** The synonyms of one content word of a query, with their weights (see WordNet.weightedSynonyms). */
export interface SynonymGroup {
  word: string
  synonyms: WeightedSynonym[]
}

/**
 * The query's content words (function words, numbers and one- or two-letter words aside) each with
 * the synonyms of its SENSES most frequent senses: single alphabetic words that are not a form of
 * a word of the query, at most SYNONYMS_PER_WORD each (the likeliest senses first) and LOOKED_UP in
 * all. A chunk is credited for a word it lacks with its best synonym there (see synonymScore), so
 * a word with many synonyms counts once, not once per synonym. None when WordNet is not installed.
 */
export function synonymGroups(query: string): SynonymGroup[] {
  const lexicon = wordnet()
  if (!lexicon) return []
  const sequence = words(query)
  const own = new Set(sequence)
  const content = (word: string) => !STOPWORDS.has(word) && word.length >= 3 && /^[a-z]+$/.test(word)
  // Two-word terms WordNet knows ("compact discs" → compact_disc: CD) come first: they say more than their words.
  const looked: { word: string; shortest: number }[] = []
  for (let i = 0; i + 1 < sequence.length; i++) {
    const pair = `${sequence[i]} ${sequence[i + 1]}`
    if (content(sequence[i]!) && content(sequence[i + 1]!) && lexicon.lemmas(pair).length) looked.push({ word: pair, shortest: 2 })
  }
  for (const word of own) if (content(word)) looked.push({ word, shortest: 3 })
  const groups: SynonymGroup[] = []
  const taken = new Set<string>()
  for (const { word, shortest } of looked) {
    const synonyms: WeightedSynonym[] = []
    for (const synonym of lexicon.weightedSynonyms(word, SENSES)) {
      if (synonyms.length >= SYNONYMS_PER_WORD || taken.size >= LOOKED_UP) break
      if (synonym.word.length < shortest || !/^[a-z]+$/.test(synonym.word) || taken.has(synonym.word) || STOPWORDS.has(synonym.word) || [...own].some((w) => sameRoot(w, synonym.word))) continue
      synonyms.push(synonym)
      taken.add(synonym.word)
    }
    if (synonyms.length) groups.push({ word, synonyms })
    if (taken.size >= LOOKED_UP) break
  }
  return groups
}

/**
 * The written forms of a word that keyword search's stemmer counts as it, as far as regular English
 * goes: "copy" → copy, copies, copied, copying, copier…; "compress" → compresses, compressed,
 * compression… Used to see which synonyms a passage holds from its words, without running it
 * through the keyword index's tokenizer again.
 */
export function formsOf(word: string): string[] {
  const forms = new Set([word, `${word}s`, `${word}es`, `${word}ed`, `${word}ing`, `${word}er`, `${word}ers`, `${word}ion`, `${word}ions`, `${word}ly`])
  if (word.endsWith('e')) for (const ending of ['d', 'r', 'rs', 's']) forms.add(`${word}${ending}`)
  if (word.endsWith('e')) for (const ending of ['ing', 'ion', 'ions']) forms.add(`${word.slice(0, -1)}${ending}`)
  if (/[^aeiou]y$/.test(word)) for (const ending of ['ies', 'ied', 'ier', 'iers']) forms.add(`${word.slice(0, -1)}${ending}`)
  if (/[^aeiou][aeiou][bdgklmnprt]$/.test(word)) for (const ending of ['ed', 'ing', 'er']) forms.add(`${word}${word.at(-1)}${ending}`)
  return [...forms]
}
