import type { ChatMessage, GenerateOptions, GenerateResult, Generator } from '../types'
import { EARLIER_TURNS, isFollowUp } from '../follow-up'
import { ENDS_SENTENCE, keyTerms, sentences, STARTS_INSIDE_SENTENCE, STOPWORDS, words } from '../text'
import { wordnet } from '../wordnet'
import { applyStops, countTextTokens, streamText, textPieces } from '../stream-text'

export const NO_MODEL_NOTICE =
  'No generative language model is installed on this server, so replies are extractive: built from the documents, ' +
  'plugin results and context supplied with the question. To enable free-form chat, add a model under the models ' +
  'directory or point UAGENT_LLM_URL at an OpenAI-compatible server (see models/README.md).'

interface Passage {
  number: number
  text: string
}

interface PassageLines {
  number: number
  lines: string[]
}

const PASSAGE = /^\[(\d{1,3})\]\s+(.+)$/

export const NO_ANSWER = 'The provided sources do not contain an answer to that question.'

/**
 * Numbered passages (`[1] text`) in the messages, line by line; a passage runs until the next
 * number or a blank line. Passages come before the question: from a "Question:" line on, nothing is a passage.
 */
function passageLines(messages: ChatMessage[]): PassageLines[] {
  const passages: PassageLines[] = []
  for (const message of messages) {
    if (message.role === 'assistant') continue
    let current: PassageLines | null = null
    for (const line of message.content.split('\n')) {
      if (/^question:/i.test(line.trim())) break
      const match = PASSAGE.exec(line.trim())
      if (match) {
        current = { number: Number(match[1]), lines: [match[2]!] }
        passages.push(current)
      } else if (current && line.trim()) current.lines.push(line)
      else current = null
    }
  }
  return passages
}

/** Numbered passages in the messages, each as one line of text. */
export function findPassages(messages: ChatMessage[]): Passage[] {
  return passageLines(messages).map((p) => ({ number: p.number, text: p.lines.map((line) => line.trim()).join(' ') }))
}

const HEADING_LINE = /^\s{0,3}#{1,6}\s/
const ITEM_LINE = /^\s*([-*+•]|\d{1,3}[.)])\s|^\s*\|/
const FENCE_LINE = /^\s*(```|~~~)/
/** Ends a sentence (or introduces what follows). */
const CLOSED = /[.!?:;]["')\]]*$/
const WORDS_IN = (text: string) => text.trim().split(/\s+/).filter(Boolean).length

const indent = (line: string) => line.length - line.trimStart().length
/** A rule: a line of dashes, equals signs, underscores or stars (under a heading, or between sections). */
const RULE_LINE = /^\s*([-=_*~#.+]\s?)\1{2,}[-=_*~#.+\s]*$|^\s*(=-){3,}=?\s*$/
/** A line in capitals: a manual page's section name ("DESCRIPTION", "SEE ALSO"). */
const CAPITALS_LINE = /^\s*\p{Lu}[\p{Lu}\d ,&/()'-]{2,}$/u

/**
 * A line that names what follows without markup: short and unpunctuated, and either above text
 * that starts anew with a capital (after a finished sentence) or above lines indented deeper (a
 * definition list's term, a manual page's option: "-k --keep", "www-data").
 */
function bareHeading(line: string, next: string | undefined, proseSoFar: string[]): boolean {
  const text = line.trim()
  if (!next || !text || CLOSED.test(text) || /,$/.test(text) || text.length > 60 || WORDS_IN(text) > 8) return false
  const before = proseSoFar.at(-1)
  // Inside a wrapped sentence, a short line is just the end of one of its lines.
  if (before !== undefined && !CLOSED.test(before.trim())) return false
  if (next.trim() && indent(next) > indent(line) + 1) return true
  if (CAPITALS_LINE.test(line)) return true
  // A title above a sentence: no "label: value", address or link of its own.
  if (/:\s|[@<>]|:\/\//.test(text)) return false
  return /^[\p{Lu}\d]/u.test(text) && /^\s*([\p{Lu}\d`"'([]|[-*+•]\s)/u.test(next.trim())
}

interface PassageSentence {
  text: string
  heading: string
  /** A piece of a sentence the passage was cut from (a chunk's first or last words): never an answer on its own. */
  fragment: boolean
  /** A one-line list item, table row or line of code: a sentence of its own. */
  item: boolean
}

/**
 * The sentences of a passage, in order: prose lines are joined and split into sentences, a list
 * item with the lines indented under it too; one-line list items, table rows and lines of code are
 * one sentence each; headings (marked with #, underlined, in capitals, or a short line above the
 * text it names) and rules are left out (they say what a section is about, not an answer) but kept
 * as what the sentences under them are about. A passage that starts inside a sentence (lowercase,
 * or punctuation) or stops inside one (a chunk's cut) has that piece marked as a fragment, unless
 * `cut` is false (context given whole, not cut from a document).
 */
function passageSentences(lines: string[], cut = true): PassageSentence[] {
  const out: PassageSentence[] = []
  let prose: string[] = []
  let heading = ''
  let inCode = false
  /** The indentation of the list item being read (its continuation lines are deeper), or -1. */
  let itemIndent = -1
  const close = () => {
    if (prose.length === 1 && itemIndent >= 0) out.push({ text: prose[0]!, heading, fragment: false, item: true })
    else if (prose.length) out.push(...sentences(prose.join(' ')).map((text) => ({ text, heading, fragment: false, item: false })))
    prose = []
    itemIndent = -1
  }
  lines.forEach((line, i) => {
    if (FENCE_LINE.test(line)) {
      close()
      inCode = !inCode
    } else if (inCode) {
      if (line.trim()) out.push({ text: line.trim(), heading, fragment: false, item: true })
    } else if (RULE_LINE.test(line)) {
      // Under a short unpunctuated line, a rule makes it a heading; otherwise it only separates.
      const last = prose.at(-1)
      if (last !== undefined && itemIndent < 0 && !CLOSED.test(last) && last.length <= 80) {
        prose.pop()
        close()
        heading = last
      } else close()
    } else if (HEADING_LINE.test(line)) {
      close()
      heading = line.replace(/^\s*#+\s*/, '').trim()
    } else if (ITEM_LINE.test(line)) {
      close()
      itemIndent = indent(line)
      prose.push(line.trim())
    } else if (itemIndent >= 0 && indent(line) > itemIndent) prose.push(line.trim())
    else if (bareHeading(line, lines[i + 1], itemIndent >= 0 ? [] : prose)) {
      close()
      heading = line.trim()
    } else {
      if (itemIndent >= 0) close()
      prose.push(line.trim())
    }
  })
  close()
  if (!cut) return out
  const first = out[0]
  if (first && !first.item && STARTS_INSIDE_SENTENCE.test(first.text)) first.fragment = true
  const last = out.at(-1)
  if (last && !last.item && out.length > 1 && !ENDS_SENTENCE.test(last.text)) last.fragment = true
  return out
}

/** The question: the last user message without its passage lines or a leading "Question:". */
function question(messages: ChatMessage[]): string {
  const last = [...messages].reverse().find((m) => m.role === 'user')?.content ?? ''
  const lines = last.split('\n').filter((line) => !PASSAGE.test(line.trim()))
  const marked = lines.findIndex((line) => /^question:/i.test(line.trim()))
  const kept = marked >= 0 ? lines.slice(marked) : lines
  return kept.join(' ').replace(/^\s*question:\s*/i, '').trim()
}

/** The user's earlier questions: the user turns before the last. */
function earlierQuestions(messages: ChatMessage[]): string[] {
  const users = messages.filter((m) => m.role === 'user')
  return users.slice(0, -1).map((m) => m.content.split('\n').filter((line) => !PASSAGE.test(line.trim())).join(' ').trim()).filter(Boolean)
}

/** What the assistant already said in this conversation: its sentences, normalised. */
function alreadySaid(messages: ChatMessage[]): Set<string> {
  const said = new Set<string>()
  for (const message of messages) {
    if (message.role === 'assistant') for (const sentence of sentences(message.content.replace(/\s*\[\d+\]/g, ''))) said.add(normalise(sentence))
  }
  return said
}

/** Free context: system text after a "Context:" line, and plugin or tool results given as context. */
function freeContext(messages: ChatMessage[]): string[] {
  const chunks: string[] = []
  for (const message of messages) {
    if (message.role !== 'system') continue
    const at = message.content.search(/^context:/im)
    if (at >= 0) chunks.push(message.content.slice(at).replace(/^context:\s*/i, ''))
  }
  return chunks
}

interface Candidate extends PassageSentence {
  citation: number | null
  /** Passage order, then sentence order: where the sentence stands in what was given. */
  order: number
  position: number
  score: number
}

/** Sentences that lean on the one before them. */
const LEANS_BACK = /^(it|its|this|that|these|those|they|their|them|such|he|she|then|there|however|but|also|so|thus|therefore|otherwise|instead|here|in that case|in this case)\b/i
/** "X is …", "An X means …": the subject, then a defining verb, at the start of a sentence. */
const DEFINITION = /^(?:an?|the)?\s*([^,;:.]{1,60}?)\s+(?:is|are|was|were|means|refers to|stands for|denotes)\b/i
const WHAT_IS = /^\s*(what|who)\s+(is|are|was|were)\b|^\s*(define|definition of|meaning of)\b/i

/** What a question asks for, from its wording: what kind of sentence answers it. */
export type QuestionKind = 'how' | 'where' | 'when' | 'count' | 'who' | 'why' | 'define' | 'yesno' | 'what'

export function questionKind(text: string): QuestionKind {
  const q = text.toLowerCase()
  if (/\bhow (many|much|long|often|big|large|old|far|fast|soon)\b|\bwhat (number|size|percentage|amount)\b/.test(q)) return 'count'
  if (/\bwhere\b|\bwhich (file|directory|folder|path)\b|\bin what (file|directory|folder)\b/.test(q)) return 'where'
  if (/\bwhen\b|\bwhat (time|day|date|year)\b|\bat what time\b/.test(q)) return 'when'
  if (/\bwhy\b|\bwhat for\b|\bfor what reason\b|\bwhat is the (reason|purpose)\b/.test(q)) return 'why'
  if (/\bhow (do|does|can|could|should|would|to|is|are|did)\b|^\s*how\b|\b(what|which) (command|option|setting|flag|switch|key|variable|argument|parameter)s?\b/.test(q)) return 'how'
  if (/^\s*(who|whom|whose)\b|\bwho\b/.test(q)) return 'who'
  if (WHAT_IS.test(text)) return 'define'
  if (/^\s*(and\s+)?(can|could|may|might|does|do|did|is|are|was|were|will|would|should|must|has|have|am)\b/.test(q)) return 'yesno'
  return 'what'
}

/** What a sentence of each kind of answer holds. */
const COMMAND = /`[^`]+`|(?:^|\s)--?[a-z][\w-]*|\b[\w-]+\.(?:conf|cfg|ini|ya?ml|json|toml|sh|rc|d|list|service|txt)\b|\b[a-z0-9]+(?:[-_][a-z0-9]+)+\b|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|=\S/
const INSTRUCTION = /^(?:to [^,]+,\s*)?(?:first,?\s*|then,?\s*|next,?\s*)?(?:run|use|set|type|enter|edit|open|choose|select|press|click|add|remove|install|call|invoke|specify|pass|change|configure|enable|disable|put|create|delete|start|stop|restart|give|append|copy|mount|load|write|invoke)\b|\b(?:with|using|by running|by setting|by adding|run|use|set)\b/i
const PLACE = /(?:^|[\s(`'"])(?:~|\.{1,2})?\/[\w.@+-]+(?:\/[\w.@+-]*)*|\bhttps?:\/\/|\b[A-Z]:\\|\b(?:directory|folder|under|located|stored|path|file|in the|inside|at)\b/i
const TIME =
  /\b\d{1,2}:\d{2}\b|\b(?:1[89]|20)\d{2}\b|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\b(?:january|february|march|april|may|june|july|august|september|october|november|december)\b|\b(?:daily|weekly|monthly|hourly|nightly|yearly|every|after|before|until|once|whenever|at (?:boot|startup|login)|when)\b/i
const NUMBER = /\b\d+(?:[.,]\d+)?\b|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|hundred|thousand|million|dozen|once|twice|single|double)\b/i
const PERSON = /\b\p{Lu}\p{Ll}+\s+(?:\p{Lu}\.\s+)?\p{Lu}\p{Ll}+\b|\b(?:written|developed|maintained|created|founded|designed|invented) by\b|\b(?:author|maintainer|developer|administrator|owner|copyright holder)s?\b/u
const REASON = /\b(?:because|since|so that|in order to|to (?:ensure|avoid|prevent|allow|make sure|protect|keep)|reason|purpose|otherwise|due to|this (?:means|ensures|prevents|allows))\b/i
const VERDICT = /\b(?:may|can|cannot|can't|must|not|no|allowed|permitted|prohibited|forbidden|grant|grants|required|possible|supports?|only)\b/i

/** How well a sentence has the shape of an answer to a question of this kind, in [0, 1]. */
function shapeFit(kind: QuestionKind, text: string): number {
  switch (kind) {
    case 'how':
      return Math.min(1, (COMMAND.test(text) ? 0.7 : 0) + (INSTRUCTION.test(text) ? 0.4 : 0))
    case 'where':
      return PLACE.test(text) ? 1 : 0
    case 'when':
      return TIME.test(text) ? 1 : 0
    case 'count':
      return NUMBER.test(text) ? 1 : 0
    case 'who':
      return PERSON.test(text) ? 1 : 0
    case 'why':
      return REASON.test(text) ? 1 : 0
    case 'yesno':
      return VERDICT.test(text) ? 0.5 : 0
    default:
      return 0
  }
}

/** How much the fitting shape adds to a sentence's coverage, by kind: for "how many" the number is the answer. */
const SHAPE_WEIGHT: Record<QuestionKind, number> = { how: 0.45, where: 0.4, when: 0.35, count: 0.45, who: 0.25, why: 0.4, define: 0, yesno: 0.15, what: 0 }

/** Terms as matched between question and sentences: stemmed, and without a final "e" ("sublicense", "sublicensing"). */
const termsOf = (text: string) => keyTerms(text).map((term) => (term.length > 4 ? term.replace(/e$/, '') : term))

/** Weight of a question term found only in a sentence's heading, or only in the sentence before or after it. */
const HEADING_SHARE = 0.6
const NEIGHBOUR_SHARE = 0.3
/** Weight of a question term a sentence holds only as a synonym ("purchase" for "buy"). */
const SYNONYM_SHARE = 0.6
/** Weight of an earlier question's terms, for a follow-up. */
const EARLIER_SHARE = 0.5
/** What a sentence the assistant already said in the conversation is worth in a follow-up's answer. */
const SAID_SHARE = 0.3

/**
 * Scores sentences against the question. Coverage: each question term a sentence holds counts by
 * its rarity among the sentences given (IDF), divided by what all the question's terms are worth;
 * a term the sentence holds only as a synonym (WordNet) counts SYNONYM_SHARE, one held only by the
 * sentence's heading HEADING_SHARE, only by the sentence next to it
 * NEIGHBOUR_SHARE ("Change this with keep-daily…" under "Retention policy"). For a follow-up, the
 * earlier questions' terms count too, at EARLIER_SHARE, and a sentence already said in an answer
 * that holds no word of the follow-up itself counts SAID_SHARE of its worth (it is not what was asked). Then the sentence's shape: for "how do I"
 * a command or setting, for "where" a path or place, for "when" a time, for "how many" a number,
 * for "why" a reason, for "what is X" a sentence defining X, which multiplies the coverage up. A
 * bare phrase (three words or fewer) is rarely an answer; a fragment never is.
 */
function rank(candidates: Omit<Candidate, 'score'>[], asked: string, earlier: string[], said: Set<string> = new Set()): Candidate[] {
  const weightOf = new Map<string, number>()
  for (const term of termsOf(asked)) weightOf.set(term, 1)
  const followUp = earlier.length > 0 && isFollowUp(asked)
  if (followUp) {
    for (const turn of earlier.slice(-EARLIER_TURNS)) for (const term of termsOf(turn)) if (!weightOf.has(term)) weightOf.set(term, EARLIER_SHARE)
  }
  const kind = questionKind(asked)
  // The question's words may be said with other words: their synonyms (WordNet) count at SYNONYM_SHARE.
  const synonymsOf = new Map<string, string[]>()
  const lexicon = wordnet()
  if (lexicon) {
    for (const word of words(asked)) {
      const term = termsOf(word)[0]
      if (!term || STOPWORDS.has(word) || synonymsOf.has(term)) continue
      synonymsOf.set(term, lexicon.synonyms(word, 2).flatMap((synonym) => termsOf(synonym)))
    }
  }
  const ownTerms = candidates.map((c) => new Set(termsOf(c.text)))
  const headingTerms = new Map<string, Set<string>>()
  const documentFrequency = new Map<string, number>()
  for (const terms of ownTerms) for (const term of terms) documentFrequency.set(term, (documentFrequency.get(term) ?? 0) + 1)
  const idf = (term: string) => Math.log(1 + (candidates.length + 1) / ((documentFrequency.get(term) ?? 0) + 1))
  let total = 0
  for (const [term, share] of weightOf) total += idf(term) * share
  total ||= 1
  const definitional = kind === 'define'
  const asList = [...weightOf.keys()]
  return candidates.map((candidate, i) => {
    const heading = candidate.heading ? (headingTerms.get(candidate.heading) ?? headingTerms.set(candidate.heading, new Set(termsOf(candidate.heading))).get(candidate.heading)!) : null
    const neighbours = [candidates[i - 1], candidates[i + 1]].map((n, k) => (n && n.order === candidate.order ? ownTerms[i - 1 + 2 * k]! : null))
    let covered = 0
    let own = 0
    /** Whether the sentence holds a word of the message itself (not only of the questions before it). */
    let asksNew = false
    for (const [term, share] of weightOf) {
      const weight = idf(term) * share
      if (ownTerms[i]!.has(term)) {
        covered += weight
        own += weight
        if (share === 1) asksNew = true
      } else if (synonymsOf.get(term)?.some((synonym) => ownTerms[i]!.has(synonym))) {
        covered += weight * SYNONYM_SHARE
        own += weight * SYNONYM_SHARE
      } else if (heading?.has(term)) covered += weight * HEADING_SHARE
      else if (neighbours.some((n) => n?.has(term))) covered += weight * NEIGHBOUR_SHARE
    }
    if (own === 0 && !candidate.item) covered *= 0.5
    let score = covered / total
    if (score > 0) {
      score *= 1 + SHAPE_WEIGHT[kind] * shapeFit(kind, candidate.text)
      if (definitional) {
        // A bonus only when the subject is what was asked about: all its words are the question's.
        const subject = DEFINITION.exec(candidate.text)?.[1]
        const terms = subject ? termsOf(subject) : []
        if (terms.length && terms.every((term) => asList.includes(term))) score += 0.5
      }
      const length = WORDS_IN(candidate.text)
      if (length <= 3 && !candidate.item) score *= 0.4
      else if (length > 70) score *= 0.85
      if (candidate.fragment) score *= 0.1
      // A follow-up asks for something new: what was already said in this conversation, sharing
      // no word with the follow-up itself, comes after.
      if (followUp && !asksNew && said.has(normalise(candidate.text))) score *= SAID_SHARE
    }
    // Passages come best first: a later one's sentence must do better to be picked.
    return { ...candidate, score: score / (1 + 0.15 * candidate.order) }
  })
}

/** Asks for several things at once: a list, steps, every…, all… */
const WANTS_MANY = /\b(list|all|every|each|steps|which ones|what are the)\b/i

/**
 * The answering sentences, best first: the best ones (at least 60 % as good as the best, at most
 * three sentences in all, or six when the question asks for a list; the best one's group whole), each with the sentence before it when it leans
 * on it ("It…", "This…") and with what it introduces ("…as follows:", then the items), those in the
 * order they were written; a sentence right after one already said is said with it.
 * A sentence that two passages share (overlapping chunks) is used once; a fragment never.
 */
function pick(ranked: Candidate[], asked: string): Candidate[] {
  const best = Math.max(0, ...ranked.map((c) => c.score))
  if (best <= 0) return []
  const seen = new Set<string>()
  const fresh = (candidate: Candidate | undefined): candidate is Candidate => {
    if (!candidate || candidate.fragment) return false
    const key = normalise(candidate.text)
    if (seen.has(key)) return false
    seen.add(key)
    return true
  }
  const at = (c: Candidate, offset: number) => ranked.find((o) => o.order === c.order && o.position === c.position + offset)
  const most = WANTS_MANY.test(asked) ? 6 : 3
  const ordered = ranked.filter((c) => c.score >= best * 0.6 && !c.fragment).sort((a, b) => b.score - a.score || a.order - b.order || a.position - b.position)
  const groups: Candidate[][] = []
  let count = 0
  for (const candidate of ordered) {
    if (count >= most) break
    if (!fresh(candidate)) continue
    const group = [candidate]
    if (LEANS_BACK.test(candidate.text)) {
      const previous = at(candidate, -1)
      if (fresh(previous)) group.unshift(previous)
    }
    if (/:["')\]]*$/.test(candidate.text)) {
      // What the sentence introduces: the items (or the sentence) that follow it.
      for (let offset = 1, next = at(candidate, 1); next && offset <= 4; next = at(candidate, ++offset)) {
        if (!fresh(next)) break
        group.push(next)
        if (!next.item) break
      }
    }
    // Right after a sentence already said: said with it (a sentence before one said stands on its own, after it).
    const beside = groups.find((g) => g.at(-1)!.order === candidate.order && g.at(-1)!.position === group[0]!.position - 1)
    // At most `most` sentences in all (the best one's group whole, however long).
    if (groups.length && count + group.length > most) continue
    count += group.length
    if (beside) beside.push(...group)
    else groups.push(group)
  }
  return groups.flat()
}

const normalise = (text: string) => text.toLowerCase().replace(/\s+/g, ' ').replace(/\s*\[\d+\]\s*/g, ' ').trim()

/** The answer: each sentence with its passage's citation. */
function cite(chosen: Candidate[]): string {
  return chosen.map((c) => (c.citation === null ? c.text : `${c.text} [${c.citation}]`)).join(' ')
}

function compose(messages: ChatMessage[]): string {
  const asked = question(messages)
  const earlier = earlierQuestions(messages)
  const said = alreadySaid(messages)
  const passages = passageLines(messages)
  if (passages.length > 0) {
    const candidates = passages.flatMap((p, order) => passageSentences(p.lines).map((sentence, position) => ({ ...sentence, citation: p.number, order, position })))
    const best = pick(rank(candidates, asked, earlier, said), asked)
    if (best.length === 0) return NO_ANSWER
    return cite(best)
  }
  const context = freeContext(messages).flatMap((chunk, order) => passageSentences(chunk.split('\n'), false).map((sentence, position) => ({ ...sentence, citation: null, order, position })))
  const relevant = pick(rank(context, asked, earlier, said), asked)
  if (relevant.length > 0) return `From the context provided: ${cite(relevant)}\n\n${NO_MODEL_NOTICE}`
  return NO_MODEL_NOTICE
}

/**
 * The built-in generator, used when no language model is installed: it answers by quoting the
 * sentences of its context that best match the question, citing numbered passages as [n], and
 * says plainly that no generative model is present. Deterministic.
 */
export class ExtractiveGenerator implements Generator {
  readonly id = 'builtin/extractive'
  readonly contextLength = 8192

  async countTokens(text: string): Promise<number> {
    return countTextTokens(text)
  }

  async generate(messages: ChatMessage[], options: GenerateOptions = {}, signal?: AbortSignal): Promise<GenerateResult> {
    // A reply nobody streams is cut to its budget at once: no turn of the event loop per word.
    const composed = compose(messages)
    const pieces = signal?.aborted ? [] : textPieces(applyStops(composed, options.stop), options.maxTokens)
    const text = pieces.join('')
    const completionTokens = pieces.length
    const promptTokens = countTextTokens(messages.map((m) => m.content).join('\n'))
    const finishReason = signal?.aborted ? 'cancelled' : options.maxTokens !== undefined && completionTokens >= options.maxTokens ? 'length' : 'stop'
    return { text, promptTokens, completionTokens, finishReason, ...(composed === NO_ANSWER ? { noAnswer: true } : {}) }
  }

  stream(messages: ChatMessage[], options: GenerateOptions = {}, signal?: AbortSignal): AsyncIterable<string> {
    return streamText(applyStops(compose(messages), options.stop), options.maxTokens, signal)
  }
}
