import { AppError } from '../../core/errors'
import type { SocketHandlers } from '../ws/registry'
import { executePlugin } from '.'
import type { PluginService } from './service'

/** `plugin_execute {plugin, action, parameters}` → `chat_response {data: PluginExecuteResponse}`. */
export function registerPluginSocket(handlers: SocketHandlers, plugins: PluginService): void {
  handlers.register('plugin_execute', async ({ principal, signal }, message) => {
    const { plugin, action, parameters } = message
    if (typeof plugin !== 'string' || !plugin || plugin.length > 200) throw new AppError('VALIDATION_ERROR', 'plugin must be a plugin name')
    if (typeof action !== 'string' || !action || action.length > 200) throw new AppError('VALIDATION_ERROR', 'action must be an action name')
    if (parameters !== undefined && (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters))) {
      throw new AppError('VALIDATION_ERROR', 'parameters must be an object')
    }
    return executePlugin(plugins, plugin, action, parameters ?? {}, { userId: principal.user.id, roles: principal.user.roles }, signal)
  })
}
