import { STOPWORDS, stem, words } from '../../../ml/text'
import { idf } from './scoring'
import type { QueryTerms } from '../store'

/**
 * A document's name says what it is about: its file name (the last part of its id, extensions
 * left out: "man/man1/sha256sum.1.gz" → sha256sum, "html/sql-createtable.html" → sql, createtable)
 * and its metadata `title`. A content word of the question found in it — whole, by its stem, or as
 * the start of a longer name word ("SHA256" in sha256sum) — is strong evidence for each of the
 * document's passages. NAME_MIN letters at least for a partial match, so "ls" names nothing.
 */
export const NAME_MIN = 4

/** The content words of a query with their idf in the collection (words found nowhere left out: they name nothing there). */
export function nameQuery(query: string, terms: QueryTerms): { word: string; stem: string; weight: number }[] {
  const df = new Map(terms.terms.filter((term) => !term.phrase).map((term) => [term.word, term.df]))
  const seen = new Set<string>()
  const out: { word: string; stem: string; weight: number }[] = []
  for (const word of words(query)) {
    if (STOPWORDS.has(word) || word.length < 3 || seen.has(word)) continue
    seen.add(word)
    const held = df.get(word) ?? 0
    if (held > 0) out.push({ word, stem: stem(word), weight: idf(held, terms.chunks) })
  }
  return out
}

/** The words of a document's name: its id's last part without extensions, and its metadata title. */
export function nameWords(docId: string, metadata: Record<string, unknown>): string[] {
  let file = docId.split(/[/\\]/).pop() ?? docId
  for (let previous = ''; previous !== file; ) {
    previous = file
    file = file.replace(/\.[A-Za-z0-9]{1,5}$/, '')
  }
  const title = typeof metadata.title === 'string' ? metadata.title : ''
  return [...new Set(words(`${file} ${title}`))]
}

/** The share (by idf) of the query's content words the document's name holds. */
export function nameShare(query: { word: string; stem: string; weight: number }[], name: string[]): number {
  if (!query.length || !name.length) return 0
  let total = 0
  let held = 0
  for (const q of query) {
    total += q.weight
    const found = name.some(
      (n) => n === q.word || stem(n) === q.stem || (q.word.length >= NAME_MIN && n.startsWith(q.word)) || (n.length >= NAME_MIN && q.word.startsWith(n)),
    )
    if (found) held += q.weight
  }
  return total > 0 ? held / total : 0
}
