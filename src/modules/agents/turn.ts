// One agent's turn: its own work, then (with a generative model) the model's reply, with the
// agent's tools offered when the generator supports function calling.
import { AppError } from '../../core/errors'
import { type ChatMessage, type Generator, promptBudget, replyBudget } from '../../ml'
import { supportsToolCalls, type ToolSpec, type ToolTurnMessage } from '../../ml/tool-calls'
import type { AgentDefinition, AgentInput, AgentResult } from './types'
import type { ToolCallRecord } from './tools'

/** Model turns with tools offered, and tool calls run, before the model must answer. */
export const MAX_TOOL_ROUNDS = 4
export const MAX_TOOL_CALLS = 8
/** Earlier work shown to a model is cut to this many characters per agent (less when the model's context is small). */
const EARLIER_CHARS = 6000
const MIN_CHARS = 200

const cut = (text: string, chars: number) => (text.length > chars ? `${text.slice(0, chars)}…` : text)

/** The agents' work as a model reads it: one section per agent, each cut to `chars`. */
export function workSections(results: AgentResult[], chars = EARLIER_CHARS): string {
  return results.map((r) => `### ${r.agent} (${r.role})\n${cut(r.response, chars)}`).join('\n\n')
}

export function turnMessages(agent: AgentDefinition, input: AgentInput, context: string, earlierChars = EARLIER_CHARS): ChatMessage[] {
  const objections = input.objections.length ? `\n\nThe review of the previous round asks you to fix:\n${input.objections.map((o) => `- ${o}`).join('\n')}` : ''
  const earlier = input.earlier.length ? `\n\nWork so far:\n${workSections(input.earlier, earlierChars)}` : ''
  return [
    { role: 'system', content: `${agent.instructions}\n\nContext:\n${context}` },
    { role: 'user', content: `Task: ${input.task}${earlier}${objections}` },
  ]
}

/**
 * Messages that fit the model's prompt budget (its context less the reply's share, with room for
 * the chat template): the earlier work, then the context, are cut shorter until they do. What
 * still does not fit (a task longer than the model reads) is left to the model to refuse.
 */
export async function fitted(generator: Generator, build: (earlierChars: number, contextChars: number) => ChatMessage[]): Promise<ChatMessage[]> {
  const budget = Math.floor(promptBudget(generator) * 0.95) - 16
  let earlierChars = EARLIER_CHARS
  let contextChars = Number.POSITIVE_INFINITY
  for (;;) {
    const messages = build(earlierChars, contextChars)
    let used = 0
    for (const message of messages) used += await generator.countTokens(message.content)
    if (used <= budget) return messages
    if (earlierChars > MIN_CHARS) earlierChars = Math.max(MIN_CHARS, Math.floor(earlierChars / 2))
    else if (contextChars > MIN_CHARS) contextChars = Math.max(MIN_CHARS, Math.floor(Math.min(contextChars, messages[0]!.content.length) / 2))
    else return messages
  }
}

function toolsFor(agent: AgentDefinition, input: AgentInput): ToolSpec[] {
  return input.tools
    .list()
    .filter((tool) => agent.plugins === '*' || agent.plugins.includes(tool.plugin))
    .map((tool) => ({ name: tool.name, description: tool.description, parameters: tool.parameters }))
}

/** The model's reply, running the tool calls it asks for (bounded), each recorded. */
async function modelTurn(agent: AgentDefinition, input: AgentInput, context: string, calls: ToolCallRecord[]): Promise<string> {
  const messages = await fitted(input.generator, (earlierChars, contextChars) => turnMessages(agent, input, cut(context, contextChars), earlierChars))
  const options = { maxTokens: replyBudget(input.generator) }
  const tools = toolsFor(agent, input)
  const { generator, signal } = input
  if (!tools.length || !supportsToolCalls(generator)) return (await generator.generate(messages, options, signal)).text.trim()
  const conversation: ToolTurnMessage[] = [...messages]
  for (let round = 0; ; round++) {
    const last = round >= MAX_TOOL_ROUNDS || calls.length >= MAX_TOOL_CALLS
    const reply = await generator.generateWithTools(conversation, tools, { ...options, toolChoice: last ? 'none' : 'auto' }, signal)
    if (signal.aborted) throw signal.reason
    if (!reply.toolCalls.length || last) return reply.text.trim()
    const asked = reply.toolCalls.slice(0, MAX_TOOL_CALLS - calls.length)
    conversation.push({ role: 'assistant', content: reply.text || null, toolCalls: asked })
    for (const call of asked) {
      let args: unknown
      let outcome: string
      try {
        args = call.arguments.trim() ? JSON.parse(call.arguments) : {}
      } catch {
        calls.push({ tool: call.name, arguments: call.arguments, error: 'The arguments are not valid JSON' })
        conversation.push({ role: 'tool', toolCallId: call.id, content: JSON.stringify({ error: 'The arguments are not valid JSON' }) })
        continue
      }
      try {
        if (!tools.some((tool) => tool.name === call.name)) throw new AppError('UNKNOWN_ACTION', `${call.name} is not one of the tools offered to the ${agent.name}`)
        const result = await input.tools.call(call.name, args, input.caller, signal)
        calls.push({ tool: call.name, arguments: args, result })
        outcome = JSON.stringify({ result })
      } catch (error) {
        if (signal.aborted) throw signal.reason
        const message = (error as Error)?.message ?? String(error)
        calls.push({ tool: call.name, arguments: args, error: message })
        outcome = JSON.stringify({ error: message })
      }
      conversation.push({ role: 'tool', toolCallId: call.id, content: outcome })
    }
  }
}

/** Runs one agent for one round. Throws when it fails (or the task is cancelled). */
export async function runAgent(agent: AgentDefinition, input: AgentInput): Promise<AgentResult> {
  const started = Date.now()
  const startTime = new Date(started).toISOString()
  const work = await agent.work(input)
  if (input.signal.aborted) throw input.signal.reason
  const toolCalls = [...(work.toolCalls ?? [])]
  let response = work.draft
  let objections = work.objections
  if (!input.builtin) {
    response = await modelTurn(agent, input, work.context, toolCalls)
    if (input.signal.aborted) throw input.signal.reason
    if (agent.name === 'critic') objections = objectionsIn(response)
    // The model may leave the list out; the sources it was given stay attached to its answer.
    if (work.sources?.length && !/\bSources\b/.test(response)) {
      response += `\n\nSources:\n${work.sources.map((s) => `[${s.n}] ${s.title} (${s.collection}/${s.id}, score ${s.score.toFixed(2)})`).join('\n')}`
    }
  }
  const ended = Date.now()
  return {
    agent: agent.name,
    role: agent.role,
    response,
    executionTime: ended - started,
    round: input.round,
    startTime,
    endTime: new Date(ended).toISOString(),
    toolCalls,
    ...(work.sources ? { sources: work.sources } : {}),
    ...(objections ? { objections } : {}),
    ...(work.steps ? { steps: work.steps } : {}),
  }
}

/** A model critic's objections: its '- ' lines, or its whole reply unless it says there are none. */
export function objectionsIn(reply: string): string[] {
  const text = reply.trim()
  if (!text || /^\W*(no objections?|nothing (needs|to) (fix|be fixed|change)|approved|lgtm)\b/i.test(text)) return []
  const bullets = text
    .split('\n')
    .map((line) => /^\s*(?:[-*•]|\d+[.)])\s+(.+)$/.exec(line)?.[1]?.trim())
    .filter((line): line is string => !!line)
  return bullets.length ? bullets : [text]
}
