/**
 * How deep arrays and objects may nest in a request body or a WebSocket message. JSON.parse takes
 * any depth, but what runs next does not: validating a value nested 100,000 levels deep (and
 * building the error that describes it) overflowed the stack, a 500. No field of the API needs
 * more than a few levels; free-form values (document metadata, plugin parameters) get this many.
 */
export const MAX_JSON_DEPTH = 100

/**
 * The path ("" for the value itself, else its top-level key or index) under which `value` nests
 * arrays and objects deeper than `limit`, or null when it does not. The walk stops at the limit,
 * so its own recursion is bounded whatever the value.
 */
export function findTooDeep(value: unknown, limit = MAX_JSON_DEPTH): string | null {
  if (value === null || typeof value !== 'object') return null
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (deeperThan(value[i], limit - 1)) return String(i)
    return limit < 1 ? '' : null
  }
  for (const key in value) if (deeperThan((value as Record<string, unknown>)[key], limit - 1)) return key
  return limit < 1 ? '' : null
}

/** Whether `value` holds more than `levels` levels of arrays and objects. */
function deeperThan(value: unknown, levels: number): boolean {
  if (value === null || typeof value !== 'object') return false
  if (levels < 1) return true
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (deeperThan(value[i], levels - 1)) return true
    return false
  }
  for (const key in value) if (deeperThan((value as Record<string, unknown>)[key], levels - 1)) return true
  return false
}

export const tooDeepMessage = (field: string) => `${field}: arrays and objects nest more than ${MAX_JSON_DEPTH} levels deep`
