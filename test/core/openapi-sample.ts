// Values that satisfy a JSON Schema from /openapi/json, so that a request can be made valid in
// every field but the one a test is probing.
type Schema = Record<string, any>

export function sample(schema: Schema | undefined, depth = 0): unknown {
  if (!schema || depth > 8) return undefined
  if ('const' in schema) return schema.const
  if (schema.enum) return schema.enum[0]
  if (schema.default !== undefined) return schema.default
  if (schema.anyOf) return sample(schema.anyOf.find((member: Schema) => member.type !== 'null') ?? schema.anyOf[0], depth + 1)
  if (schema.oneOf) return sample(schema.oneOf[0], depth + 1)
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== 'null') : schema.type
  switch (type) {
    case 'integer':
    case 'number':
      return schema.minimum ?? (schema.maximum !== undefined ? Math.min(schema.maximum, 1) : 1)
    case 'boolean':
      return false
    case 'string': {
      if (schema.format === 'email') return 'someone@example.com'
      if (schema.format === 'date-time') return new Date().toISOString()
      if (schema.format === 'uri') return 'https://example.com/'
      const length = Math.max(schema.minLength ?? 1, 1)
      return 'a'.repeat(Math.min(length, schema.maxLength ?? length))
    }
    case 'array': {
      const count = schema.minItems ?? 0
      return Array.from({ length: Math.max(count, schema.items && count === 0 ? 0 : count) }, () => sample(schema.items, depth + 1))
    }
    case 'object': {
      const value: Record<string, unknown> = {}
      for (const key of schema.required ?? []) value[key] = sample(schema.properties?.[key], depth + 1)
      return value
    }
    default:
      return undefined
  }
}

export interface NumericField {
  /** Where the field sits: "body.limit", "body.options.limit", "body.documents.0.weight". */
  name: string
  schema: Schema
  /** Puts a value in that field of a body built from the schema (creating the objects on the way). */
  set(body: Record<string, unknown>, value: unknown): void
}

export const isNumeric = (schema: Schema) =>
  schema.type === 'integer' ||
  schema.type === 'number' ||
  (Array.isArray(schema.type) && schema.type.some((t: string) => t === 'integer' || t === 'number')) ||
  (Array.isArray(schema.anyOf) && schema.anyOf.some((member: Schema) => member.type === 'integer' || member.type === 'number'))

/** Every numeric field of a body schema, nested objects and arrays included. */
export function numericBodyFields(root: Schema | undefined): NumericField[] {
  const fields: NumericField[] = []
  const walk = (schema: Schema | undefined, steps: { key: string | number; schema: Schema }[], depth: number) => {
    if (!schema || depth > 6) return
    if (isNumeric(schema)) {
      fields.push({
        name: ['body', ...steps.map((step) => step.key)].join('.'),
        schema,
        set(body, value) {
          let target: any = body
          steps.forEach((step, i) => {
            if (i === steps.length - 1) target[step.key] = value
            else {
              const next = steps[i + 1]!
              if (target[step.key] === undefined || target[step.key] === null) target[step.key] = typeof next.key === 'number' ? [] : {}
              target = target[step.key]
              if (typeof next.key === 'number' && target.length === 0) target.push(sample(step.schema.items ?? {}) ?? {})
            }
          })
        },
      })
      return
    }
    for (const member of schema.anyOf ?? []) if (member.type === 'object' || member.type === 'array') walk(member, steps, depth + 1)
    if (schema.properties) for (const [key, child] of Object.entries<Schema>(schema.properties)) walk(child, [...steps, { key, schema: child }], depth + 1)
    if (schema.type === 'array' && schema.items) walk(schema.items, [...steps.slice(0, -1), ...(steps.length ? [{ ...steps.at(-1)!, schema }] : []), { key: 0, schema: schema.items }], depth + 1)
  }
  walk(root, [], 0)
  return fields
}
