/**
 * The JSON Schema subset that plugin actions declare their parameters in, checked by hand:
 * the rules are few, and each failure must name its field ("parameters.expression: …").
 *
 * Supported keywords: type (one or a list), properties, required, additionalProperties
 * (boolean or schema), items, enum, const, minimum, maximum, exclusiveMinimum,
 * exclusiveMaximum, minLength, maxLength, pattern, minItems, maxItems, default (applied to
 * missing properties). Annotations (title, description, examples, format, $comment) are
 * allowed and ignored. Anything else makes the manifest invalid, so a schema never looks
 * stricter than it is.
 */

export type JsonSchema = Record<string, unknown>

const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null'])
const ANNOTATIONS = new Set(['title', 'description', 'examples', 'format', '$comment', 'default', '$schema'])
const KEYWORDS = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
])
const MAX_SCHEMA_DEPTH = 32

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** Problems with a schema itself (empty when it is usable), each naming where it is. */
export function schemaProblems(schema: unknown, at: string, depth = 0): string[] {
  if (!isObject(schema)) return [`${at}: must be a JSON Schema object`]
  if (depth > MAX_SCHEMA_DEPTH) return [`${at}: nests deeper than ${MAX_SCHEMA_DEPTH} levels`]
  const problems: string[] = []
  for (const key of Object.keys(schema)) {
    if (!KEYWORDS.has(key) && !ANNOTATIONS.has(key)) problems.push(`${at}: keyword "${key}" is not supported`)
  }
  const types = schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type]
  for (const type of types) if (typeof type !== 'string' || !TYPES.has(type)) problems.push(`${at}.type: unknown type ${JSON.stringify(type)}`)
  if (schema.properties !== undefined) {
    if (!isObject(schema.properties)) problems.push(`${at}.properties: must be an object`)
    else for (const [key, sub] of Object.entries(schema.properties)) problems.push(...schemaProblems(sub, `${at}.properties.${key}`, depth + 1))
  }
  if (schema.required !== undefined && !(Array.isArray(schema.required) && schema.required.every((r) => typeof r === 'string'))) {
    problems.push(`${at}.required: must be an array of property names`)
  }
  if (schema.additionalProperties !== undefined && typeof schema.additionalProperties !== 'boolean') {
    problems.push(...schemaProblems(schema.additionalProperties, `${at}.additionalProperties`, depth + 1))
  }
  if (schema.items !== undefined) problems.push(...schemaProblems(schema.items, `${at}.items`, depth + 1))
  if (schema.enum !== undefined && !(Array.isArray(schema.enum) && schema.enum.length > 0)) problems.push(`${at}.enum: must be a non-empty array`)
  for (const key of ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum']) {
    if (schema[key] !== undefined && typeof schema[key] !== 'number') problems.push(`${at}.${key}: must be a number`)
  }
  for (const key of ['minLength', 'maxLength', 'minItems', 'maxItems']) {
    const value = schema[key]
    if (value !== undefined && !(Number.isInteger(value) && (value as number) >= 0)) problems.push(`${at}.${key}: must be a whole number`)
  }
  if (schema.pattern !== undefined) {
    try {
      new RegExp(schema.pattern as string, 'u')
    } catch {
      problems.push(`${at}.pattern: not a valid regular expression`)
    }
  }
  return problems
}

function typeOf(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  return typeof value
}

function matchesType(value: unknown, type: string): boolean {
  switch (type) {
    case 'integer':
      return Number.isInteger(value)
    case 'number':
      return typeof value === 'number' && Number.isFinite(value)
    case 'object':
      return isObject(value)
    default:
      return typeOf(value) === type
  }
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b)
}

const describe = (value: unknown) => {
  const text = JSON.stringify(value) ?? String(value)
  return text.length > 40 ? `${text.slice(0, 40)}…` : text
}

/**
 * Checks `value` against `schema` and returns it with defaults filled in, or the first
 * problem as a message naming the field (`at` is the name of the root, e.g. "parameters").
 */
export function validate(schema: JsonSchema, value: unknown, at: string): { ok: true; value: unknown } | { ok: false; message: string } {
  try {
    return { ok: true, value: check(schema, value, at) }
  } catch (error) {
    if (error instanceof SchemaFailure) return { ok: false, message: error.message }
    throw error
  }
}

class SchemaFailure extends Error {}

function fail(at: string, problem: string): never {
  throw new SchemaFailure(`${at}: ${problem}`)
}

function check(schema: JsonSchema, value: unknown, at: string): unknown {
  const types = schema.type === undefined ? [] : Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string]
  if (types.length && !types.some((type) => matchesType(value, type))) {
    fail(at, `must be ${types.map((t) => (t === 'integer' ? 'an integer' : t === 'array' || t === 'object' ? `an ${t}` : `a ${t}`)).join(' or ')}, got ${typeOf(value)}`)
  }
  if (schema.const !== undefined && !sameJson(schema.const, value)) fail(at, `must be ${describe(schema.const)}`)
  if (Array.isArray(schema.enum) && !schema.enum.some((option) => sameJson(option, value))) {
    fail(at, `must be one of ${schema.enum.map(describe).join(', ')}`)
  }
  if (typeof value === 'number') {
    if (typeof schema.minimum === 'number' && value < schema.minimum) fail(at, `must be at least ${schema.minimum}`)
    if (typeof schema.maximum === 'number' && value > schema.maximum) fail(at, `must be at most ${schema.maximum}`)
    if (typeof schema.exclusiveMinimum === 'number' && value <= schema.exclusiveMinimum) fail(at, `must be greater than ${schema.exclusiveMinimum}`)
    if (typeof schema.exclusiveMaximum === 'number' && value >= schema.exclusiveMaximum) fail(at, `must be less than ${schema.exclusiveMaximum}`)
  }
  if (typeof value === 'string') {
    const length = [...value].length
    if (typeof schema.minLength === 'number' && length < schema.minLength) fail(at, `must be at least ${schema.minLength} characters`)
    if (typeof schema.maxLength === 'number' && length > schema.maxLength) fail(at, `must be at most ${schema.maxLength} characters`)
    if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern, 'u').test(value)) fail(at, `must match the pattern ${schema.pattern}`)
  }
  if (Array.isArray(value)) {
    if (typeof schema.minItems === 'number' && value.length < schema.minItems) fail(at, `must hold at least ${schema.minItems} items`)
    if (typeof schema.maxItems === 'number' && value.length > schema.maxItems) fail(at, `must hold at most ${schema.maxItems} items`)
    if (isObject(schema.items)) return value.map((item, i) => check(schema.items as JsonSchema, item, `${at}[${i}]`))
  }
  if (isObject(value)) {
    const properties = isObject(schema.properties) ? (schema.properties as Record<string, JsonSchema>) : {}
    const result: Record<string, unknown> = { ...value }
    // Defined, not assigned: a property named "__proto__" stays a property.
    const set = (name: string, item: unknown) => Object.defineProperty(result, name, { value: item, enumerable: true, writable: true, configurable: true })
    const own = (name: string) => (Object.hasOwn(value, name) ? value[name] : undefined)
    for (const name of Array.isArray(schema.required) ? (schema.required as string[]) : []) {
      if (own(name) === undefined && !(Object.hasOwn(properties, name) && properties[name]!.default !== undefined)) fail(`${at}.${name}`, 'is required')
    }
    for (const [name, sub] of Object.entries(properties)) {
      if (own(name) === undefined) {
        if (sub.default !== undefined) set(name, structuredClone(sub.default))
      } else set(name, check(sub, own(name), `${at}.${name}`))
    }
    for (const name of Object.keys(value)) {
      if (Object.hasOwn(properties, name)) continue
      if (schema.additionalProperties === false) fail(`${at}.${name}`, 'is not a known parameter')
      if (isObject(schema.additionalProperties)) set(name, check(schema.additionalProperties, value[name], `${at}.${name}`))
    }
    return result
  }
  return value
}
