// The plugins' tool interface as agents use it (services.tools), an empty one, and the record of a call.
import { AppError } from '../../core/errors'
import type { PluginToolbox } from '../plugins/tools'

export type { PluginToolbox, ToolCaller, ToolDefinition } from '../plugins/tools'

/** No plugins: agents work without tools. */
export const EMPTY_TOOLBOX: PluginToolbox = {
  list: () => [],
  call: async (name) => {
    throw new AppError('UNKNOWN_ACTION', `No tool named ${name} is available`)
  },
}

/** One call an agent made: what it asked for and what came back (or the error). */
export interface ToolCallRecord {
  tool: string
  arguments: unknown
  result?: unknown
  error?: string
}
