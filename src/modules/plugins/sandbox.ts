import { readFileSync } from 'node:fs'
import { AppError } from '../../core/errors'

/** The Node.js that runs installed plugins, or why there is none. */
export type NodeRuntime = { ok: true; path: string; version: string; major: number; permissionFlag: string } | { ok: false; reason: string }

export const MIN_NODE_MAJOR = 20

/**
 * Finds Node.js ≥ 20 (`UAGENT_NODE_PATH`, else `node` on PATH) and the flag that turns its
 * permission model on (`--experimental-permission` on 20 and 21, `--permission` from 22).
 */
export function findNode(configured?: string): NodeRuntime {
  // Absolute, so the workers' minimal PATH never decides which node runs.
  const path = configured ? (Bun.which(configured) ?? configured) : Bun.which('node')
  if (!path) return { ok: false, reason: `No Node.js found: installed plugins need Node.js >= ${MIN_NODE_MAJOR} on PATH or in UAGENT_NODE_PATH` }
  let output = ''
  try {
    const result = Bun.spawnSync([path, '--version'], { env: { PATH: '/usr/local/bin:/usr/bin:/bin' }, stdout: 'pipe', stderr: 'ignore', timeout: 10_000 })
    output = result.stdout.toString().trim()
  } catch {
    output = ''
  }
  const match = /^v(\d+)\.\d+\.\d+/.exec(output)
  if (!match) return { ok: false, reason: `Node.js could not be run (${configured ? 'UAGENT_NODE_PATH' : 'node on PATH'}): installed plugins need Node.js >= ${MIN_NODE_MAJOR}` }
  const major = Number(match[1])
  if (major < MIN_NODE_MAJOR) {
    return { ok: false, reason: `Node.js ${output} has no permission model: installed plugins need Node.js >= ${MIN_NODE_MAJOR} (UAGENT_NODE_PATH)` }
  }
  return { ok: true, path, version: output, major, permissionFlag: major >= 22 ? '--permission' : '--experimental-permission' }
}

/**
 * The program each worker runs (passed with --eval, so nothing outside the plugin's folder needs
 * to be readable). It reads one JSON request per line on stdin and answers one JSON line on the
 * stdout it keeps for itself; whatever the plugin prints goes to stderr.
 */
function runnerSource(main: string): string {
  return `
'use strict'
const { pathToFileURL } = require('node:url')
const reply = process.stdout.write.bind(process.stdout)
process.stdout.write = process.stderr.write.bind(process.stderr)
for (const level of ['log', 'info', 'debug']) console[level] = console.error
process.on('uncaughtException', (error) => console.error('uncaught:', error && error.message))
process.on('unhandledRejection', (error) => console.error('unhandled rejection:', error && error.message))
const send = (message) => {
  let line
  try { line = JSON.stringify(message) } catch (error) {
    line = JSON.stringify({ id: message.id, ok: false, message: 'The action returned a value that cannot be sent as JSON: ' + error.message })
  }
  reply(line + '\\n')
}
const loaded = import(pathToFileURL(${JSON.stringify(main)}).href)
loaded.catch(() => {})
function find(mod, action) {
  if (typeof mod[action] === 'function') return mod[action]
  const fallback = mod.default
  if (fallback && typeof fallback === 'object' && Object.hasOwn(fallback, action) && typeof fallback[action] === 'function') return fallback[action]
  return null
}
async function handle(request) {
  let mod
  try { mod = await loaded } catch (error) {
    return send({ id: request.id, ok: false, message: 'The plugin could not be loaded: ' + String(error && error.message || error) })
  }
  const fn = find(mod, request.action)
  if (!fn) return send({ id: request.id, ok: false, message: 'The plugin exports no function named ' + request.action })
  try {
    const result = await fn(request.params)
    send({ id: request.id, ok: true, result: result === undefined ? null : result })
  } catch (error) {
    const text = error && typeof error === 'object' && 'message' in error ? String(error.message) : String(error)
    send({ id: request.id, ok: false, message: text || 'The action failed' })
  }
}
let buffered = ''
process.stdin.setEncoding('utf8')
process.stdin.on('data', (chunk) => {
  buffered += chunk
  let end
  while ((end = buffered.indexOf('\\n')) >= 0) {
    const line = buffered.slice(0, end)
    buffered = buffered.slice(end + 1)
    if (line) handle(JSON.parse(line))
  }
})
process.stdin.on('end', () => process.exit(0))
`
}

export interface WorkerOptions {
  plugin: string
  /** The plugin's folder: the only place the worker may read. */
  dir: string
  /** Absolute path of the entry module inside `dir`. */
  main: string
  node: Extract<NodeRuntime, { ok: true }>
  memoryMb: number
  timeoutMs: number
  idleMs: number
  log: (line: string) => void
}

interface Pending {
  action: string
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
  timer: ReturnType<typeof setTimeout>
}

const MAX_REPLY_BYTES = 64 * 1024 * 1024
const STDERR_TAIL = 4096

/**
 * One warm Node.js process for one installed plugin: started on first call, shared by concurrent
 * calls, killed when a call overruns the time limit or the process outgrows its memory bound,
 * started again on the next call, and stopped after `idleMs` without calls.
 */
export class PluginWorker {
  private process: ReturnType<typeof Bun.spawn<'pipe', 'pipe', 'pipe'>> | null = null
  private readonly pending = new Map<number, Pending>()
  private nextId = 1
  private idleTimer: ReturnType<typeof setTimeout> | null = null
  private memoryTimer: ReturnType<typeof setInterval> | null = null
  private stderrTail = ''
  /** Why the running process is being stopped, told to the calls it takes down. */
  private stopReason: string | null = null

  constructor(private readonly options: WorkerOptions) {}

  get running(): boolean {
    return this.process !== null
  }

  /** Runs `action` with already validated `params`; PLUGIN_ERROR for anything the plugin does wrong. */
  call(action: string, params: unknown, signal?: AbortSignal): Promise<unknown> {
    if (signal?.aborted) return Promise.reject(new AppError('PLUGIN_ERROR', 'The call was cancelled'))
    const proc = this.process ?? this.start()
    const id = this.nextId++
    if (this.idleTimer) clearTimeout(this.idleTimer)
    this.idleTimer = null
    return new Promise((resolve, reject) => {
      const settle = () => {
        this.pending.delete(id)
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        if (this.pending.size === 0) this.becameIdle()
      }
      const onAbort = () => {
        settle()
        reject(new AppError('PLUGIN_ERROR', 'The call was cancelled'))
      }
      const timer = setTimeout(() => {
        settle()
        reject(new AppError('PLUGIN_ERROR', `Plugin ${this.options.plugin} did not finish ${action} within ${this.options.timeoutMs} ms; it was stopped`))
        this.kill(`another call to plugin ${this.options.plugin} overran the ${this.options.timeoutMs} ms time limit and the plugin was stopped`)
      }, this.options.timeoutMs)
      this.pending.set(id, {
        action,
        timer,
        resolve: (value) => {
          settle()
          resolve(value)
        },
        reject: (error) => {
          settle()
          reject(error)
        },
      })
      signal?.addEventListener('abort', onAbort, { once: true })
      try {
        proc.stdin.write(`${JSON.stringify({ id, action, params })}\n`)
        proc.stdin.flush()
      } catch {
        // The process died before its exit was seen: the exit fails this call with the reason.
      }
    })
  }

  /** Stops the process; calls in flight fail with `reason`. */
  stop(reason = `plugin ${this.options.plugin} was stopped`): void {
    this.kill(reason)
    if (this.idleTimer) clearTimeout(this.idleTimer)
    this.idleTimer = null
  }

  private start() {
    const { dir, main, node, memoryMb, plugin } = this.options
    this.stopReason = null
    this.stderrTail = ''
    const proc = Bun.spawn(
      [
        node.path,
        node.permissionFlag,
        // The folder's contents, at any depth (the wildcard form reads the same on Node 20 and 22+).
        `--allow-fs-read=${dir}/*`,
        `--max-old-space-size=${memoryMb}`,
        '--no-warnings',
        '--eval',
        runnerSource(main),
      ],
      {
        cwd: dir,
        // Built from nothing: no UAGENT_* variable, no secret of the server's environment.
        env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: dir, LANG: 'C.UTF-8', NODE_ENV: 'production' },
        stdin: 'pipe',
        stdout: 'pipe',
        stderr: 'pipe',
      },
    )
    this.process = proc
    void this.readReplies(proc)
    const stderrRead = this.readStderr(proc)
    // The exit is judged once its last words on stderr are in (V8 says why it ran out of memory there).
    void proc.exited.then(async (code) => {
      await Promise.race([stderrRead, Bun.sleep(500)])
      this.exited(proc, code)
    })
    this.watchMemory(proc.pid)
    this.options.log(`plugin ${plugin}: worker started (pid ${proc.pid})`)
    return proc
  }

  private async readReplies(proc: NonNullable<PluginWorker['process']>) {
    const decoder = new TextDecoder()
    let buffered = ''
    try {
      for await (const chunk of proc.stdout) {
        buffered += decoder.decode(chunk, { stream: true })
        let end: number
        while ((end = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, end)
          buffered = buffered.slice(end + 1)
          if (this.process === proc) this.reply(line)
        }
        if (buffered.length > MAX_REPLY_BYTES && this.process === proc) this.kill(`plugin ${this.options.plugin} sent a reply larger than 64 MB and was stopped`)
      }
    } catch {
      // The pipe closes with the process.
    }
  }

  private reply(line: string) {
    let message: { id?: unknown; ok?: unknown; result?: unknown; message?: unknown }
    try {
      message = JSON.parse(line)
    } catch {
      return
    }
    const pending = typeof message.id === 'number' ? this.pending.get(message.id) : undefined
    if (!pending) return
    if (message.ok === true) pending.resolve(message.result)
    else pending.reject(new AppError('PLUGIN_ERROR', this.scrub(typeof message.message === 'string' ? message.message : 'The action failed')))
  }

  /** A plugin's message never shows where it lives on this machine. */
  private scrub(message: string): string {
    const { dir } = this.options
    return message.split(`file://${dir}`).join(this.options.plugin).split(dir).join(this.options.plugin).slice(0, 2000)
  }

  private async readStderr(proc: NonNullable<PluginWorker['process']>) {
    const decoder = new TextDecoder()
    try {
      for await (const chunk of proc.stderr) {
        this.stderrTail = (this.stderrTail + decoder.decode(chunk, { stream: true })).slice(-STDERR_TAIL)
      }
    } catch {
      // The pipe closes with the process.
    }
  }

  /** V8's heap bound does not cover buffers; the resident size is watched while calls run. */
  private watchMemory(pid: number) {
    const limitKb = (this.options.memoryMb * 2 + 128) * 1024
    const statusFile = `/proc/${pid}/status`
    this.memoryTimer = setInterval(() => {
      if (this.pending.size === 0) return
      let status: string
      try {
        status = readFileSync(statusFile, 'utf8')
      } catch {
        return
      }
      const rss = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0)
      if (rss > limitKb) this.kill(`plugin ${this.options.plugin} ran out of memory (limit ${this.options.memoryMb} MB) and was stopped`)
    }, 100)
    ;(this.memoryTimer as { unref?: () => void }).unref?.()
  }

  private kill(reason: string) {
    const proc = this.process
    if (!proc) return
    this.stopReason = reason
    proc.kill('SIGKILL')
    this.detach(proc, reason)
  }

  private exited(proc: NonNullable<PluginWorker['process']>, code: number | null) {
    if (this.process !== proc) return
    const outOfMemory = /heap out of memory|Reached heap limit|Allocation failed/i.test(this.stderrTail)
    const reason = outOfMemory
      ? `plugin ${this.options.plugin} ran out of memory (limit ${this.options.memoryMb} MB) and was stopped`
      : `plugin ${this.options.plugin} stopped unexpectedly (exit code ${code ?? 'unknown'})`
    if (this.pending.size || !this.stopReason) {
      const tail = this.stderrTail.trim().split('\n').slice(-5).join(' | ')
      this.options.log(`plugin ${this.options.plugin}: worker exited (code ${code})${tail ? `: ${this.scrub(tail)}` : ''}`)
    }
    this.detach(proc, reason)
  }

  /** Forgets `proc` and fails every call it had. */
  private detach(proc: NonNullable<PluginWorker['process']>, reason: string) {
    if (this.process !== proc) return
    this.process = null
    if (this.memoryTimer) clearInterval(this.memoryTimer)
    this.memoryTimer = null
    const calls = [...this.pending.values()]
    for (const call of calls) call.reject(new AppError('PLUGIN_ERROR', `${reason[0]!.toUpperCase()}${reason.slice(1)}`))
  }

  private becameIdle() {
    if (!this.process || this.idleTimer) return
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null
      if (this.pending.size === 0) this.kill(`plugin ${this.options.plugin} was idle`)
    }, this.options.idleMs)
    // An idle worker never keeps the server (or a test run) alive.
    ;(this.idleTimer as { unref?: () => void }).unref?.()
  }
}
