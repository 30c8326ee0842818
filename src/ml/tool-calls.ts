// Function calling (OpenAI `tools` / `tool_calls`) for generators that support it.
import type { ChatMessage, GenerateOptions, Generator } from './types'

/** A function the model may call: a name, what it does, and its parameters as JSON Schema. */
export interface ToolSpec {
  name: string
  description: string
  parameters: Record<string, unknown>
}

/** One call the model asked for; `arguments` is the JSON text the model wrote. */
export interface ToolCallRequest {
  id: string
  name: string
  arguments: string
}

/** The messages of a turn with tools: chat messages, the model's calls, and their results. */
export type ToolTurnMessage =
  | ChatMessage
  | { role: 'assistant'; content: string | null; toolCalls: ToolCallRequest[] }
  | { role: 'tool'; toolCallId: string; content: string }

export interface ToolTurnResult {
  /** The reply text (empty when the model only asked for calls). */
  text: string
  toolCalls: ToolCallRequest[]
  promptTokens: number
  completionTokens: number
}

export interface ToolTurnOptions extends GenerateOptions {
  /** 'none' asks for a plain reply even though tools are listed (the last turn of a bounded loop). */
  toolChoice?: 'auto' | 'none'
}

/** A generator that can offer tools to its model and report the calls the model asks for. */
export interface ToolCallingGenerator extends Generator {
  generateWithTools(messages: ToolTurnMessage[], tools: ToolSpec[], options?: ToolTurnOptions, signal?: AbortSignal): Promise<ToolTurnResult>
}

export function supportsToolCalls(generator: Generator): generator is ToolCallingGenerator {
  return typeof (generator as Partial<ToolCallingGenerator>).generateWithTools === 'function'
}
