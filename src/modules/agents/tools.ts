// The plugins' tool interface as agents see it. Structurally the same as the plugins module's
// PluginToolbox, so the real one (services.tools) plugs in as it is.
import { AppError } from '../../core/errors'

export interface ToolDefinition {
  /** `${plugin}__${action}`, e.g. "calculator__evaluate". */
  name: string
  plugin: string
  action: string
  description: string
  parameters: Record<string, unknown>
}

export interface ToolCaller {
  userId: string
  roles: string[]
}

export interface PluginToolbox {
  /** The actions of the enabled plugins. */
  list(): ToolDefinition[]
  /** Runs one action for the caller; throws AppError as the execute route answers. */
  call(name: string, args: unknown, caller: ToolCaller, signal?: AbortSignal): Promise<unknown>
}

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
