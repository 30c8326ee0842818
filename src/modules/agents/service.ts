import type { Database } from 'bun:sqlite'
import { AppError, notFound } from '../../core/errors'
import type { Generator } from '../../ml'
import type { RagService } from '../rag/service'
import type { RagStore } from '../rag/store'
import { AGENTS, AGENT_NAMES, DEFAULT_AGENTS, agentNamed } from './catalog'
import { AgentFailure, runTask, type TaskSpec } from './orchestrate'
import { andThen, type MaybePromise, whenDone } from '../../db/maybe-promise'
import { type EventBus, LocalBus } from '../../core/bus'
import { type ClaimedTask, type SharedTaskQueue, sharedQueueOf, STALE, type TaskRow, type TaskStatus, type TaskStore } from './store'
import { SqliteTaskStore } from './store.sqlite'
import { EMPTY_TOOLBOX, type PluginToolbox, type ToolCaller } from './tools'
import type { AgentDefinition, AgentResult } from './types'

/** Agent tasks name an assistant as `assistant:<ref>` beside the built-in agents. */
export const ASSISTANT_AGENT_PREFIX = 'assistant:'

/** Assistants as agents (set by the app): checked at submit, built with the caller's rights when the task runs. */
export interface AssistantAgents {
  check(userId: string, ref: string): Promise<void>
  agent(userId: string, ref: string): Promise<AgentDefinition>
}

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
  /** Where task events go (progress, end, cancel, a task queued): other replicas' too with Redis (default: this process only). */
  bus?: EventBus
  /** This replica's name in a shared queue: the owner of the tasks it runs (default: a random id). */
  instanceId?: string
  /** Shared queue: how often a replica's running tasks show they are alive, in ms (default 3000). */
  heartbeatMs?: number
  /** Shared queue: a running task whose heartbeat is older than this is failed, in ms (default 15000). */
  staleMs?: number
  /** Shared queue: how often the queue is looked at when no event can wake this replica (Redis absent or lost), in ms (default 1000). */
  pollMs?: number
}

/** The bus topic of agent task events. */
export const AGENTS_TOPIC = 'agents'

/** What a follower of a task (a WebSocket client) is sent while it is not over. */
export interface TaskProgress {
  taskId: string
  status: TaskStatus
  progress: number
  currentAgent: string | null
  results: AgentResult[]
}

/** Defaults of the shared queue (PostgreSQL); see "Agent tasks across replicas" in docs/replicas.md. */
export const HEARTBEAT_MS = 3_000
export const STALE_MS = 15_000
export const POLL_MS = 1_000
/** With events arriving, the queue and awaited tasks are still looked at this often, in case one was missed. */
const SAFETY_MS = 5_000

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
const ENDED: TaskStatus[] = ['completed', 'failed', 'cancelled']

/**
 * Multi-agent tasks: validation, the stored task queue (at most `concurrency` running, the rest
 * queued up to `queueLimit`), cancellation that aborts the running generation, and retention.
 *
 * On SQLite the queue is this process's. On a shared store (PostgreSQL) the queue is the
 * database's, shared by every replica: a task submitted anywhere is stored `queued`; each
 * replica claims queued tasks for its free slots (woken by a bus event, or by a poll every
 * `pollMs` when no event can come), keeps a heartbeat on the ones it runs, and fails any
 * replica's running task whose heartbeat is older than `staleMs`. Cancel and status work from
 * any replica: the database says, the bus tells the owner to stop.
 */
export class AgentService {
  /** `assistant:<ref>` in a task's agents (issue 55); null: only the built-in agents. */
  assistants: AssistantAgents | null = null
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
  readonly bus: EventBus
  private readonly shared: (TaskStore & SharedTaskQueue) | null
  readonly instanceId: string
  readonly heartbeatMs: number
  readonly staleMs: number
  private readonly pollMs: number
  private readonly sharedTimers: ReturnType<typeof setInterval>[] = []
  private readonly followers = new Map<string, Set<(event: Record<string, unknown>) => void>>()
  private readonly stopListening: () => void
  /** A claim is under way (one at a time); another pump was asked for meanwhile. */
  private claiming = false
  private pumpAgain = false
  private lastSafety = 0
  private closed = false
  /** The last shared-queue failure logged, so that a lost database is logged once, not every poll. */
  private lastProblem: string | null = null

  constructor(private readonly deps: AgentServiceDeps) {
    this.store = deps.store ?? new SqliteTaskStore(deps.db)
    this.concurrency = deps.concurrency ?? 2
    this.queueLimit = deps.queueLimit ?? 100
    this.retentionMs = deps.retentionMs ?? 7 * 24 * 3600_000
    this.tools = deps.tools ?? EMPTY_TOOLBOX
    this.log = deps.log ?? ((line) => console.error(line))
    const logFailure = (error: unknown) => this.log(`agents: ${(error as Error)?.message ?? String(error)}`)
    this.bus = deps.bus ?? new LocalBus(this.log)
    this.shared = sharedQueueOf(this.store)
    this.instanceId = deps.instanceId ?? crypto.randomUUID()
    this.heartbeatMs = deps.heartbeatMs ?? HEARTBEAT_MS
    this.staleMs = deps.staleMs ?? STALE_MS
    this.pollMs = deps.pollMs ?? POLL_MS
    this.stopListening = this.bus.subscribe(AGENTS_TOPIC, (event) => this.onEvent(event))
    if (this.shared) this.startSharedQueue(this.shared)
    else whenDone(this.resume(), logFailure)
    whenDone(this.prune(), logFailure)
    this.timer = setInterval(() => whenDone(this.prune(), logFailure), 3600_000)
    ;(this.timer as { unref?: () => void }).unref?.()
  }

  /**
   * After a restart (this process's queue): the tasks the previous run left running are failed
   * with the reason; those it left queued go back in the queue, in their order, and run.
   */
  private resume(): MaybePromise<void> {
    return andThen(this.store.failOrphans(), (orphans) => {
      if (orphans) this.log(`agents: ${orphans} task(s) left running by the previous run marked failed`)
      return andThen(this.store.waiting(), (rows) => {
        if (this.closed || !rows.length) return
        const known = new Set(this.queue.map((entry) => entry.id))
        for (const row of rows) if (!known.has(row.id)) this.queue.push(queuedOf(row))
        this.log(`agents: ${rows.length} task(s) left queued by the previous run queued again`)
        this.pump()
      })
    })
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
    const unknown = agents.filter((name) => !agentNamed(name) && !(this.assistants && name.startsWith(ASSISTANT_AGENT_PREFIX)))
    if (unknown.length) {
      throw new AppError('UNKNOWN_AGENT', `Unknown agent${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => `"${n}"`).join(', ')}; known agents: ${AGENT_NAMES.join(', ')}`)
    }
    const maxIterations = request.maxIterations ?? 3
    if (!Number.isInteger(maxIterations) || maxIterations < 1 || maxIterations > 10) throw new AppError('VALIDATION_ERROR', 'body.maxIterations: must be an integer from 1 to 10')
    const collections = request.collections?.length ? [...new Set(request.collections)] : null
    const spec: TaskSpec = { task, agents, parallel: request.parallel ?? false, maxIterations, collections }
    // Each is looked up (404 when not the caller's): at once on SQLite, awaited on PostgreSQL.
    const lookups: Promise<unknown>[] = (collections ?? []).map((name) => this.deps.rag.collection(caller.userId, name)).filter((found) => found instanceof Promise)
    // assistant:<ref> entries: 404 (or 409) now, for an assistant the caller cannot use.
    for (const name of agents) if (this.assistants && name.startsWith(ASSISTANT_AGENT_PREFIX)) lookups.push(this.assistants.check(caller.userId, name.slice(ASSISTANT_AGENT_PREFIX.length)))
    return lookups.length ? Promise.all(lookups).then(() => spec) : spec
  }

  /**
   * Stores and queues a task; it runs when a slot frees up. Returns at once.
   * 429 QUEUE_FULL (with Retry-After) when `queueLimit` tasks are already waiting.
   */
  submit(caller: ToolCaller, request: AgentRequest): MaybePromise<{ taskId: string; status: 'queued' }> {
    return andThen(this.validate(caller, request), (spec) => (this.shared ? this.submitShared(this.shared, caller, spec) : this.enqueue(caller, spec)))
  }

  private enqueue(caller: ToolCaller, spec: TaskSpec): MaybePromise<{ taskId: string; status: 'queued' }> {
    if (this.queue.length >= this.queueLimit) {
      const seconds = Math.max(1, Math.ceil(((this.queue.length / this.concurrency + 1) * this.averageMs) / 1000))
      throw new AppError('QUEUE_FULL', `${this.queue.length} agent tasks are already waiting; try again in ${seconds} s`, { headers: { 'retry-after': String(seconds) } })
    }
    if (Date.now() - this.lastPrune > PRUNE_EVERY_MS) whenDone(this.prune(), (error) => this.log(`agents: pruning failed: ${(error as Error)?.message}`))
    const id = crypto.randomUUID()
    return andThen(this.store.create(id, caller.userId, spec, caller.roles), () => {
      this.queue.push({ id, caller, spec })
      this.pump()
      return { taskId: id, status: 'queued' as const }
    })
  }

  /** The shared queue's submit: the limit counts every replica's queued tasks; the bus wakes the replicas. */
  private async submitShared(shared: SharedTaskQueue, caller: ToolCaller, spec: TaskSpec): Promise<{ taskId: string; status: 'queued' }> {
    const waiting = await shared.queuedCount()
    if (waiting >= this.queueLimit) {
      const seconds = Math.max(1, Math.ceil(((waiting / this.concurrency + 1) * this.averageMs) / 1000))
      throw new AppError('QUEUE_FULL', `${waiting} agent tasks are already waiting; try again in ${seconds} s`, { headers: { 'retry-after': String(seconds) } })
    }
    if (Date.now() - this.lastPrune > PRUNE_EVERY_MS) whenDone(this.prune(), (error) => this.log(`agents: pruning failed: ${(error as Error)?.message}`))
    const id = crypto.randomUUID()
    await this.store.create(id, caller.userId, spec, caller.roles)
    this.bus.publish(AGENTS_TOPIC, { kind: 'queued', taskId: id })
    return { taskId: id, status: 'queued' as const }
  }

  /**
   * Runs a task to its end and answers with its results (POST /agents/execute without async).
   * A `signal` that aborts (the client went away) cancels the task.
   */
  async execute(caller: ToolCaller, request: AgentRequest, signal?: AbortSignal): Promise<ExecuteResponse> {
    const submitted = this.submit(caller, request)
    const { taskId } = submitted instanceof Promise ? await submitted : submitted
    const cancel = () => this.cancelTask(taskId, caller.userId)
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
    // Shared queue: this server stopped and handed the task back to the queue, where another runs it.
    if (row.status === 'queued' || row.status === 'running') throw new AppError('CONFLICT', `Task ${taskId} went back to the queue when this server stopped; follow it at /agents/task/${taskId}`)
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
    if (this.shared) return this.pumpShared(this.shared)
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

  /**
   * Shared queue: claims queued tasks, one claim at a time, while this replica has a free slot;
   * a wake-up that comes during a claim makes it look once more when that claim finds nothing.
   */
  private pumpShared(shared: SharedTaskQueue): void {
    if (this.closed) return
    if (this.claiming) {
      this.pumpAgain = true
      return
    }
    if (this.running.size >= this.concurrency) return
    this.claiming = true
    this.pumpAgain = false
    shared.claim(this.instanceId).then(
      (row) => {
        this.claiming = false
        this.lastProblem = null
        if (!row) {
          if (this.pumpAgain) this.pumpShared(shared)
          return
        }
        if (this.closed) {
          whenDone(shared.release(row.id, this.instanceId), (error) => this.log(`agents: task ${row.id} could not be handed back: ${(error as Error)?.message}`))
          return
        }
        this.runClaimed(row)
        this.pumpShared(shared)
      },
      (error) => {
        this.claiming = false
        this.problem('could not take a task from the queue', error)
      },
    )
  }

  private runClaimed(row: ClaimedTask): void {
    const entry = queuedOf(row)
    const controller = new AbortController()
    this.running.set(row.id, controller)
    this.announce(row.id, row.user_id, { status: 'running', progress: row.progress, currentAgent: null, results: [] })
    void this.run(entry, controller).finally(() => {
      this.running.delete(row.id)
      this.settle(row.id)
      this.pump()
    })
  }

  /** Logs a shared-queue failure once until the queue works again. */
  private problem(what: string, error: unknown): void {
    const message = `agents: ${what}: ${(error as Error)?.message ?? String(error)}`
    if (message === this.lastProblem) return
    this.lastProblem = message
    this.log(message)
  }

  /** Tells every replica's followers (and waiting execute calls) where a task stands. */
  private announce(taskId: string, userId: string, state: { status: TaskStatus; progress: number; currentAgent: string | null; results: AgentResult[]; error?: string; code?: string }): void {
    this.bus.publish(AGENTS_TOPIC, { kind: 'update', taskId, userId, ...state })
  }

  private onEvent(event: Record<string, unknown>): void {
    const taskId = typeof event.taskId === 'string' ? event.taskId : null
    if (event.kind === 'queued') {
      if (this.shared) this.pumpShared(this.shared)
      return
    }
    if (!taskId) return
    if (event.kind === 'cancel') {
      this.running.get(taskId)?.abort(new AppError('CONFLICT', 'The task was cancelled'))
      return
    }
    if (event.kind !== 'update') return
    for (const follower of this.followers.get(taskId) ?? []) follower(event)
    // A task of the shared queue that ended on another replica releases the execute() waiting here.
    if (this.shared && !this.running.has(taskId) && ENDED.includes(event.status as TaskStatus) && this.waiters.has(taskId)) {
      if (event.status === 'failed' && typeof event.error === 'string') {
        this.failure.set(taskId, typeof event.code === 'string' ? new AppError(event.code as never, event.error) : new Error(event.error))
      }
      this.release(taskId)
    }
  }

  /**
   * Shared queue: the start-up sweep (only stale tasks, and this replica's own from before a
   * restart), then the timers: heartbeat, stale sweep, and the poll that stands in for events.
   */
  private startSharedQueue(shared: SharedTaskQueue): void {
    const sweep = (own?: { owner: string; ms: number }) =>
      shared.failStale(this.staleMs, own).then(
        (rows) => {
          for (const row of rows) this.announce(row.id, row.user_id, { status: 'failed', progress: 0, currentAgent: null, results: [], error: STALE })
          if (rows.length) this.log(`agents: ${rows.length} running task(s) whose replica stopped marked failed`)
        },
        (error) => this.problem('the sweep of stopped replicas\' tasks failed', error),
      )
    // This replica's own tasks from before a restart are failed as soon as they miss a heartbeat.
    void sweep({ owner: this.instanceId, ms: this.heartbeatMs + 1000 }).then(() => this.pumpShared(shared))
    const every = (ms: number, work: () => void) => {
      const timer = setInterval(work, ms)
      ;(timer as { unref?: () => void }).unref?.()
      this.sharedTimers.push(timer)
    }
    every(this.heartbeatMs, () => {
      const ids = [...this.running.keys()]
      if (!ids.length) return
      shared.heartbeat(this.instanceId, ids).then(
        (alive) => {
          // A task no longer running here was cancelled or failed elsewhere: its run stops.
          const still = new Set(alive)
          for (const id of ids) if (!still.has(id)) this.running.get(id)?.abort(new AppError('CONFLICT', 'The task ended elsewhere'))
        },
        (error) => this.problem('the heartbeat of running tasks failed', error),
      )
    })
    every(Math.max(500, Math.floor(this.staleMs / 3)), () => void sweep())
    every(this.pollMs, () => {
      const safety = Date.now() - this.lastSafety >= SAFETY_MS
      if (this.bus.shared && !safety) return
      this.lastSafety = Date.now()
      this.pumpShared(shared)
      this.checkAwaited()
    })
  }

  /** Shared queue without events: the execute() calls waiting here on tasks run elsewhere read their rows. */
  private checkAwaited(): void {
    for (const taskId of this.waiters.keys()) {
      if (this.running.has(taskId)) continue
      whenDone(
        andThen(this.store.get(taskId), (row) => {
          if (!row || ENDED.includes(row.status)) this.release(taskId)
        }),
        (error) => this.problem('reading an awaited task failed', error),
      )
    }
  }

  private async run({ id, caller, spec }: Queued, controller: AbortController): Promise<void> {
    const started = Date.now()
    const active = new Set<string>()
    const shown = () => (active.size ? [...active].join(', ') : null)
    let done: { progress: number; results: AgentResult[] } = { progress: 0, results: [] }
    // A progress write that fails (PostgreSQL lost) is logged; the task's end is written as usual.
    const progressLost = (error: unknown) => this.log(`agents: progress of task ${id} not stored: ${(error as Error)?.message ?? String(error)}`)
    try {
      const generator = await this.deps.generator()
      // Assistants run with the caller's rights as they are now (a share removed since the submit counts).
      const extraAgents = new Map<string, AgentDefinition>()
      for (const name of spec.agents) {
        if (this.assistants && name.startsWith(ASSISTANT_AGENT_PREFIX) && !extraAgents.has(name)) extraAgents.set(name, await this.assistants.agent(caller.userId, name.slice(ASSISTANT_AGENT_PREFIX.length)))
      }
      const outcome = await runTask(spec, {
        extraAgents,
        caller,
        generator,
        rag: this.deps.rag,
        tools: this.tools,
        signal: controller.signal,
        onAgentStart: (agent) => {
          active.add(agent)
          whenDone(this.store.current(id, shown()), progressLost)
          this.announce(id, caller.userId, { status: 'running', ...done, currentAgent: shown() })
        },
        onAgentDone: (result, progress, all) => {
          active.delete(result.agent)
          whenDone(this.store.progress(id, progress, shown(), all), progressLost)
          done = { progress, results: all }
          this.announce(id, caller.userId, { status: 'running', ...done, currentAgent: shown() })
        },
      })
      if (controller.signal.aborted) return
      const totalExecutionTime = Date.now() - started
      const completed = this.store.complete(id, { ...outcome, totalExecutionTime })
      if (completed instanceof Promise) await completed
      this.averageMs = this.averageMs * 0.8 + totalExecutionTime * 0.2
      this.announce(id, caller.userId, { status: 'completed', progress: 100, currentAgent: null, results: outcome.results })
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
      this.announce(id, caller.userId, { status: 'failed', ...done, currentAgent: null, error: message, ...(cause instanceof AppError ? { code: cause.code } : {}) })
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
      return andThen(this.cancelTask(taskId, userId), (ended) => {
        if (ended) return { success: true, taskId, status: 'cancelled' as const }
        return andThen(this.store.get(taskId), (now) => {
          throw new AppError('CONFLICT', `Task ${taskId} has already ended (${now?.status ?? row.status})`)
        })
      })
    })
  }

  private cancelTask(taskId: string, userId?: string): MaybePromise<boolean> {
    return andThen(this.store.end(taskId, 'cancelled', 'Cancelled by the user'), (ended) => {
      const at = this.queue.findIndex((entry) => entry.id === taskId)
      if (at >= 0) this.queue.splice(at, 1)
      this.running.get(taskId)?.abort(new AppError('CONFLICT', 'The task was cancelled'))
      if (ended && at >= 0) this.settle(taskId)
      if (ended && userId) {
        // The replica running it (maybe another) stops it; followers hear of the end.
        if (this.shared) this.bus.publish(AGENTS_TOPIC, { kind: 'cancel', taskId })
        this.announce(taskId, userId, { status: 'cancelled', progress: 0, currentAgent: null, results: [], error: 'Cancelled by the user' })
      }
      return ended
    })
  }

  /**
   * Follows the caller's task to its end (a WebSocket client): `onProgress` is called with each
   * new state while it is queued or running, wherever it runs; the promise answers with the task
   * as GET /agents/task/{id} shows it once it has ended (404 for unknown ids and others' tasks).
   * An aborted `signal` stops following and answers null.
   */
  follow(userId: string, taskId: string, onProgress: (progress: TaskProgress) => void, signal: AbortSignal): Promise<ReturnType<typeof describe> | null> {
    return new Promise((resolve, reject) => {
      let finished = false
      let last = ''
      let shownProgress = -1
      let ticks = 0
      const listeners = this.followers.get(taskId) ?? new Set()
      this.followers.set(taskId, listeners)
      const finish = (settle: () => void) => {
        if (finished) return
        finished = true
        listeners.delete(listener)
        if (!listeners.size && this.followers.get(taskId) === listeners) this.followers.delete(taskId)
        clearInterval(timer)
        signal.removeEventListener('abort', onAbort)
        settle()
      }
      const emit = (state: TaskProgress, fromRow: boolean) => {
        // A row read while events arrive may be older than the last event shown.
        if (fromRow && state.status === 'running' && state.progress < shownProgress) return
        const key = JSON.stringify(state)
        if (key === last) return
        last = key
        shownProgress = Math.max(shownProgress, state.progress)
        onProgress(state)
      }
      const check = () =>
        whenDone(
          andThen(this.store.find(userId, taskId), (row) => {
            if (finished) return
            if (!row) return finish(() => reject(notFound(`Task ${taskId}`)))
            if (ENDED.includes(row.status)) return finish(() => resolve(describe(row)))
            emit({ taskId, status: row.status, progress: row.progress, currentAgent: row.current_agent, results: JSON.parse(row.results) as AgentResult[] }, true)
          }),
          (error) => finish(() => reject(error)),
        )
      const listener = (event: Record<string, unknown>) => {
        if (finished || event.userId !== userId) return
        if (ENDED.includes(event.status as TaskStatus)) return check()
        emit({ taskId, status: event.status as TaskStatus, progress: Number(event.progress) || 0, currentAgent: (event.currentAgent as string | null) ?? null, results: (event.results as AgentResult[]) ?? [] }, false)
      }
      const onAbort = () => finish(() => resolve(null))
      listeners.add(listener)
      signal.addEventListener('abort', onAbort, { once: true })
      // Events may be missed (Redis lost, or never there): the row is read again now and then.
      const timer = setInterval(() => {
        ticks++
        if ((this.store.asynchronous && !this.bus.shared) || ticks % 5 === 0) check()
      }, this.pollMs)
      ;(timer as { unref?: () => void }).unref?.()
      if (signal.aborted) return onAbort()
      check()
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

  /** Whether the queue is the database's, shared by every replica (PostgreSQL). */
  get sharesQueue(): boolean {
    return this.shared !== null
  }

  /**
   * Shared queue: a replica that stops takes no more tasks and hands its running ones back to the
   * queue, where another replica takes them (from their start). Nothing to do on SQLite.
   */
  async handBack(): Promise<void> {
    const shared = this.shared
    if (!shared) return
    this.closed = true
    const running = [...this.running]
    for (const [, controller] of running) controller.abort(new AppError('CONFLICT', 'The replica running the task stopped'))
    await Promise.all(
      running.map(([id]) =>
        shared.release(id, this.instanceId).then(
          () => this.bus.publish(AGENTS_TOPIC, { kind: 'queued', taskId: id }),
          (error) => this.log(`agents: task ${id} could not be handed back to the queue: ${(error as Error)?.message ?? String(error)}`),
        ),
      ),
    )
  }

  /** Stops the prune timer and cancels what is running (the tasks end as cancelled; on a shared queue they go back to the queue). */
  close(): void {
    clearInterval(this.timer)
    this.closed = true
    this.stopListening()
    for (const timer of this.sharedTimers) clearInterval(timer)
    if (this.shared) {
      void this.handBack()
      return
    }
    const lost = (error: unknown) => this.log(`agents: cancelling at close failed: ${(error as Error)?.message ?? String(error)}`)
    for (const entry of [...this.queue]) whenDone(this.cancelTask(entry.id), lost)
    for (const id of [...this.running.keys()]) whenDone(this.cancelTask(id), lost)
  }
}

/** A stored task as the queue runs it: its spec and its caller (the roles kept when it was queued). */
function queuedOf(row: ClaimedTask): Queued {
  const request = JSON.parse(row.request) as { agents: string[]; parallel: boolean; maxIterations: number; collections: string[] | null }
  let roles: string[] = []
  try {
    roles = JSON.parse(row.caller_roles)
  } catch {}
  return { id: row.id, caller: { userId: row.user_id, roles }, spec: { task: row.task, ...request } }
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
