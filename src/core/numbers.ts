type Node = Record<string, unknown>

/** The largest magnitude a number may have to be stored and compared exactly (2^53 - 1). */
export const LARGEST_EXACT = Number.MAX_SAFE_INTEGER

function isNumeric(schema: Node): boolean {
  if (schema.type === 'integer' || schema.type === 'number') return true
  return Array.isArray(schema.anyOf) && (schema.anyOf as Node[]).some((member) => member && (member.type === 'integer' || member.type === 'number'))
}

const outOfRange = (value: unknown) => typeof value === 'number' && (!Number.isFinite(value) || Math.abs(value) > LARGEST_EXACT)

/**
 * Finds a number the schema declares numeric whose value is beyond what SQLite and JavaScript
 * hold exactly (99999999999999999999, 1e400), and returns its field path ("offset",
 * "options.limit"). Validation lets such a number through wherever a schema has no upper bound;
 * this catches it for every route before a handler sees it. Only numeric fields of the schema
 * are looked at: free-form values (metadata, plugin parameters) keep whatever JSON they carry.
 */
export function findAbsurdNumber(value: unknown, schema: unknown, path = '', depth = 0): string | null {
  if (!schema || typeof schema !== 'object' || depth > 16) return null
  const node = schema as Node
  if (isNumeric(node)) return outOfRange(value) ? path : null
  if (Array.isArray(node.anyOf)) {
    for (const member of node.anyOf) {
      const found = findAbsurdNumber(value, member, path, depth + 1)
      if (found !== null) return found
    }
    return null
  }
  if (Array.isArray(value) && node.items && typeof node.items === 'object') {
    for (let i = 0; i < value.length; i++) {
      const found = findAbsurdNumber(value[i], node.items, path ? `${path}.${i}` : String(i), depth + 1)
      if (found !== null) return found
    }
    return null
  }
  if (value && typeof value === 'object' && node.properties && typeof node.properties === 'object') {
    for (const [key, child] of Object.entries(node.properties as Node)) {
      const found = findAbsurdNumber((value as Node)[key], child, path ? `${path}.${key}` : key, depth + 1)
      if (found !== null) return found
    }
  }
  return null
}

/** Every number of a coerced query string came from a numeric field of its schema. */
export function findAbsurdQueryNumber(query: Record<string, unknown> | undefined): string | null {
  if (!query) return null
  for (const key in query) {
    const value = query[key]
    if (outOfRange(value)) return key
    if (Array.isArray(value) && value.some(outOfRange)) return key
  }
  return null
}
