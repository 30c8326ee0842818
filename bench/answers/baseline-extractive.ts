// The built-in extractive answer engine as it was before issue 37 (commit ffbabc0), frozen so that
// `bun run bench answers` can print its figures beside the current engine's in one run. Not used by the server.
import type { ChatMessage, GenerateOptions, GenerateResult, Generator } from '../../src/ml/types'
import { keyTerms, sentences } from '../../src/ml/text'
import { applyStops, countTextTokens, streamText } from '../../src/ml/stream-text'

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

/**
 * The sentences of a passage, in order: prose lines are joined and split into sentences; list
 * items and table rows are one sentence each; headings and code fences are left out (they say
 * what a section is about, not an answer).
 */
function passageSentences(lines: string[]): { text: string; heading: string }[] {
  const out: { text: string; heading: string }[] = []
  let prose: string[] = []
  let heading = ''
  const close = () => {
    if (prose.length) out.push(...sentences(prose.join(' ')).map((text) => ({ text, heading })))
    prose = []
  }
  for (const line of lines) {
    if (HEADING_LINE.test(line)) {
      close()
      heading = line.replace(/^\s*#+\s*/, '')
    } else if (FENCE_LINE.test(line)) close()
    else if (ITEM_LINE.test(line)) {
      close()
      out.push({ text: line.trim(), heading })
    } else prose.push(line.trim())
  }
  close()
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

interface Candidate {
  text: string
  /** The heading of the section the sentence is in: what it is about, even when it does not say. */
  heading: string
  citation: number | null
  /** Passage order, then sentence order: where the sentence stands in what was given. */
  order: number
  position: number
  score: number
}

/** Sentences that lean on the one before them. */
const LEANS_BACK = /^(it|its|this|that|these|those|they|their|them|such|he|she|then|there|however|but|also|so|thus|therefore|otherwise|instead)\b/i
/** "X is …", "An X means …": the subject, then a defining verb, at the start of a sentence. */
const DEFINITION = /^(?:an?|the)?\s*([^,;:.]{1,60}?)\s+(?:is|are|was|were|means|refers to|stands for|denotes)\b/i
const WHAT_IS = /^\s*(what|who)\s+(is|are|was|were)\b|^\s*(define|definition of|meaning of)\b/i

const normalise = (text: string) => text.toLowerCase().replace(/\s+/g, ' ').replace(/\s*\[\d+\]\s*/g, ' ').trim()

/**
 * Scores sentences by how much of the question they cover: each question term a sentence holds
 * counts by its rarity among the sentences given (so the words that pick out the question weigh
 * most), divided by what all the question's terms are worth. For "what is X" questions, a
 * sentence that defines X (X, then "is", "means"…) gets a bonus. A sentence also covers the terms
 * of the heading it stands under.
 */
function rank(candidates: Omit<Candidate, 'score'>[], question: string): Candidate[] {
  const asked = [...new Set(keyTerms(question))]
  const ownTerms = candidates.map((c) => new Set(keyTerms(c.text)))
  const documentFrequency = new Map<string, number>()
  for (const terms of ownTerms) for (const term of terms) documentFrequency.set(term, (documentFrequency.get(term) ?? 0) + 1)
  // A sentence covers its section heading's terms too ("To enable it…" under "Two-factor authentication").
  const termSets = candidates.map((c, i) => (c.heading ? new Set([...ownTerms[i]!, ...keyTerms(c.heading)]) : ownTerms[i]!))
  const weight = (term: string) => Math.log(1 + (candidates.length + 1) / ((documentFrequency.get(term) ?? 0) + 1))
  const total = asked.reduce((sum, term) => sum + weight(term), 0) || 1
  const definitional = WHAT_IS.test(question)
  return candidates.map((candidate, i) => {
    let covered = 0
    for (const term of asked) if (termSets[i]!.has(term)) covered += weight(term)
    let score = covered / total
    if (definitional && score > 0) {
      // A bonus only when the subject is what was asked about: all its words are the question's.
      const subject = DEFINITION.exec(candidate.text)?.[1]
      const terms = subject ? keyTerms(subject) : []
      if (terms.length && terms.every((term) => asked.includes(term))) score += 0.5
    }
    // Passages come best first: a later one's sentence must do better to be picked.
    return { ...candidate, score: score / (1 + 0.25 * candidate.order) }
  })
}

/**
 * The answering sentences: the best ones (at least 60 % as good as the best, at most three), each
 * with the sentence before it when it leans on it ("It…", "This…"), in the order they were given;
 * a sentence that two passages share (overlapping chunks) is used once.
 */
function pick(ranked: Candidate[], all: Candidate[]): Candidate[] {
  const best = Math.max(0, ...ranked.map((c) => c.score))
  if (best <= 0) return []
  const chosen: Candidate[] = []
  const seen = new Set<string>()
  const take = (candidate: Candidate) => {
    const key = normalise(candidate.text)
    if (seen.has(key)) return false
    seen.add(key)
    chosen.push(candidate)
    return true
  }
  const ordered = [...ranked].filter((c) => c.score >= best * 0.6).sort((a, b) => b.score - a.score)
  let picked = 0
  for (const candidate of ordered) {
    if (picked >= 3) break
    if (!take(candidate)) continue
    picked++
    if (LEANS_BACK.test(candidate.text)) {
      const previous = all.find((c) => c.order === candidate.order && c.position === candidate.position - 1)
      if (previous) take(previous)
    }
  }
  return chosen.sort((a, b) => a.order - b.order || a.position - b.position)
}

function compose(messages: ChatMessage[]): string {
  const asked = question(messages)
  const passages = passageLines(messages)
  if (passages.length > 0) {
    const candidates = passages.flatMap((p, order) => passageSentences(p.lines).map(({ text, heading }, position) => ({ text, heading, citation: p.number, order, position })))
    const best = pick(rank(candidates, asked), candidates as Candidate[])
    if (best.length === 0) return NO_ANSWER
    return best.map((c) => `${c.text} [${c.citation}]`).join(' ')
  }
  const context = freeContext(messages).flatMap((chunk, order) => sentences(chunk).map((text, position) => ({ text, heading: '', citation: null, order, position })))
  const relevant = pick(rank(context, asked), context as Candidate[])
  if (relevant.length > 0) return `From the context provided: ${relevant.map((c) => c.text).join(' ')}\n\n${NO_MODEL_NOTICE}`
  return NO_MODEL_NOTICE
}

/**
 * The built-in generator, used when no language model is installed: it answers by quoting the
 * sentences of its context that best match the question, citing numbered passages as [n], and
 * says plainly that no generative model is present. Deterministic.
 */
export class BaselineExtractiveGenerator implements Generator {
  readonly id = 'builtin/extractive (before issue 37)'
  readonly contextLength = 8192

  async countTokens(text: string): Promise<number> {
    return countTextTokens(text)
  }

  async generate(messages: ChatMessage[], options: GenerateOptions = {}, signal?: AbortSignal): Promise<GenerateResult> {
    let text = ''
    let completionTokens = 0
    const composed = compose(messages)
    for await (const piece of streamText(applyStops(composed, options.stop), options.maxTokens, signal)) {
      text += piece
      completionTokens++
    }
    const promptTokens = countTextTokens(messages.map((m) => m.content).join('\n'))
    const finishReason = signal?.aborted ? 'cancelled' : options.maxTokens !== undefined && completionTokens >= options.maxTokens ? 'length' : 'stop'
    return { text, promptTokens, completionTokens, finishReason, ...(composed === NO_ANSWER ? { noAnswer: true } : {}) }
  }

  stream(messages: ChatMessage[], options: GenerateOptions = {}, signal?: AbortSignal): AsyncIterable<string> {
    return streamText(applyStops(compose(messages), options.stop), options.maxTokens, signal)
  }
}
