import { Elysia } from 'elysia'
import { authPlugin } from '../../core/auth'
import type { RateLimiter } from '../../core/rate-limit'
import type { AuthService } from '../auth/service'
import type { RequestAudit } from '../audit/context'
import { andThen } from '../../db/maybe-promise'
import { ErrorResponse } from '../system/model'
import {
  PluginDetail,
  PluginExecuteRequest,
  PluginExecuteResponse,
  PluginInstallRequest,
  PluginInstallResponse,
  PluginParams,
  PluginRemovedResponse,
  PluginsListResponse,
  PluginStateResponse,
} from './model'
import type { PluginService } from './service'

const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 429: ErrorResponse, 503: ErrorResponse }

/** Runs one action and shapes the PluginExecuteResponse (the WebSocket sends the same). */
export async function executePlugin(plugins: PluginService, name: string, action: string, parameters: unknown, caller: { userId: string; roles: string[] }, signal?: AbortSignal) {
  const started = performance.now()
  const result = await plugins.execute(name, action, parameters, caller, signal)
  return { success: true, plugin: name, action, result, executionTime: Math.round(performance.now() - started) }
}

export function pluginsModule(plugins: PluginService, auth: AuthService, limiter: RateLimiter, audit: RequestAudit) {
  return new Elysia({ name: 'module:plugins', prefix: '/plugins', tags: ['Plugins'] })
    .use(authPlugin(auth, limiter))
    .get('', () => andThen(plugins.current(), () => plugins.list()), {
      auth: true,
      response: { 200: PluginsListResponse, ...errors },
      detail: { summary: 'Built-in and installed plugins with their status' },
    })
    .post('/install', async ({ body, principal, request }) => {
      const installed = await plugins.install(body)
      audit.record(request, principal, { action: 'plugin.installed', target: installed.plugin, details: { source: body.source, package: body.package, version: installed.version } })
      return installed
    }, {
      admin: true,
      body: PluginInstallRequest,
      response: { 200: PluginInstallResponse, ...errors },
      detail: { summary: 'Install a plugin from npm, git (URL or local path) or the URL of a .tgz (admin)' },
    })
    .get('/:name', ({ params }) => andThen(plugins.current(), () => plugins.show(params.name)), {
      auth: true,
      params: PluginParams,
      response: { 200: PluginDetail, ...errors },
      detail: { summary: 'One plugin: its manifest, actions and their parameter schemas' },
    })
    .post(
      '/:name/execute',
      ({ params, body, principal, request }) =>
        executePlugin(plugins, params.name, body.action, body.parameters, { userId: principal.user.id, roles: principal.user.roles }, request.signal),
      {
        auth: true,
        params: PluginParams,
        body: PluginExecuteRequest,
        response: { 200: PluginExecuteResponse, ...errors },
        detail: { summary: 'Run one action of a plugin (installed plugins run isolated, with a time limit)' },
      },
    )
    .post('/:name/enable', async ({ params, principal, request }) => {
      const state = await plugins.setEnabled(params.name, true)
      audit.record(request, principal, { action: 'plugin.enabled', target: state.plugin })
      return state
    }, {
      admin: true,
      params: PluginParams,
      response: { 200: PluginStateResponse, ...errors },
      detail: { summary: 'Enable a plugin (admin)' },
    })
    .post('/:name/disable', async ({ params, principal, request }) => {
      const state = await plugins.setEnabled(params.name, false)
      audit.record(request, principal, { action: 'plugin.disabled', target: state.plugin })
      return state
    }, {
      admin: true,
      params: PluginParams,
      response: { 200: PluginStateResponse, ...errors },
      detail: { summary: 'Disable a plugin: executing it answers 409 PLUGIN_DISABLED (admin)' },
    })
    .delete('/:name', async ({ params, principal, request }) => {
      const removed = await plugins.remove(params.name)
      audit.record(request, principal, { action: 'plugin.removed', target: removed.plugin })
      return removed
    }, {
      admin: true,
      params: PluginParams,
      response: { 200: PluginRemovedResponse, ...errors },
      detail: { summary: 'Uninstall a plugin: its folder and record are removed (admin)' },
    })
}
