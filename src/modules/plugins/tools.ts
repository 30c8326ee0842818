/** One plugin action offered as a tool to a model or an agent. */
export interface ToolDefinition {
  /** `${plugin}__${action}`, e.g. "calculator__evaluate" (a valid OpenAI function name). */
  name: string
  plugin: string
  action: string
  description: string
  /** The action's JSON Schema (type: object). */
  parameters: Record<string, unknown>
  /** Declared to change nothing (built-ins; a manifest's `readOnly`): agents without a model call only these. */
  readOnly?: boolean
}

/** Who a tool call runs for: the knowledge plugin searches this user's collections. */
export interface ToolCaller {
  userId: string
  roles: string[]
}

export interface PluginToolbox {
  /** Every action of every enabled plugin (built-in and installed). */
  list(): ToolDefinition[]
  /**
   * Runs one action with the same validation, limits and isolation as POST /plugins/{name}/execute.
   * Resolves to the action's result; throws AppError (NOT_FOUND, UNKNOWN_ACTION, VALIDATION_ERROR,
   * PLUGIN_ERROR, PLUGIN_DISABLED) like the route.
   */
  call(name: string, args: unknown, caller: ToolCaller, signal?: AbortSignal): Promise<unknown>
}

/** The separator between plugin and action in a tool name (plugin names never hold "_"). */
export const TOOL_SEPARATOR = '__'

export function toolName(plugin: string, action: string): string {
  return `${plugin}${TOOL_SEPARATOR}${action}`
}

/** The plugin and action a tool name stands for, or null when it is not a tool name. */
export function parseToolName(name: string): { plugin: string; action: string } | null {
  const at = name.indexOf(TOOL_SEPARATOR)
  if (at <= 0) return null
  return { plugin: name.slice(0, at), action: name.slice(at + TOOL_SEPARATOR.length) }
}

/**
 * What the toolbox needs of the plugin catalog (PluginService implements it). Named here so that
 * tools.ts does not import the service that imports its types.
 */
export interface ActionCatalog {
  enabledActions(): { plugin: string; action: string; description: string; parameters: Record<string, unknown>; readOnly?: boolean }[]
  notFound(name: string): Error
  execute(plugin: string, action: string, args: unknown, caller: ToolCaller, signal?: AbortSignal): Promise<unknown>
}

/** The toolbox over the plugin catalog: what agents, the voice autopilot and model tool calls use. */
export function createToolbox(plugins: ActionCatalog): PluginToolbox {
  return {
    list() {
      return plugins.enabledActions().map(({ plugin, action, description, parameters, readOnly }) => ({
        name: toolName(plugin, action),
        plugin,
        action,
        description,
        parameters,
        ...(readOnly !== undefined ? { readOnly } : {}),
      }))
    },
    async call(name, args, caller, signal) {
      const parsed = parseToolName(name)
      if (!parsed) throw plugins.notFound(name)
      return plugins.execute(parsed.plugin, parsed.action, args, caller, signal)
    },
  }
}

/** OpenAI-style `tools` array from the toolbox. */
export function openAiTools(
  toolbox: PluginToolbox,
): Array<{ type: 'function'; function: { name: string; description: string; parameters: Record<string, unknown> } }> {
  return toolbox.list().map((tool) => ({
    type: 'function' as const,
    function: { name: tool.name, description: `${tool.description}`, parameters: tool.parameters },
  }))
}
