import type { Database } from 'bun:sqlite'
import { AppError, notFound } from '../../core/errors'
import type { Generator } from '../../ml'
import type { RagService } from '../rag/service'
import type { RagStore } from '../rag/store'
import { AGENTS, AGENT_NAMES, DEFAULT_AGENTS, agentNamed } from './catalog'
import { AgentFailure, runTask, type TaskSpec } from './orchestrate'
import { andThen, type MaybePromise, whenDone } from '../../db/maybe-promise'
import type { TaskRow, TaskStatus, TaskStore } from './store'
import { SqliteTaskStore } from './store.sqlite'
import { EMPTY_TOOLBOX, type PluginToolbox, type ToolCaller } from './tools'
import type { AgentResult } from './types'

export interface AgentServiceDeps {
  db: Database
  /** Where tasks are kept (default: the SQLite database `db`). */
  store?: TaskStore
  rag: RagService<RagStore>
  generator: () => Promise<Generator>
  /** The plugins' tools (default: none). */
  tools?: PluginToolbox
  /** Tasks run at once (default 2). */
  concurrency?: number
  /** Queued tasks beyond which a new one is 429 QUEUE_FULL (default 100). */
  queueLimit?: number
  /** How long finished tasks are kept, in milliseconds (default 7 days). */
  retentionMs?: number
  log?: (line: string) => void
}

/** What a caller asks for (POST /agents/execute, or a voice command). */
export interface AgentRequest {
  task: string
  /** 1..10 agent names; in-process callers may leave it out for DEFAULT_AGENTS (the HTTP API requires it). */
  agents?: string[]
  parallel?: boolean
  maxIterations?: number
  collections?: string[] | null
}

export interface ExecuteResponse {
  success: boolean
  taskId: string
  results: AgentResult[]
  finalSynthesis: string
  totalExecutionTime: number
  confidence: number
  iterations: number
}

interface Queued {
  id: string
  caller: ToolCaller
  spec: TaskSpec
}

interface Waiter {
  resolve: () => void
}

const PRUNE_EVERY_MS = 60_000

/**
 * Multi-agent tasks: validation, the stored task queue (at most `concurrency` running, the rest
 * queued up to `queueLimit`), cancellation that aborts the running generation, and retention.
 */
export class AgentService {
  readonly store: TaskStore
  readonly concurrency: number
  readonly queueLimit: number
  private readonly retentionMs: number
  private readonly queue: Queued[] = []
  private readonly running = new Map<string, AbortController>()
  private readonly waiters = new Map<string, Waiter[]>()
  private readonly log: (line: string) => void
  private lastPrune = 0
  /** Recent task durations (ms), for Retry-After. */
  private averageMs = 5_000
  private readonly timer: ReturnType<typeof setInterval>
  tools: PluginToolbox

  constructor(private readonly deps: AgentServiceDeps) {
    this.store = deps.store ?? new SqliteTaskStore(deps.db)
    this.concurrency = deps.concurrency ?? 2
    this.queueLimit = deps.queueLimit ?? 100
    this.retentionMs = deps.retentionMs ?? 7 * 24 * 3600_000
    this.tools = deps.tools ?? EMPTY_TOOLBOX
    this.log = deps.log ?? ((line) => console.error(line))
    const logFailure = (error: unknown) => this.log(`agents: ${(error as Error)?.message ?? String(error)}`)
    whenDone(
      andThen(this.store.failOrphans(), (orphans) => {
        if (orphans) this.log(`agents: ${orphans} task(s) left queued or running by the previous run marked failed`)
      }),
      logFailure,
    )
    whenDone(this.prune(), logFailure)
    this.timer = setInterval(() => whenDone(this.prune(), logFailure), 3600_000)
    ;(this.timer as { unref?: () => void }).unref?.()
  }

  list() {
    return { agents: AGENTS.map((agent) => ({ name: agent.name, role: agent.role, description: agent.description })) }
  }

  /** Checks a request (agents known, collections the caller's) and fills in the defaults. */
  validate(caller: ToolCaller, request: AgentRequest): MaybePromise<TaskSpec> {
    const task = request.task.trim()
    if (!task) throw new AppError('VALIDATION_ERROR', 'body.task: must not be empty')
    const agents = request.agents ?? DEFAULT_AGENTS
    if (agents.length < 1 || agents.length > 10) throw new AppError('VALIDATION_ERROR', 'body.agents: must list 1 to 10 agents')
    const unknown = agents.filter((name) => !agentNamed(name))
    if (unknown.length) {
      throw new AppError('UNKNOWN_AGENT', `Unknown agent${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => `"${n}"`).join(', ')}; known agents: ${AGENT_NAMES.join(', ')}`)
    }
    const maxIterations = request.maxIterations ?? 3
    if (!Number.isInteger(maxIterations) || maxIterations < 1 || maxIterations > 10) throw new AppError('VALIDATION_ERROR', 'body.maxIterations: must be an integer from 1 to 10')
    const collections = request.collections?.length ? [...new Set(request.collections)] : null
    const spec: TaskSpec = { task, agents, parallel: request.parallel ?? false, maxIterations, collections }
    // Each is looked up (404 when not the caller's): at once on SQLite, awaited on PostgreSQL.
    const lookups = (collections ?? []).map((name) => this.deps.rag.collection(caller.userId, name)).filter((found) => found instanceof Promise)
    return lookups.length ? Promise.all(lookups).then(() => spec) : spec
  }

  /**
   * Stores and queues a task; it runs when a slot frees up. Returns at once.
   * 429 QUEUE_FULL (with Retry-After) when `queueLimit` tasks are already waiting.
   */
  submit(caller: ToolCaller, request: AgentRequest): MaybePromise<{ taskId: string; status: 'queued' }> {
    return andThen(this.validate(caller, request), (spec) => this.enqueue(caller, spec))
  }

  private enqueue(caller: ToolCaller, spec: TaskSpec): MaybePromise<{ taskId: string; status: 'queued' }> {
    if (this.queue.length >= this.queueLimit) {
      const seconds = Math.max(1, Math.ceil(((this.queue.length / this.concurrency + 1) * this.averageMs) / 1000))
      throw new AppError('QUEUE_FULL', `${this.queue.length} agent tasks are already waiting; try again in ${seconds} s`, { headers: { 'retry-after': String(seconds) } })
    }
    if (Date.now() - this.lastPrune > PRUNE_EVERY_MS) whenDone(this.prune(), (error) => this.log(`agents: pruning failed: ${(error as Error)?.message}`))
    const id = crypto.randomUUID()
    return andThen(this.store.create(id, caller.userId, spec), () => {
      this.queue.push({ id, caller, spec })
      this.pump()
      return { taskId: id, status: 'queued' as const }
    })
  }

  /**
   * Runs a task to its end and answers with its results (POST /agents/execute without async).
   * A `signal` that aborts (the client went away) cancels the task.
   */
  async execute(caller: ToolCaller, request: AgentRequest, signal?: AbortSignal): Promise<ExecuteResponse> {
    const submitted = this.submit(caller, request)
    const { taskId } = submitted instanceof Promise ? await submitted : submitted
    const cancel = () => this.cancelTask(taskId)
    signal?.addEventListener('abort', cancel, { once: true })
    if (signal?.aborted) cancel()
    try {
      await this.finished(taskId)
    } finally {
      signal?.removeEventListener('abort', cancel)
    }
    const found = this.store.get(taskId)
    const row = found instanceof Promise ? await found : found
    if (!row) throw notFound(`Task ${taskId}`)
    if (row.status === 'cancelled') throw new AppError('CONFLICT', `Task ${taskId} was cancelled before it finished`)
    const failure = this.failure.get(taskId)
    this.failure.delete(taskId)
    if (row.status === 'failed') throw failure ?? new Error(row.error ?? 'The task failed')
    return {
      success: true,
      taskId,
      results: JSON.parse(row.results),
      finalSynthesis: row.final_synthesis ?? '',
      totalExecutionTime: row.total_execution_time ?? 0,
      confidence: row.confidence ?? 0,
      iterations: row.iterations,
    }
  }

  /** Errors of failed tasks awaited by execute(), so the response keeps the cause's code. */
  private readonly failure = new Map<string, Error>()

  private finished(taskId: string): Promise<void> {
    // The waiter is registered at once (a task may end while the row is being read), and released
    // at once when the row says the task has ended already.
    const done = new Promise<void>((resolve) => {
      const list = this.waiters.get(taskId) ?? []
      list.push({ resolve })
      this.waiters.set(taskId, list)
    })
    const release = (row: TaskRow | null) => {
      if (!row || !['queued', 'running'].includes(row.status)) this.release(taskId)
    }
    const row = this.store.get(taskId)
    if (row instanceof Promise) row.then(release, () => this.release(taskId))
    else release(row)
    return done
  }

  /** Resolves the waiters of a task without touching its kept failure. */
  private release(taskId: string): void {
    const list = this.waiters.get(taskId)
    this.waiters.delete(taskId)
    for (const waiter of list ?? []) waiter.resolve()
  }

  private settle(taskId: string): void {
    const list = this.waiters.get(taskId)
    this.waiters.delete(taskId)
    // A failure is kept only for an execute() waiting on it, which takes it.
    if (!list?.length) this.failure.delete(taskId)
    for (const waiter of list ?? []) waiter.resolve()
  }

  private pump(): void {
    while (this.running.size < this.concurrency && this.queue.length) {
      const next = this.queue.shift()!
      const started = this.store.start(next.id)
      if (started instanceof Promise) {
        // Its slot is taken while the database answers.
        const controller = new AbortController()
        this.running.set(next.id, controller)
        void started
          .then((ok) => (ok && !controller.signal.aborted ? this.run(next, controller) : undefined))
          .catch((error) => {
            this.log(`agents: task ${next.id} could not start: ${(error as Error)?.message ?? String(error)}`)
            this.failure.set(next.id, error instanceof Error ? error : new Error(String(error)))
            return this.store.end(next.id, 'failed', `The task could not start: ${(error as Error)?.message ?? String(error)}`)
          })
          .catch(() => {})
          .finally(() => {
            this.running.delete(next.id)
            this.settle(next.id)
            this.pump()
          })
        continue
      }
      if (!started) {
        this.settle(next.id)
        continue
      }
      const controller = new AbortController()
      this.running.set(next.id, controller)
      void this.run(next, controller).finally(() => {
        this.running.delete(next.id)
        this.settle(next.id)
        this.pump()
      })
    }
  }

  private async run({ id, caller, spec }: Queued, controller: AbortController): Promise<void> {
    const started = Date.now()
    const active = new Set<string>()
    const shown = () => (active.size ? [...active].join(', ') : null)
    // A progress write that fails (PostgreSQL lost) is logged; the task's end is written as usual.
    const progressLost = (error: unknown) => this.log(`agents: progress of task ${id} not stored: ${(error as Error)?.message ?? String(error)}`)
    try {
      const generator = await this.deps.generator()
      const outcome = await runTask(spec, {
        caller,
        generator,
        rag: this.deps.rag,
        tools: this.tools,
        signal: controller.signal,
        onAgentStart: (agent) => {
          active.add(agent)
          whenDone(this.store.current(id, shown()), progressLost)
        },
        onAgentDone: (result, progress, all) => {
          active.delete(result.agent)
          whenDone(this.store.progress(id, progress, shown(), all), progressLost)
        },
      })
      if (controller.signal.aborted) return
      const totalExecutionTime = Date.now() - started
      const completed = this.store.complete(id, { ...outcome, totalExecutionTime })
      if (completed instanceof Promise) await completed
      this.averageMs = this.averageMs * 0.8 + totalExecutionTime * 0.2
    } catch (error) {
      if (controller.signal.aborted) return
      const cause = error instanceof AgentFailure ? error.reason : error
      const message = error instanceof Error ? error.message : String(error)
      const ended = this.store.end(id, 'failed', message)
      if (ended instanceof Promise) await ended.catch((error) => this.log(`agents: task ${id} failed and could not be stored as failed: ${(error as Error)?.message}`))
      if (cause instanceof AppError) this.failure.set(id, new AppError(cause.code, message, { status: cause.status }))
      else {
        this.log(`agents: task ${id} failed: ${(cause as Error)?.stack ?? String(cause)}`)
        this.failure.set(id, new Error(message))
      }
    }
  }

  /** The caller's task as GET /agents/task/{id} shows it; 404 for unknown ids and others' tasks. */
  get(userId: string, taskId: string): MaybePromise<ReturnType<typeof describe>> {
    return andThen(this.store.find(userId, taskId), (row) => {
      if (!row) throw notFound(`Task ${taskId}`)
      return describe(row)
    })
  }

  tasks(userId: string, limit: number, offset: number, status?: TaskStatus) {
    return andThen(this.store.list(userId, limit, offset, status), ({ rows, total }) => ({
      tasks: rows.map((row) => {
        const { results: _results, finalSynthesis: _synthesis, ...summary } = describe(row)
        return { ...summary, agentsDone: (JSON.parse(row.results) as unknown[]).length }
      }),
      total,
      limit,
      offset,
    }))
  }

  /** Cancels the caller's queued or running task; a running generation is aborted at once. */
  cancel(userId: string, taskId: string): MaybePromise<{ success: boolean; taskId: string; status: 'cancelled' }> {
    return andThen(this.store.find(userId, taskId), (row) => {
      if (!row) throw notFound(`Task ${taskId}`)
      return andThen(this.cancelTask(taskId), (ended) => {
        if (ended) return { success: true, taskId, status: 'cancelled' as const }
        return andThen(this.store.get(taskId), (now) => {
          throw new AppError('CONFLICT', `Task ${taskId} has already ended (${now?.status ?? row.status})`)
        })
      })
    })
  }

  private cancelTask(taskId: string): MaybePromise<boolean> {
    return andThen(this.store.end(taskId, 'cancelled', 'Cancelled by the user'), (ended) => {
      const at = this.queue.findIndex((entry) => entry.id === taskId)
      if (at >= 0) this.queue.splice(at, 1)
      this.running.get(taskId)?.abort(new AppError('CONFLICT', 'The task was cancelled'))
      if (ended && at >= 0) this.settle(taskId)
      return ended
    })
  }

  /** Deletes finished tasks older than the retention. */
  prune(): MaybePromise<number> {
    this.lastPrune = Date.now()
    return this.store.prune(new Date(Date.now() - this.retentionMs).toISOString())
  }

  /** Counts by status, for metrics. */
  counts(): MaybePromise<Record<TaskStatus, number>> {
    return this.store.counts()
  }

  /** Stops the prune timer and cancels what is running (the tasks end as cancelled). */
  close(): void {
    clearInterval(this.timer)
    const lost = (error: unknown) => this.log(`agents: cancelling at close failed: ${(error as Error)?.message ?? String(error)}`)
    for (const entry of [...this.queue]) whenDone(this.cancelTask(entry.id), lost)
    for (const id of [...this.running.keys()]) whenDone(this.cancelTask(id), lost)
  }
}

/** A stored task in the shape of AgentTaskStatusResponse (plus its extensions). */
export function describe(row: TaskRow) {
  const request = JSON.parse(row.request) as { agents: string[]; parallel: boolean; maxIterations: number; collections: string[] | null }
  return {
    taskId: row.id,
    status: row.status,
    progress: row.progress,
    currentAgent: row.current_agent,
    results: JSON.parse(row.results) as AgentResult[],
    startTime: row.started_at ?? row.created_at,
    endTime: row.ended_at,
    createdAt: row.created_at,
    task: row.task,
    agents: request.agents,
    parallel: request.parallel,
    maxIterations: request.maxIterations,
    collections: request.collections,
    iterations: row.iterations,
    ...(row.error !== null ? { error: row.error } : {}),
    ...(row.status === 'completed'
      ? { finalSynthesis: row.final_synthesis ?? '', confidence: row.confidence ?? 0, totalExecutionTime: row.total_execution_time ?? 0 }
      : {}),
  }
}
