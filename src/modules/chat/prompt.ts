import { AppError } from '../../core/errors'
import { type ChatMessage, type Generator, promptBudget, replyBudget } from '../../ml'

export const SYSTEM_PROMPT =
  'You are Universal Agent, a helpful assistant running entirely on this machine. ' +
  'Answer accurately and concisely. When context is given, rely on it; when you are unsure, say so.'

export const OPTIMIZED_INSTRUCTION =
  'The user message was rewritten into a clear request. Answer it directly first, then give the key details; ' +
  'use a short list when there are several points, and state any assumption you make.'

const ABBREVIATIONS: Record<string, string> = {
  pls: 'please',
  plz: 'please',
  u: 'you',
  ur: 'your',
  r: 'are',
  thx: 'thanks',
  ty: 'thank you',
  idk: "I don't know",
  asap: 'as soon as possible',
  btw: 'by the way',
  b4: 'before',
  'w/': 'with',
  'w/o': 'without',
  'b/c': 'because',
  bc: 'because',
  cuz: 'because',
  wanna: 'want to',
  gonna: 'going to',
  gimme: 'give me',
  i: 'I',
}

const FILLER = /^(?:(?:hey|hi|hello|ok(?:ay)?|so|um+|uh+|well|yo)\b[\s,!.]*)+/i
const QUESTION_START = /^(?:who|what|when|where|why|how|which|whose|whom|is|are|am|was|were|do|does|did|can|could|should|would|will|shall|may|might|have|has|had)\b/i
const IMPERATIVE_START =
  /^(?:please|explain|describe|list|write|summari[sz]e|compare|give|show|tell|find|search|translate|create|make|help|calculate|convert|define|generate|draft|fix|review|suggest|outline)\b/i

/**
 * Rewrites a message into a clearer prompt: whitespace and filler removed, chat shorthand
 * expanded, sentence case and end punctuation restored, and a bare topic ("rust lifetimes")
 * turned into an explicit request ("Explain rust lifetimes."). Deterministic; needs no model.
 */
export function optimizePrompt(message: string): string {
  let text = message.replace(/\s+/g, ' ').trim()
  const withoutFiller = text.replace(FILLER, '').trim()
  if (withoutFiller) text = withoutFiller
  text = text.replace(/(^|[\s(])([\w/']+)(?=$|[\s,.!?;:)])/g, (whole, lead: string, word: string) => {
    const expansion = ABBREVIATIONS[word.toLowerCase()]
    return expansion ? `${lead}${expansion}` : whole
  })
  text = text.replace(/([!?.])\1+/g, '$1')
  const isQuestion = QUESTION_START.test(text) || text.endsWith('?')
  const isRequest = IMPERATIVE_START.test(text)
  const words = text.split(' ').length
  if (!isQuestion && !isRequest && words <= 6 && !/[.!]$/.test(text)) text = `Explain ${text}`
  text = text.charAt(0).toUpperCase() + text.slice(1)
  if (!/[.!?]$/.test(text)) text += isQuestion && !isRequest ? '?' : '.'
  return text
}

export interface PromptParts {
  context?: string | null
  history: ChatMessage[]
  message: string
  optimized: boolean
  /** An assistant's instructions: the system prompt in place of the default one. */
  instructions?: string
}

/**
 * System prompt, optional context, as much recent history as fits the model's context length
 * (oldest turns dropped first), then the user's message. Room for the reply (`replyBudget`) is
 * kept; a message and context that cannot fit even without history are a 400 that says so.
 */
export async function assemblePrompt(generator: Generator, parts: PromptParts): Promise<{ messages: ChatMessage[]; promptTokens: number }> {
  const system = parts.instructions?.trim() || SYSTEM_PROMPT
  const head: ChatMessage[] = [{ role: 'system', content: parts.optimized ? `${system}\n\n${OPTIMIZED_INSTRUCTION}` : system }]
  if (parts.context?.trim()) head.push({ role: 'system', content: `Context:\n${parts.context.trim()}` })
  const tail: ChatMessage = { role: 'user', content: parts.message }
  let used = 0
  for (const message of [...head, tail]) used += await generator.countTokens(message.content)
  const budget = promptBudget(generator)
  if (used > budget) {
    throw new AppError(
      'VALIDATION_ERROR',
      `The prompt for this message${parts.context?.trim() ? ' and context' : ''} takes ${used} tokens, but ${generator.id} reads ` +
        `${generator.contextLength} with ${replyBudget(generator)} kept for the reply: shorten ${parts.context?.trim() ? 'them' : 'it'}`,
    )
  }
  const kept: ChatMessage[] = []
  for (let i = parts.history.length - 1; i >= 0; i--) {
    const cost = await generator.countTokens(parts.history[i]!.content)
    if (used + cost > budget) break
    used += cost
    kept.unshift(parts.history[i]!)
  }
  return { messages: [...head, ...kept, tail], promptTokens: used }
}
