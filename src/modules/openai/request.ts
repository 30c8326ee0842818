import type { Static } from 'elysia'
import { OpenAiParamError } from '../../core/openai-error'
import type { ChatMessage, GenerateOptions } from '../../ml'
import type { ChatCompletionRequest } from './model'

export type CompletionRequest = Static<typeof ChatCompletionRequest>
type RequestMessage = CompletionRequest['messages'][number]

const invalid = (param: string, message: string) => new OpenAiParamError('VALIDATION_ERROR', message, param)

/**
 * Parameters that would change the answer but that no engine here honours are refused, so a
 * client never believes it got what it asked for: several choices, log-probabilities, penalties,
 * logit bias, JSON modes.
 */
export function refuseUnsupported(body: CompletionRequest): void {
  if ((body.n ?? 1) > 1) throw invalid('n', 'n > 1 is not supported: this server returns one choice per request (send n: 1 or leave it out)')
  if (body.logprobs) throw invalid('logprobs', 'logprobs are not supported by this server (send logprobs: false or leave it out)')
  if (body.top_logprobs) throw invalid('top_logprobs', 'top_logprobs are not supported by this server')
  for (const param of ['frequency_penalty', 'presence_penalty'] as const) {
    if (body[param]) throw invalid(param, `${param} is not supported by this server (only 0)`)
  }
  if (body.logit_bias && Object.keys(body.logit_bias).length) throw invalid('logit_bias', 'logit_bias is not supported by this server')
  if (body.response_format && body.response_format.type !== 'text') {
    throw invalid('response_format', `response_format "${body.response_format.type}" is not supported: only "text"`)
  }
  if (body.stream_options && !body.stream) throw invalid('stream_options', 'stream_options is only allowed when stream is true')
}

/** Whether the request needs tool calling: tools offered, a tool forced, or a tool exchange in the history. */
export function wantsTools(body: CompletionRequest): boolean {
  return (
    (body.tools?.length ?? 0) > 0 ||
    (body.tool_choice !== undefined && body.tool_choice !== null && body.tool_choice !== 'none') ||
    body.messages.some((m) => m.role === 'tool' || (m.tool_calls?.length ?? 0) > 0)
  )
}

/** A message's text: the string, or its text parts joined (any other part is refused). */
function textOf(message: RequestMessage, index: number): string {
  const { content } = message
  if (content === undefined || content === null) {
    if (message.role === 'assistant') return ''
    throw invalid(`messages.${index}.content`, `messages[${index}]: a ${message.role} message needs content`)
  }
  if (typeof content === 'string') return content
  return content
    .map((part, j) => {
      if (part.type !== 'text' || typeof part.text !== 'string') {
        throw invalid(`messages.${index}.content.${j}`, `messages[${index}].content[${j}]: only text parts are supported here (got "${part.type}")`)
      }
      return part.text
    })
    .join('\n')
}

/** The conversation for a local engine: system/developer, user and assistant turns as text. */
export function toChatMessages(body: CompletionRequest): ChatMessage[] {
  return body.messages.map((message, index) => ({
    role: message.role === 'developer' ? 'system' : (message.role as ChatMessage['role']),
    content: textOf(message, index).toWellFormed(),
  }))
}

/** The last user message's text: what a rag:<collection> model answers. */
export function lastQuestion(body: CompletionRequest): string {
  for (let i = body.messages.length - 1; i >= 0; i--) {
    const message = body.messages[i]!
    if (message.role === 'user') {
      const text = textOf(message, i).trim()
      if (text) return text
    }
  }
  throw invalid('messages', 'A rag:<collection> model answers the last user message: send a user message with text')
}

/** The turns before the last user message: the conversation a follow-up to a rag:<collection> model belongs to. */
export function earlierTurns(body: CompletionRequest): ChatMessage[] {
  const last = body.messages.findLastIndex((message) => message.role === 'user')
  return toChatMessages({ ...body, messages: body.messages.slice(0, Math.max(0, last)) }).filter((m) => m.role !== 'system' && m.content.trim())
}

/** The client's system and developer messages as one text (persona, language, format rules): a rag:<collection> model keeps them after its grounding rules. */
export function systemInstructions(body: CompletionRequest): string {
  return toChatMessages(body)
    .filter((m) => m.role === 'system' && m.content.trim())
    .map((m) => m.content.trim())
    .join('\n\n')
}

/** The sampling and length options in the engines' terms; `budget` caps the reply when the request names no limit. */
export function generateOptions(body: CompletionRequest, budget: number): GenerateOptions {
  const stop = body.stop === undefined || body.stop === null ? [] : (typeof body.stop === 'string' ? [body.stop] : body.stop).filter(Boolean)
  return {
    maxTokens: body.max_completion_tokens ?? body.max_tokens ?? budget,
    ...(body.temperature !== undefined && body.temperature !== null ? { temperature: body.temperature } : {}),
    ...(body.top_p !== undefined && body.top_p !== null ? { topP: body.top_p } : {}),
    ...(stop.length ? { stop } : {}),
  }
}

/** The request as relayed to an upstream model server for tool calling (its own model name is set by the relay). */
export function relayBody(body: CompletionRequest): Record<string, unknown> {
  const { model: _model, stream: _stream, n: _n, logprobs: _logprobs, top_logprobs: _top, max_completion_tokens, max_tokens, ...rest } = body
  const limit = max_completion_tokens ?? max_tokens
  const kept = Object.fromEntries(Object.entries(rest).filter(([, value]) => value !== undefined && value !== null))
  return { ...kept, ...(limit ? { max_tokens: limit } : {}) }
}
