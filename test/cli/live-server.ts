import { afterAll, beforeAll } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ADMIN } from '../helpers'
import { tempDir } from '../temp'

/** The CLI's entry point, run as `bun cli/index.ts …` the way `uagent` runs. */
export const CLI = join(import.meta.dir, '../../cli/index.ts')

/** Anything `.listen()` can start: an Elysia app. */
interface Listenable {
  listen(options: { port: number; hostname: string }): { server: { port?: number } | null; stop(closeActiveConnections?: boolean): unknown }
}

export interface CliResult {
  stdout: string
  stderr: string
  code: number
}

export interface CliOptions {
  /** Text piped to the CLI's stdin (none by default). */
  stdin?: string
  /** The server the CLI talks to: the live one by default; null passes no --url (host operations, stored credentials). */
  url?: string | null
}

export interface LiveServer {
  /** http://127.0.0.1:<port> while the server runs, '' when it does not (the CLI then gets no --url). */
  readonly base: string
  /** The CLI's XDG_CONFIG_HOME: its credentials are under uagent/credentials.json. */
  readonly config: string
  /** Listens on a free port; `onStop` runs after the server stops (close its database, workers…). */
  start(app: Listenable, onStop?: () => void): string
  stop(): void
  /** The environment a CLI process gets: this process's minus every UAGENT_* variable, plus the config folder. */
  env(extra?: Record<string, string>): Record<string, string>
  /** Starts the CLI without waiting for it (for reading its output as it comes, or killing it). */
  spawn(args: string[], extra?: Record<string, string>): Bun.Subprocess<'ignore', 'pipe', 'pipe'>
  /** Runs the CLI to its end. */
  run(args: string[], extra?: Record<string, string>, options?: CliOptions): Promise<CliResult>
  /** The access token the CLI stored at its last login. */
  accessToken(): string
  /** Calls the API directly (as the logged-in CLI user unless `token` is given): status and JSON body. */
  request(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; json: any }>
  /** The JSON body of `request`. */
  api(method: string, path: string, body?: unknown, token?: string): Promise<any>
}

/**
 * A server on a real port for one CLI test file, and the `uagent` CLI run against it as a real
 * process with a config folder of its own. Given an app, it listens before the file's tests
 * (and, with `login`, logs the CLI in as the admin); it always stops after them, then runs `cleanup`.
 * Without an app, the tests call start() and stop() themselves.
 */
export function liveServer(app?: Listenable, options: { login?: boolean; cleanup?: () => void } = {}): LiveServer {
  const config = tempDir('cli-config')
  let base = ''
  let stopServer: (() => void) | null = null

  const env = (extra: Record<string, string> = {}) => {
    const clean: Record<string, string> = {}
    for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('UAGENT_') && value !== undefined) clean[key] = value
    return { ...clean, XDG_CONFIG_HOME: config, NO_COLOR: '1', ...extra }
  }
  const command = (args: string[], url: string | null = base) => ['bun', CLI, ...(url ? ['--url', url] : []), ...args]
  const accessToken = () => JSON.parse(readFileSync(join(config, 'uagent/credentials.json'), 'utf8')).accessToken as string
  const request = async (method: string, path: string, body?: unknown, token?: string) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token ?? accessToken()}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: response.status, json: (await response.json()) as any }
  }

  const live: LiveServer = {
    get base() {
      return base
    },
    config,
    start(app, onStop) {
      const server = app.listen({ port: 0, hostname: '127.0.0.1' })
      base = `http://127.0.0.1:${server.server!.port}`
      stopServer = () => {
        server.stop(true)
        onStop?.()
      }
      return base
    },
    stop() {
      stopServer?.()
      stopServer = null
      base = ''
    },
    env,
    spawn: (args, extra) => Bun.spawn(command(args), { env: env(extra), stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' }),
    async run(args, extra, { stdin, url }: CliOptions = {}) {
      const proc = Bun.spawn(command(args, url), {
        env: env(extra),
        stdout: 'pipe',
        stderr: 'pipe',
        stdin: stdin === undefined ? 'ignore' : new TextEncoder().encode(stdin),
      })
      const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
      return { stdout, stderr, code }
    },
    accessToken,
    request,
    api: async (method, path, body, token) => (await request(method, path, body, token)).json,
  }

  if (app) {
    beforeAll(async () => {
      live.start(app)
      if (!options.login) return
      const login = await live.run(['login', '--email', ADMIN.email, '--password', ADMIN.password])
      if (login.code !== 0) throw new Error(`uagent login failed: ${login.stderr}`)
    })
  }
  afterAll(() => {
    live.stop()
    options.cleanup?.()
  })
  return live
}
