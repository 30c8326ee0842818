import { t } from 'elysia'

const Status = t.Union([t.Literal('enabled'), t.Literal('disabled'), t.Literal('error')], { description: '"enabled", "disabled" or "error"' })

export const PluginSummary = t.Object({
  name: t.String(),
  version: t.String(),
  description: t.String(),
  category: t.String(),
  status: Status,
  permissions: t.Array(t.String()),
  source: t.String({ description: '"builtin", "npm", "git" or "url"' }),
  builtin: t.Boolean(),
  message: t.Optional(t.String({ description: 'Why the plugin cannot run (status "error")' })),
})

export const PluginsListResponse = t.Object({ plugins: t.Array(PluginSummary), total: t.Integer() })

const JsonSchemaObject = t.Record(t.String(), t.Unknown(), { description: 'JSON Schema of the parameters (type: object)' })

export const PluginDetail = t.Composite([
  PluginSummary,
  t.Object({
    package: t.Optional(t.String()),
    installedAt: t.Optional(t.String()),
    actions: t.Record(
      t.String(),
      t.Object({
        description: t.String(),
        parameters: JsonSchemaObject,
        readOnly: t.Optional(t.Boolean({ description: 'Declared to change nothing; agents working without a model call only such actions' })),
      }),
    ),
  }),
])

export const PluginParams = t.Object({ name: t.String({ minLength: 1, maxLength: 200 }) })

export const PluginExecuteRequest = t.Object({
  action: t.String({ minLength: 1, maxLength: 200 }),
  parameters: t.Record(t.String(), t.Unknown(), { description: "The action's parameters, checked against its schema" }),
})

export const PluginExecuteResponse = t.Object({
  success: t.Boolean(),
  plugin: t.String(),
  action: t.String(),
  result: t.Unknown({ description: "The action's JSON result" }),
  executionTime: t.Integer({ description: 'Milliseconds' }),
})

export const PluginInstallRequest = t.Object({
  source: t.Union([t.Literal('npm'), t.Literal('git'), t.Literal('url')], { error: 'body.source: must be "npm", "git" or "url"' }),
  package: t.String({ minLength: 1, maxLength: 2048, description: 'npm package name, git URL or local path, or the URL of a .tgz' }),
  version: t.String({ maxLength: 200, description: 'npm version or tag; git tag, branch or commit; ignored for url' }),
  sha256: t.Optional(t.String({ pattern: '^[A-Fa-f0-9]{64}$', error: 'body.sha256: must be 64 hex characters', description: 'url only: expected SHA-256 of the archive' })),
})

export const PluginInstallResponse = t.Object({
  success: t.Boolean(),
  plugin: t.String(),
  version: t.String(),
  status: t.String(),
  message: t.String(),
})

export const PluginStateResponse = t.Object({ success: t.Boolean(), plugin: t.String(), status: Status })
export const PluginRemovedResponse = t.Object({ success: t.Boolean(), plugin: t.String(), message: t.String() })
