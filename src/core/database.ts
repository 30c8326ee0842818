/**
 * Errors of Bun's PostgreSQL client that mean the database cannot be reached (refused, closed,
 * timed out, shutting down), as opposed to a bad statement: the request gets 503
 * DATABASE_UNAVAILABLE and /health turns degraded until PostgreSQL answers again.
 */
/** The code of the error a query gets at once while PostgreSQL is known to be unreachable (db/postgres.ts gatedPostgres). */
export const DATABASE_KNOWN_DOWN = 'UAGENT_DATABASE_KNOWN_DOWN'

const CLIENT_CODES = new Set([
  DATABASE_KNOWN_DOWN,
  'ERR_POSTGRES_CONNECTION_CLOSED',
  'ERR_POSTGRES_CONNECTION_REFUSED',
  'ERR_POSTGRES_CONNECTION_TIMEOUT',
  'ERR_POSTGRES_IDLE_TIMEOUT',
  'ERR_POSTGRES_LIFETIME_TIMEOUT',
  'ERR_POSTGRES_SOCKET_CLOSED',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
])
/** SQLSTATE classes 08 (connection exception) and 57P (operator intervention: shutdown, cannot connect now). */
const SERVER_STATES = /^(08|57P0[1-4]|53300)/

export const DATABASE_UNAVAILABLE_MESSAGE = 'The database (PostgreSQL, UAGENT_DATABASE_URL) cannot be reached; nothing was changed by this request. Try again shortly.'

export function databaseUnavailable(error: unknown): boolean {
  const { code, errno } = (error ?? {}) as { code?: unknown; errno?: unknown }
  if (typeof code === 'string' && CLIENT_CODES.has(code)) return true
  return typeof errno === 'string' && SERVER_STATES.test(errno)
}

/** PostgreSQL refuses text holding U+0000 (SQLite keeps it): such input is the caller's to fix, a 400. */
export function unstorableText(error: unknown): boolean {
  const { errno } = (error ?? {}) as { errno?: unknown }
  return errno === '22021' || errno === '22P05'
}

export const UNSTORABLE_TEXT_MESSAGE = 'The text contains the NUL character (U+0000), which this server’s database (PostgreSQL) cannot store: remove it and try again'
