import type { ChatMessage, GenerateOptions, GenerateResult, Generator } from '../types'
import { keyTerms, sentences } from '../text'
import { applyStops, countTextTokens, streamText } from '../stream-text'

export const NO_MODEL_NOTICE =
  'No generative language model is installed on this server, so replies are extractive: built from the documents, ' +
  'plugin results and context supplied with the question. To enable free-form chat, add a model under the models ' +
  'directory or point UAGENT_LLM_URL at an OpenAI-compatible server (see models/README.md).'

interface Passage {
  number: number
  text: string
}

const PASSAGE = /^\[(\d{1,3})\]\s+(.+)$/

export const NO_ANSWER = 'The provided sources do not contain an answer to that question.'

/**
 * Numbered passages (`[1] text`) in the messages; a passage runs until the next number or a blank
 * line. Passages come before the question: from a "Question:" line on, nothing is a passage.
 */
export function findPassages(messages: ChatMessage[]): Passage[] {
  const passages: Passage[] = []
  for (const message of messages) {
    if (message.role === 'assistant') continue
    let current: Passage | null = null
    for (const line of message.content.split('\n')) {
      if (/^question:/i.test(line.trim())) break
      const match = PASSAGE.exec(line.trim())
      if (match) {
        current = { number: Number(match[1]), text: match[2]! }
        passages.push(current)
      } else if (current && line.trim() && !/^question:/i.test(line.trim())) current.text += ` ${line.trim()}`
      else current = null
    }
  }
  return passages
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
  citation: number | null
  order: number
  score: number
}

/** Scores sentences by the question terms they share, rarer terms counting more. */
function rank(candidates: Omit<Candidate, 'score'>[], asked: string[]): Candidate[] {
  const wanted = new Set(asked)
  const termSets = candidates.map((c) => new Set(keyTerms(c.text)))
  const documentFrequency = new Map<string, number>()
  for (const terms of termSets) for (const term of terms) documentFrequency.set(term, (documentFrequency.get(term) ?? 0) + 1)
  return candidates.map((candidate, i) => {
    let score = 0
    for (const term of termSets[i]!) if (wanted.has(term)) score += Math.log(1 + candidates.length / documentFrequency.get(term)!)
    return { ...candidate, score }
  })
}

function compose(messages: ChatMessage[]): string {
  const asked = keyTerms(question(messages))
  const passages = findPassages(messages)
  if (passages.length > 0) {
    const candidates = passages.flatMap((p, order) => sentences(p.text).map((text) => ({ text, citation: p.number, order })))
    const best = rank(candidates, asked)
      .filter((c) => c.score > 0)
      .sort((a, b) => b.score - a.score)
      .slice(0, 3)
      .sort((a, b) => a.order - b.order)
    if (best.length === 0) return NO_ANSWER
    return best.map((c) => `${c.text} [${c.citation}]`).join(' ')
  }
  const context = freeContext(messages).flatMap((chunk, order) => sentences(chunk).map((text) => ({ text, citation: null, order })))
  const relevant = rank(context, asked)
    .filter((c) => c.score > 0)
    .sort((a, b) => b.score - a.score)
    .slice(0, 3)
    .sort((a, b) => a.order - b.order)
  if (relevant.length > 0) return `From the context provided: ${relevant.map((c) => c.text).join(' ')}\n\n${NO_MODEL_NOTICE}`
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
