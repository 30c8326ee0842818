import { type JsonSchema, schemaProblems } from './json-schema'

/** A plugin's name: also its folder's name under the plugins folder. */
export const PLUGIN_NAME = /^[a-z0-9][a-z0-9-]{0,63}$/
/** An action's name: an identifier (it is an exported function's name). */
export const ACTION_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/

export interface ActionSpec {
  description: string
  parameters: JsonSchema
  /**
   * The action only reads or computes: it changes nothing, here or elsewhere. Agents working
   * without a model call only actions declared so (true); false or absent, never.
   */
  readOnly?: boolean
}

/** `plugin.json`, as the contract defines it. */
export interface Manifest {
  name: string
  version: string
  description: string
  category: string
  permissions: string[]
  main: string
  actions: Record<string, ActionSpec>
}

export class ManifestError extends Error {}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

function text(manifest: Record<string, unknown>, field: string, max: number, fallback?: string): string {
  const value = manifest[field] ?? fallback
  if (typeof value !== 'string' || !value.trim() || value.length > max) {
    throw new ManifestError(`plugin.json: "${field}" must be a non-empty string of at most ${max} characters`)
  }
  return value
}

/**
 * A checked manifest, or a ManifestError saying what is wrong. `main` must be a relative path
 * inside the plugin's folder; each action's `parameters` an object schema in the supported subset.
 */
export function parseManifest(raw: unknown): Manifest {
  if (!isObject(raw)) throw new ManifestError('plugin.json must hold a JSON object')
  const name = text(raw, 'name', 64)
  if (!PLUGIN_NAME.test(name)) throw new ManifestError(`plugin.json: name "${name}" must match ^[a-z0-9][a-z0-9-]{0,63}$`)
  const version = text(raw, 'version', 64)
  if (!/^[0-9A-Za-z][0-9A-Za-z.+-]*$/.test(version)) throw new ManifestError(`plugin.json: version "${version}" must be like 1.0.0`)
  const description = text(raw, 'description', 1000)
  const category = text(raw, 'category', 64, 'utility')
  const permissions = raw.permissions ?? []
  if (!Array.isArray(permissions) || permissions.length > 32 || !permissions.every((p) => typeof p === 'string' && /^[a-z][a-z0-9:_-]{0,63}$/.test(p))) {
    throw new ManifestError('plugin.json: "permissions" must be an array of strings such as "network" or "rag:read"')
  }
  const main = text(raw, 'main', 256, 'index.js')
  const segments = main.replace(/\\/g, '/').split('/')
  if (main.startsWith('/') || main.includes('\\') || /^[A-Za-z]:/.test(main) || segments.some((s) => s === '..' || s === '')) {
    throw new ManifestError(`plugin.json: "main" must be a relative path inside the plugin's folder, got "${main}"`)
  }
  if (!isObject(raw.actions) || Object.keys(raw.actions).length === 0) throw new ManifestError('plugin.json: "actions" must be an object with at least one action')
  if (Object.keys(raw.actions).length > 100) throw new ManifestError('plugin.json: at most 100 actions')
  const actions: Record<string, ActionSpec> = {}
  for (const [action, spec] of Object.entries(raw.actions)) {
    if (!ACTION_NAME.test(action) || action === '__proto__') throw new ManifestError(`plugin.json: action name "${action}" must be an identifier (letters, digits, _)`)
    if (!isObject(spec)) throw new ManifestError(`plugin.json: actions.${action} must be an object`)
    const parameters = spec.parameters ?? { type: 'object', properties: {} }
    const problems = schemaProblems(parameters, `actions.${action}.parameters`)
    if (problems.length) throw new ManifestError(`plugin.json: ${problems.slice(0, 3).join('; ')}`)
    if ((parameters as JsonSchema).type !== 'object') throw new ManifestError(`plugin.json: actions.${action}.parameters must have "type": "object"`)
    if (spec.readOnly !== undefined && typeof spec.readOnly !== 'boolean') throw new ManifestError(`plugin.json: actions.${action}.readOnly must be true or false`)
    actions[action] = { description: text(spec, 'description', 1000, action), parameters: parameters as JsonSchema, ...(spec.readOnly !== undefined ? { readOnly: spec.readOnly } : {}) }
  }
  return { name, version, description, category, permissions: permissions as string[], main, actions }
}
