import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { AppError } from '../../core/errors'

/** The text blocks of a tool result, joined. */
function textOf(result: CallToolResult): string {
  return result.content
    .filter((block): block is { type: 'text'; text: string } => block.type === 'text')
    .map((block) => block.text)
    .join('\n')
}

/**
 * What a remote tool's result is worth to an agent or a model: its structured content when it has
 * some, else its text, else its content blocks. A result flagged `isError` throws PLUGIN_ERROR
 * with the tool's own message, as a failing plugin action does.
 */
export function toolValue(result: CallToolResult, name: string): unknown {
  if (result.isError) throw new AppError('PLUGIN_ERROR', `${name}: ${textOf(result) || 'the tool reported an error'}`)
  if (result.structuredContent !== undefined) return result.structuredContent
  if (result.content.every((block) => block.type === 'text')) return textOf(result)
  return result.content
}

/** A value as a tool result: JSON text for any client, and the same value as structured content when it is an object. */
export function toolResult(value: unknown): CallToolResult {
  const text = typeof value === 'string' ? value : JSON.stringify(value)
  return {
    content: [{ type: 'text', text }],
    ...(value !== null && typeof value === 'object' && !Array.isArray(value) ? { structuredContent: value as Record<string, unknown> } : {}),
  }
}

/** A tool that ran and did not succeed (an agent task that failed), told as it is. */
export class ToolFailure extends Error {}

/** A failure as a tool result (`isError`): the model sees the code and the message, never a stack. */
export function toolError(error: unknown): CallToolResult {
  const text = error instanceof AppError ? `${error.code}: ${error.message}` : error instanceof ToolFailure ? error.message : 'INTERNAL_ERROR: the tool failed unexpectedly'
  return { content: [{ type: 'text', text }], isError: true }
}
