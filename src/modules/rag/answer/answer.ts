import { AppError } from '../../../core/errors'
import type { ModelUsage } from '../../../core/usage'
import { type ChatMessage, type Generator, promptBudget, replyBudget } from '../../../ml'
import { EARLIER_TURNS, followUpQuery, isFollowUp } from '../../../ml/follow-up'
import { ENDS_SENTENCE, keyTerms, sentences, STARTS_INSIDE_SENTENCE, STOPWORDS, words } from '../../../ml/text'
import { type Lemma, wordnet } from '../../../ml/wordnet'
import { idf } from '../ranking/scoring'
import { andThen, type MaybePromise } from '../../../db/maybe-promise'
import type { RagService, SearchResult } from '../service'
import type { RagStore } from '../store'

// Passages scoring below the relevance floor are not relevant enough to answer from: it is fitted per
// embedder with the fusion weights (RagService.relevanceFloor, scripts/fit-ranking.ts), on questions
// with and without an answer in the collection (test/fixtures/kb-labelled.json among them).
/** Passages far weaker than the best one are left out too. */
export const RELATIVE_FLOOR = 0.6
/**
 * A passage that shares no content word with the question counts only when its score is at least
 * this: a meaning match strong enough that a real embedding model is sure without shared words.
 */
export const MEANING_ONLY_FLOOR = 0.5

const INSTRUCTION =
  'Answer the question using only the numbered sources below. Cite the sources you use as [1], [2] ' +
  'right after the sentences they support. If the sources do not contain the answer, say so.'

/** What an answer says when nothing in the collection is relevant to the question. */
export const noRelevantAnswer = (collection: string) =>
  `I could not find anything relevant to that question in the collection "${collection}": its documents do not contain an answer to it.`

export function title(result: SearchResult): string {
  return typeof result.metadata.title === 'string' && result.metadata.title ? result.metadata.title : result.id
}

/**
 * A passage as one numbered block of the prompt: its lines as written (so lists and code keep
 * their shape), without blank lines (a blank line ends a passage), and with lines that would read
 * as the start of another passage or of the question joined to the line before.
 */
export function passageBlock(content: string): string {
  return content
    .split('\n')
    .filter((line) => line.trim())
    .reduce((out, line) => (out && /^\s*(\[\d{1,3}\]|question:)/i.test(line) ? `${out} ${line.trim()}` : out ? `${out}\n${line}` : line.trim()), '')
}

/**
 * The passages worth answering from, among results searched with the relevance floor: at least
 * RELATIVE_FLOOR of the best, and sharing a content word with the question unless their score alone
 * is MEANING_ONLY_FLOOR.
 */
export function relevantPassages<T extends SearchResult>(question: string, results: T[]): T[] {
  const asked = new Set(keyTerms(question))
  const grounded = results.filter(
    (p) => p.score >= MEANING_ONLY_FLOOR || keyTerms(p.content).some((term) => asked.has(term)),
  )
  const best = grounded[0]?.score ?? 0
  return grounded.filter((p) => p.score >= best * RELATIVE_FLOOR)
}

/**
 * How much of a question the passages cover, in [0, 1]: its content words, each weighted by its
 * rarity in the collection (the square root of BM25's idf), and the share of that weight whose words (stemmed) the
 * passages hold — or hold a synonym of in its most frequent sense (WordNet; SYNONYM_SHARE of the
 * word's weight). A word the collection lacks weighs as one found once: the most telling. A question about the collection's subject is covered by the passages that answer
 * it; one about something else ("Who painted the Mona Lisa?") leaves its telling words uncovered,
 * whatever the passages happen to share with it. Given the question's `text`, a two-word term
 * WordNet knows in it ("black hole") counts as held only where its words stand side by side, and
 * the kind of answer it asks for ("which command…") is not counted: the answer shows it. For a
 * follow-up's query (its message, then the words carried from earlier turns on the next line),
 * those carried words weigh `carried` of their weight.
 */
export function questionCoverage(question: { terms: { word: string; df: number }[]; chunks: number }, passages: { content: string }[], text?: string, carried = 1): number {
  const passageTerms = passages.map((p) => matchTerms(p.content))
  const held = new Set(passageTerms.flat())
  const lexicon = wordnet()
  // A two-word term WordNet knows ("black hole", "printing press") is one thing: its words held
  // apart ("black" here, "hole" there) do not cover it; only the two side by side do.
  if (text && lexicon) {
    const said = passageTerms.map((terms) => ` ${terms.join(' ')} `)
    for (const compound of compoundsOf(text)) {
      const [a, b] = compound.map((w) => matchTerms(w)[0] ?? '')
      if (!a || !b || said.some((p) => p.includes(` ${a} ${b} `))) continue
      held.delete(a)
      held.delete(b)
    }
  }
  let total = 0
  let covered = 0
  // The kind of thing asked for ("which command…", "what option…") is shown by the answer, not named in it.
  const seen = new Set<string>(text ? [...text.toLowerCase().matchAll(ASKED_KIND)].flatMap((m) => matchTerms(m[2]!)) : [])
  // A follow-up searched with earlier turns' words ("what about weekly ones?\nchange retention policy"): its own words are the first line.
  const asked = text?.includes('\n') ? new Set(matchTerms(text.split('\n')[0]!)) : null
  for (const { word, df } of question.terms) {
    const term = matchTerms(word)[0]
    if (!term || seen.has(term)) continue
    seen.add(term)
    // The square root: one missing word should not outweigh all the others ("default" missing from "the default storage quota per user").
    let weight = Math.sqrt(Math.max(idf(df, question.chunks), MIN_TERM_WEIGHT))
    // A follow-up's query (followUpQuery): the words carried from earlier turns count for less than its own.
    if (asked && !asked.has(term)) weight *= carried
    // What a question is about is named by nouns of few meanings: a verb or adverb the passages
    // lack ("happens", "off", "find out"), or a word English uses in many senses ("when the timer
    // fires", "after a crash"), is the asker's phrasing and says less, whether or not other
    // documents of the collection hold it (how many do is no sign of which it is).
    if (!held.has(term) && lexicon && phrasingWord(lexicon.lemmas(word), df)) weight *= PHRASING_SHARE
    total += weight
    if (held.has(term)) covered += weight
    else if (lexicon?.synonyms(word, 1).some((synonym) => held.has(matchTerms(synonym)[0] ?? ''))) covered += weight * SYNONYM_SHARE
  }
  return total > 0 ? covered / total : 1
}

/** The pairs of adjacent content words of a text that WordNet knows as one term ("black hole", "printing press", "source code"). */
export function compoundsOf(text: string): [string, string][] {
  const lexicon = wordnet()
  if (!lexicon) return []
  const sequence = words(text)
  const out: [string, string][] = []
  for (let i = 0; i + 1 < sequence.length; i++) {
    const [a, b] = [sequence[i]!, sequence[i + 1]!]
    if (STOPWORDS.has(a) || STOPWORDS.has(b) || a.length < 3 || b.length < 3 || !/^[a-z]+$/.test(a + b)) continue
    if (lexicon.lemmas(`${a} ${b}`).length) out.push([a, b])
  }
  return out
}

/** What a word carried into a follow-up from the turns before it weighs, of its own weight, in the reading that puts the follow-up's own words first (see coveredPassages). */
export const CARRIED_SHARE = 0.5

/** "Which command", "what option", "which tool"…: the kind of answer a question asks for. */
const ASKED_KIND = /\b(which|what)\s+(commands?|options?|settings?|flags?|switch(?:es)?|keys?|variables?|arguments?|parameters?|tools?|programs?|utilit(?:y|ies)|methods?|ways?|steps?)\b/g

/** What a question word the passages lack weighs, of its weight, when it is phrasing (phrasingWord): WordNet knows it only as a verb, adjective or adverb, or in many senses. */
export const PHRASING_SHARE = 0.3
/**
 * Senses of a word seen in WordNet's tagged concordance (all its parts of speech together) from
 * which it is the asker's everyday phrasing rather than the name of what the question is about:
 * "fire" (14), "crash" (9), "change" (15), "find" (13), against "relativity" (0), "autumn" (1),
 * "eclipse" (3), "painted" (5). A statistic of English, not of the collection: the unrelated
 * documents beside the answer do not move it, where a missing word's own weight (as one found
 * once) grows with each of them. From 6 senses up (checked to 15) the calibration family of
 * scripts/fit-refusal.ts refuses as many world questions as without the rule (5: one fewer, 4:
 * two); 8 keeps a margin from that edge, and the lower, the more phrasing words it recognises.
 */
export const PHRASING_SENSES = 8

/**
 * Whether a question word is the asker's phrasing: WordNet knows it as no noun (or its noun never
 * seen in the concordance where another part of speech was: "put", "somewhere"), or in
 * PHRASING_SENSES senses or more. A word WordNet does not know (a name, an identifier) is phrasing
 * only when the collection lacks it: one the collection holds elsewhere is what is asked about.
 */
function phrasingWord(lemmas: Lemma[], df: number): boolean {
  if (!lemmas.length) return df === 0
  const seen = lemmas.some((lemma) => lemma.tagged > 0)
  return !lemmas.some((lemma) => lemma.pos === 'noun' && (lemma.tagged > 0 || !seen)) || lemmas.reduce((sum, lemma) => sum + lemma.tagged, 0) >= PHRASING_SENSES
}

/** What a question word held by the passages only as a synonym counts, of its weight. */
export const SYNONYM_SHARE = 0.5

/** Terms as coverage matches them: stemmed, without a final "e" ("sublicense", "sublicensing"). */
const matchTerms = (text: string) => keyTerms(text).map((term) => (term.length > 4 ? term.replace(/e$/, '') : term))

/** A word in most chunks still counts a little: a question of common words alone is covered by what holds them. */
const MIN_TERM_WEIGHT = 0.05

/**
 * Passages that cover less of the question than this (see questionCoverage) do not answer it: the
 * question is about something the collection does not hold. Chosen with scripts/fit-refusal.ts on
 * its calibration family (the Git manual beside 300 manual pages): Git questions answered 1.000 and
 * world-knowledge questions refused 0.967 from 0.700 to 0.775, the best balance; the lowest of that
 * range (re-fitted when search weighed several senses of synonyms: 0.675 before). Checked on a
 * family it was not chosen on (`bun run bench answers`).
 */
export const COVERAGE_FLOOR = 0.7

/** Chunks a collection needs for the coverage rule to apply: below, the relevance floor alone decides. */
export const COVERAGE_MIN_CHUNKS = 50

/** Whether passages cover enough of the question (its terms in the collection) to answer it; collections under COVERAGE_MIN_CHUNKS always do. */
function coverageHolds(terms: { terms: { word: string; df: number }[]; chunks: number }, passages: { content: string }[], question: string): boolean {
  // In a handful of chunks, how rare a word is says nothing: every word weighs about the same.
  if (terms.chunks < COVERAGE_MIN_CHUNKS) return true
  // A follow-up is covered when either reading is: the conversation's words as much as its own, or its own first.
  const coverage = Math.max(questionCoverage(terms, passages, question), question.includes('\n') ? questionCoverage(terms, passages, question, CARRIED_SHARE) : 0)
  return coverage >= COVERAGE_FLOOR
}

/** The passages of one collection that answer the question, or none when together they cover too little of it. */
export function coveredPassages<T extends { content: string }>(rag: RagService<RagStore>, userId: string, collection: string, question: string, passages: T[]): MaybePromise<T[]> {
  if (!passages.length) return passages
  return andThen(rag.questionTerms(userId, collection, question), (terms) => (coverageHolds(terms, passages, question) ? passages : []))
}

/** A word held by at least this share of a collection's chunks is one of its common words ("software" in software licences). */
export const COMMON_TERM_SHARE = 0.1
/** Results looked through for a passage holding the question's rarest word, when the best ones hold only common words. */
export const RARE_POOL = 20
/** What such a passage needs of the relevance floor. */
export const RARE_PASSAGE_FLOOR = 0.6

/** A chunk's text without the pieces of sentences it was cut from: its first words when it starts inside a sentence, its last when it stops inside one (as the extractive engine reads a passage). */
export function wholeSentences(content: string): string {
  const parts = sentences(content)
  if (parts.length && STARTS_INSIDE_SENTENCE.test(parts[0]!)) parts.shift()
  if (parts.length > 1 && !ENDS_SENTENCE.test(parts.at(-1)!)) parts.pop()
  return parts.join(' ')
}

/**
 * The passages to answer a question from, in one collection: the best `limit` above the relevance
 * floor that are relevant (relevantPassages) and cover enough of the question (coveredPassages).
 * When they fall short and hold only the collection's common words of it (COMMON_TERM_SHARE), the
 * question is about its rarest word they lack: the best passage holding that word in a whole
 * sentence, among the next RARE_POOL results, is put first, and the coverage rule decides again.
 * "Can I sublicense the software?" over the GPL and the Apache licence: the best passages speak of
 * free software, the Apache grant says "sublicense". A question whose words are all rare here
 * (a world question matching unrelated pages word by word) is left to the coverage rule alone.
 */
export async function answerPassages(rag: RagService<RagStore>, userId: string, collection: string, question: string, limit: number): Promise<SearchResult[]> {
  const floor = await rag.relevanceFloor(userId, collection)
  const found = await rag.search(userId, collection, question, limit, floor, { passages: true })
  const relevant = relevantPassages(question, found.results)
  if (!relevant.length) return relevant
  const terms = await rag.questionTerms(userId, collection, question)
  if (coverageHolds(terms, relevant, question)) return relevant
  const held = new Set(relevant.flatMap((p) => matchTerms(p.content)))
  const common = (df: number) => df >= terms.chunks * COMMON_TERM_SHARE
  const present = terms.terms.filter((t) => t.df > 0)
  const matched = present.filter((t) => held.has(matchTerms(t.word)[0] ?? ''))
  if (!matched.every((t) => common(t.df))) return []
  const rarest = present.filter((t) => !common(t.df) && !held.has(matchTerms(t.word)[0] ?? '')).sort((a, b) => a.df - b.df)[0]
  if (!rarest) return []
  const term = matchTerms(rarest.word)[0]!
  const pool = await rag.search(userId, collection, question, RARE_POOL, floor * RARE_PASSAGE_FLOOR, { passages: true })
  const holders = pool.results.filter((p) => new Set(matchTerms(p.content)).has(term))
  const best = holders.find((p) => new Set(matchTerms(wholeSentences(p.content))).has(term)) ?? holders[0]
  if (!best) return []
  const passages = [best, ...relevant.filter((p) => p.id !== best.id || p.content !== best.content)].slice(0, limit)
  return coverageHolds(terms, passages, question) ? passages : []
}

/**
 * The prompt: the instruction, the numbered passages and the question; for a follow-up ("and which
 * command applies it?"), the turns of the conversation before it (the last EARLIER_TURNS exchanges) too.
 */
export function answerPrompt(question: string, passages: SearchResult[], conversation: ChatMessage[] = [], instructions?: string): ChatMessage[] {
  const numbered = passages.map((p, i) => `[${i + 1}] ${passageBlock(p.content)}`).join('\n')
  const earlier = isFollowUp(question) ? conversation.filter((m) => m.role !== 'system').slice(-2 * EARLIER_TURNS) : []
  // The caller's own instructions (a client's system message: persona, language, format) follow the
  // grounding rules in the one system message: many chat templates take a single one.
  return [
    { role: 'system', content: instructions?.trim() ? `${INSTRUCTION}\n\n${instructions.trim()}` : INSTRUCTION },
    ...earlier,
    { role: 'user', content: `Sources:\n${numbered}\n\nQuestion: ${question}` },
  ]
}

/** The user's questions in earlier turns of a conversation. */
export const questionsOf = (conversation: ChatMessage[]) => conversation.filter((m) => m.role === 'user').map((m) => m.content)

/**
 * The passages that fit the model's context beside the instruction, the question and the reply,
 * best first. When not even the best one fits whole, it is cut to what does.
 */
export async function fitPassages(generator: Generator, question: string, passages: SearchResult[], conversation: ChatMessage[] = [], instructions?: string): Promise<SearchResult[]> {
  const budget = promptBudget(generator)
  let used = 0
  for (const message of answerPrompt(question, [], conversation, instructions)) used += await generator.countTokens(message.content)
  const fitted: SearchResult[] = []
  for (const [i, passage] of passages.entries()) {
    const cost = (await generator.countTokens(`[${i + 1}] ${passage.content}`)) + 1
    if (used + cost > budget) {
      if (fitted.length === 0 && budget - used > 16) {
        // Cut the best passage down to the room left (token counts follow length roughly; recheck).
        let content = passage.content.slice(0, Math.floor((passage.content.length * (budget - used)) / cost))
        while (content && used + (await generator.countTokens(`[1] ${content}`)) + 1 > budget) content = content.slice(0, Math.floor(content.length * 0.9))
        if (content) fitted.push({ ...passage, content })
      }
      break
    }
    used += cost
    fitted.push(passage)
  }
  return fitted
}

/**
 * Retrieves up to `maxContext` passages above the relevance floor, keeps those that fit the
 * model's context, asks the generator for an answer citing them as [n] (sources[n-1] is passage
 * n), and adds the citations itself when a model left them out, so every answer points at real passages.
 */
export async function answerQuestion(
  rag: RagService<RagStore>,
  userId: string,
  input: { question: string; collection: string; maxContext: number; includeContext: boolean; conversation?: ChatMessage[]; instructions?: string },
  onUsage?: (usage: ModelUsage) => void,
) {
  // A follow-up is searched with the words of the questions it leans on ("and which command applies it?").
  const conversation = input.conversation ?? []
  const query = followUpQuery(input.question, questionsOf(conversation))
  const relevant = await answerPassages(rag, userId, input.collection, query, input.maxContext)
  const generator = relevant.length ? await rag.generator() : null
  // Only what the model is given is cited: sources[n-1] is the passage it saw as [n].
  let passages = generator ? await fitPassages(generator, input.question, relevant, conversation, input.instructions) : []
  if (generator && passages.length === 0) {
    throw new AppError('VALIDATION_ERROR', `body.question: too long for ${generator.id} (it reads ${generator.contextLength} tokens): shorten it`)
  }
  let answer: string
  if (!generator) {
    answer = noRelevantAnswer(input.collection)
  } else {
    const result = await generator.generate(answerPrompt(input.question, passages, conversation, input.instructions), { maxTokens: replyBudget(generator) })
    onUsage?.({ model: generator.id, promptTokens: result.promptTokens, completionTokens: result.completionTokens })
    if (result.noAnswer) {
      // The engine found the passages do not answer the question: nothing relevant, say so.
      answer = result.text.trim()
      passages = []
    } else {
      // Every [n] left in the answer points at a source: numbers the model made up (or copied from
      // a passage's own footnotes) are removed.
      answer = result.text.trim().replace(/\s?\[(\d+)\]/g, (marker, n: string) => (Number(n) >= 1 && Number(n) <= passages.length ? marker : ''))
      const cited = new Set([...answer.matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1])))
      if (cited.size === 0) answer += `\n\nSources: ${passages.map((p, i) => `[${i + 1}] ${title(p)}`).join('; ')}`
    }
  }
  return {
    answer,
    sources: passages.map((p) => ({ id: p.id, title: title(p), relevanceScore: p.score })),
    ...(input.includeContext ? { context: passages.map((p) => ({ content: p.content, source: p.id, confidence: p.score })) } : {}),
  }
}
