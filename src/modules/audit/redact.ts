/** Field names whose values are never written to the audit log. */
const SECRET_NAME = /pass(word|wd|phrase)?$|secret|token|^key$|apikey$|api_key$|privatekey|private_key|authorization|cookie|mfacode|otp|^code$|credential/i
/** Values that look like a credential whatever their field's name: an API key, a JWT, a bearer header. */
const SECRET_VALUE = /uak_[A-Za-z0-9_-]{8,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*|bearer\s+\S+/gi
/** The user-info part of a URL (`https://user:token@host`). */
const URL_CREDENTIALS = /(\b[a-z][a-z0-9+.-]*:\/\/)[^/\s@]+@/gi
const REDACTED = '[redacted]'
const MAX_DEPTH = 6
const MAX_STRING = 1000

/**
 * `details` as they are stored: secrets removed by name (password, token, key, secret…) and by
 * shape (uak_… keys, JWTs, bearer headers), long strings cut, depth bounded. The callers pass no
 * secret in the first place; this is what makes sure none is ever written.
 */
export function redactDetails(details: Record<string, unknown> | undefined): Record<string, unknown> {
  return (details ? clean(details, 0) : {}) as Record<string, unknown>
}

function clean(value: unknown, depth: number): unknown {
  if (typeof value === 'string') {
    const cut = value.length > MAX_STRING ? `${value.slice(0, MAX_STRING)}…` : value
    return cut.replace(SECRET_VALUE, REDACTED).replace(URL_CREDENTIALS, `$1${REDACTED}@`)
  }
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return value
  if (depth >= MAX_DEPTH) return REDACTED
  if (Array.isArray(value)) return value.slice(0, 100).map((item) => clean(item, depth + 1))
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [name, item] of Object.entries(value as Record<string, unknown>)) {
      if (item === undefined) continue
      out[name] = SECRET_NAME.test(name) ? REDACTED : clean(item, depth + 1)
    }
    return out
  }
  return String(value)
}
