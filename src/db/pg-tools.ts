import type { Postgres } from './postgres'

/**
 * PostgreSQL's own client programs (pg_dump, pg_restore from Debian's postgresql-client), run
 * as child processes. The connection goes to them in libpq's environment variables (PGHOST,
 * PGPASSWORD…), never on the command line, where other users of the host could read it.
 */

/** The path of a client program, or null when it is not installed (looked up on PATH). */
export function findPgTool(name: string): string | null {
  return Bun.which(name)
}

/** libpq's environment for the database a pool is connected to. */
export function libpqEnvOf(sql: Postgres): Record<string, string> {
  const options = (sql as unknown as { options: { hostname?: string; port?: number; username?: string; password?: unknown; database?: string } }).options
  const env: Record<string, string> = {}
  if (options.hostname) env.PGHOST = options.hostname
  if (options.port) env.PGPORT = String(options.port)
  if (options.username) env.PGUSER = options.username
  if (typeof options.password === 'string' && options.password) env.PGPASSWORD = options.password
  if (options.database) env.PGDATABASE = options.database
  return env
}

/** libpq's environment for a postgres:// URL. */
export function libpqEnvFromUrl(url: string): Record<string, string> {
  const parsed = new URL(url)
  const env: Record<string, string> = {}
  if (parsed.hostname) env.PGHOST = decodeURIComponent(parsed.hostname)
  if (parsed.port) env.PGPORT = parsed.port
  if (parsed.username) env.PGUSER = decodeURIComponent(parsed.username)
  if (parsed.password) env.PGPASSWORD = decodeURIComponent(parsed.password)
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, ''))
  if (database) env.PGDATABASE = database
  const sslmode = parsed.searchParams.get('sslmode')
  if (sslmode) env.PGSSLMODE = sslmode
  return env
}

/**
 * Runs a client program with a libpq environment; resolves when it exits 0, else throws an Error
 * whose message is the program's first lines of stderr.
 */
export async function runPgTool(path: string, args: string[], env: Record<string, string>): Promise<void> {
  const base: Record<string, string> = {}
  // Only what the program needs from this process's environment (no UAGENT_* secret, no stray PG* setting).
  for (const key of ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ']) if (process.env[key]) base[key] = process.env[key]!
  const child = Bun.spawn([path, ...args], { env: { ...base, ...env }, stdin: 'ignore', stdout: 'ignore', stderr: 'pipe' })
  const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited])
  if (code !== 0) {
    const detail = stderr.trim().split('\n').slice(0, 3).join('; ') || `exit status ${code}`
    throw new Error(detail)
  }
}
