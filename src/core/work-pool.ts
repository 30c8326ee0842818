import { availableParallelism } from 'node:os'
import { AppError, ERROR_STATUS, type ErrorCode } from './errors'

/**
 * A kind of work the pool runs: a name (for metrics and logs) and the module a worker imports to
 * run it. The module exports `run(payload, transfer, task)`; what it returns is the task's result,
 * and the buffers it pushes onto `transfer` are moved back, not copied; `task.progress(event)`
 * sends an event to the caller's `onProgress` while the task runs. It is imported once per
 * worker, so what it loads at its top level (a model, a compiled WebAssembly module) is loaded
 * once per worker and kept.
 */
export interface WorkKind<Payload, Result, Progress = never> {
  readonly name: string
  readonly url: string
  /** Types only: never set. */
  readonly __types?: (payload: Payload, progress: Progress) => Result
}

/** What a running task can do besides returning: report progress (structured-cloned to the caller), see its cancel. */
export interface WorkTask<Progress = never> {
  progress(event: Progress): void
  /** Aborts when the caller's signal does, for a task run with `cancelGraceMs` (else its thread is ended at once). */
  signal: AbortSignal
}

/** What a work module exports (see WorkKind). */
export type WorkRunner<Payload, Result, Progress = never> = (payload: Payload, transfer: Transferable[], task: WorkTask<Progress>) => Result | Promise<Result>

/** Names a kind of work: `workKind<Payload, Result>('tts', new URL('./tts.work.ts', import.meta.url).href)`. */
export function workKind<Payload, Result, Progress = never>(name: string, url: string): WorkKind<Payload, Result, Progress> {
  return { name, url }
}

export interface RunOptions<Progress = never> {
  /** The request's signal: when it aborts, the task leaves the queue, or its worker is stopped. */
  signal?: AbortSignal
  /** Buffers of the payload moved to the worker instead of copied. */
  transfer?: Transferable[]
  /** Called when a worker takes the task (after its wait in the queue): a time limit starts here. */
  onStart?: () => void
  /** Called with each event the task reports (`task.progress`), on this thread, in order. */
  onProgress?: (event: Progress) => void
  /**
   * Wait for a worker however long the queue is, instead of 503 BUSY: for background work whose
   * number is bounded elsewhere (ingestion jobs, a few per process), which has no client to retry.
   */
  waitWhenBusy?: boolean
  /**
   * On abort, the task's own `signal` aborts in its worker and it has this long to stop and answer
   * (removing what it wrote, keeping its worker and the models loaded there) before its thread is
   * ended. 0 (the default): the thread is ended at once.
   */
  cancelGraceMs?: number
}

/** The error of a task whose worker died under it (500): the pool has replaced the worker. */
export class WorkerStopped extends AppError {
  constructor(message: string) {
    super('INTERNAL_ERROR', message)
  }
}

export interface WorkPoolOptions {
  /** Workers at most (UAGENT_WORKERS). */
  size: number
  /** Tasks waiting for a worker at most (UAGENT_WORK_QUEUE); one more is 503 BUSY. */
  queueLimit: number
  log?: (line: string) => void
}

/** The pool's state, for /health. */
export interface WorkPoolState {
  size: number
  started: number
  busy: number
  queued: number
  queueLimit: number
  completed: number
  failed: number
  crashed: number
  cancelled: number
  /** JavaScript heap of the started workers together (each reports its own after every task). */
  heapBytes: number
}

/** A finished task, for metrics. */
export interface WorkDone {
  kind: string
  seconds: number
  outcome: 'ok' | 'failed' | 'crashed' | 'cancelled'
}

/** Workers when UAGENT_WORKERS is unset: one less than the cores (the request thread keeps one), at least 1. */
export function defaultWorkers(cores = availableParallelism()): number {
  return Math.max(1, cores - 1)
}
/** Waiting tasks when UAGENT_WORK_QUEUE is unset. */
export const DEFAULT_WORK_QUEUE = 64

interface Task {
  /** Names its messages, so a late progress event of an earlier task is not taken for this one's. */
  id: number
  kind: WorkKind<unknown, unknown>
  payload: unknown
  transfer: Transferable[]
  signal?: AbortSignal
  onAbort?: () => void
  onProgress?: (event: unknown) => void
  onStart?: () => void
  cancelGraceMs: number
  /** Set once its caller aborted and the worker was asked to stop it (within cancelGraceMs). */
  cancelling?: ReturnType<typeof setTimeout>
  resolve: (value: unknown) => void
  reject: (error: Error) => void
  queuedAt: number
  startedAt: number
}

interface Slot {
  worker: Worker
  task: Task | null
  id: number
  heap: number
  /** Set once the pool let it go (terminated on purpose): its close is not a crash. */
  retired: boolean
  /** The last uncaught error the worker reported before it closed. */
  lastError?: string
  /** Resolves once the thread has ended. */
  ended: Promise<void>
}

interface Reply {
  id: number
  /** Set on a progress event of the running task (neither ok nor an answer). */
  progress?: unknown
  ok: boolean
  value?: unknown
  error?: { name: string; message: string; code?: string }
  heap: number
}

const WORKER_URL = new URL('./work-pool.worker.ts', import.meta.url).href

/** Why a task was cancelled: its caller's signal aborted (an Error: the signal's reason, else an AbortError). */
export function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new DOMException('The request went away', 'AbortError')
}

/**
 * One pool of worker threads for the CPU-heavy work (speech, text extraction, embedding), so the
 * request thread only ever answers requests. Workers start on demand, up to `size`, and stay
 * (their models loaded); tasks beyond them wait in a queue of at most `queueLimit`, and one more
 * is refused with 503 BUSY and a Retry-After estimated from recent task times. A worker that dies
 * fails its own task only (500, logged); the next task starts a new one. A worker holds the
 * process open only while it works.
 */
export class WorkPool {
  private readonly slots: Slot[] = []
  private readonly queue: Task[] = []
  private readonly listeners: ((done: WorkDone) => void)[] = []
  private nextId = 0
  private nextTaskId = 0
  private closed = false
  private counts = { completed: 0, failed: 0, crashed: 0, cancelled: 0 }
  /** Mean task time (s), an exponential average, for Retry-After. */
  private meanSeconds = 0.05
  readonly size: number
  readonly queueLimit: number
  private readonly log: (line: string) => void

  constructor(options: WorkPoolOptions) {
    this.size = Math.max(1, Math.floor(options.size))
    this.queueLimit = Math.max(0, Math.floor(options.queueLimit))
    this.log = options.log ?? ((line) => console.error(line))
  }

  /**
   * Runs one task of `kind` on a worker; resolves with what the kind's module returned. Rejects
   * with 503 BUSY when the queue is full, with the task's own error when it threw (an AppError
   * keeps its code), with 500 INTERNAL_ERROR when its worker died, and with an AbortError when
   * `signal` aborted first.
   */
  run<Payload, Result, Progress = never>(kind: WorkKind<Payload, Result, Progress>, payload: Payload, options: RunOptions<Progress> = {}): Promise<Result> {
    if (this.closed) return Promise.reject(new AppError('INTERNAL_ERROR', 'The worker pool is closed (the server is stopping)'))
    const { signal } = options
    if (signal?.aborted) return Promise.reject(abortReason(signal))
    const idle = this.idleSlot()
    if (!idle && this.queue.length >= this.queueLimit && !options.waitWhenBusy) {
      const retryAfter = this.retryAfter()
      return Promise.reject(
        new AppError('BUSY', `The server is busy: ${this.queue.length} tasks are waiting for its ${this.size} worker(s); retry in ${retryAfter} s`, {
          headers: { 'retry-after': String(retryAfter) },
        }),
      )
    }
    return new Promise<Result>((resolve, reject) => {
      const task: Task = {
        id: ++this.nextTaskId,
        kind: kind as WorkKind<unknown, unknown>,
        payload,
        transfer: options.transfer ?? [],
        signal,
        onProgress: options.onProgress as ((event: unknown) => void) | undefined,
        onStart: options.onStart,
        cancelGraceMs: Math.max(0, options.cancelGraceMs ?? 0),
        resolve: resolve as (value: unknown) => void,
        reject,
        queuedAt: performance.now(),
        startedAt: 0,
      }
      if (signal) {
        task.onAbort = () => this.cancel(task)
        signal.addEventListener('abort', task.onAbort, { once: true })
      }
      if (idle) this.start(idle, task)
      else this.queue.push(task)
    })
  }

  /** Called with every finished task (metrics). */
  onDone(listener: (done: WorkDone) => void): void {
    this.listeners.push(listener)
  }

  /** Tasks waiting for a worker. */
  get queueDepth(): number {
    return this.queue.length
  }

  state(): WorkPoolState {
    return {
      size: this.size,
      started: this.slots.length,
      busy: this.slots.filter((slot) => slot.task).length,
      queued: this.queue.length,
      queueLimit: this.queueLimit,
      ...this.counts,
      heapBytes: this.slots.reduce((sum, slot) => sum + slot.heap, 0),
    }
  }

  /** Stops every worker; running and waiting tasks are rejected. A closed pool takes no more work. */
  close(): void {
    this.closed = true
    const stopping = new AppError('INTERNAL_ERROR', 'The worker pool was closed (the server is stopping)')
    for (const task of this.queue.splice(0)) this.settle(task, 'cancelled', stopping)
    for (const slot of [...this.slots]) {
      const task = slot.task
      this.retire(slot)
      if (task) this.settle(task, 'cancelled', stopping)
    }
  }

  /** An idle started worker, or a new one while fewer than `size` run. */
  private idleSlot(): Slot | null {
    const idle = this.slots.find((slot) => !slot.task)
    if (idle) return idle
    if (this.slots.length >= this.size) return null
    return this.spawn()
  }

  private spawn(): Slot {
    const worker = new Worker(WORKER_URL)
    let ended!: () => void
    const slot: Slot = { worker, task: null, id: ++this.nextId, heap: 0, retired: false, ended: new Promise<void>((resolve) => (ended = resolve)) }
    worker.addEventListener('message', (event: MessageEvent<Reply>) => this.reply(slot, event.data))
    worker.addEventListener('error', (event) => {
      const error = (event as ErrorEvent).error as Error | undefined
      slot.lastError = error?.message ?? (event as ErrorEvent).message ?? 'uncaught error'
      // An uncaught error ends a Bun worker (its close follows); make sure of it.
      worker.terminate()
    })
    worker.addEventListener('close', (event) => {
      ended()
      this.closedWorker(slot, (event as CloseEvent).code)
    })
    worker.unref()
    this.slots.push(slot)
    return slot
  }

  private start(slot: Slot, task: Task): void {
    slot.task = task
    task.startedAt = performance.now()
    // Keeps the process alive while the worker works (an unreferenced worker's reply would leave
    // Bun's event loop spinning instead of sleeping: see WorkerCalls).
    slot.worker.ref()
    slot.worker.postMessage({ id: task.id, kind: task.kind.name, url: task.kind.url, payload: task.payload }, task.transfer)
    task.onStart?.()
  }

  private reply(slot: Slot, reply: Reply): void {
    const task = slot.task
    if ('progress' in reply) {
      if (task && !slot.retired && !task.cancelling && reply.id === task.id) {
        try {
          task.onProgress?.(reply.progress)
        } catch (error) {
          this.log(`A progress listener of a ${task.kind.name} task threw: ${(error as Error)?.message ?? String(error)}`)
        }
      }
      return
    }
    slot.heap = reply.heap
    if (!task || slot.retired) return
    slot.task = null
    slot.worker.unref()
    if (task.cancelling) {
      // It stopped in time: cancelled whatever it answered, and its worker goes on.
      clearTimeout(task.cancelling)
      this.settle(task, 'cancelled', abortReason(task.signal!))
    } else if (reply.ok) this.settle(task, 'ok', null, reply.value)
    else this.settle(task, 'failed', rebuild(reply.error))
    this.next(slot)
  }

  /** A worker ended: on purpose (retired), or it crashed, failing its task only. */
  private closedWorker(slot: Slot, code: number): void {
    const index = this.slots.indexOf(slot)
    if (index !== -1) this.slots.splice(index, 1)
    if (slot.retired) return
    slot.retired = true
    const task = slot.task
    slot.task = null
    const why = slot.lastError ? `uncaught error: ${slot.lastError}` : `exit code ${code}`
    this.log(`Worker ${slot.id} of the work pool stopped (${why})${task ? ` while running a ${task.kind.name} task, which fails` : ''}; the next task starts a new worker`)
    if (task?.cancelling) {
      clearTimeout(task.cancelling)
      this.settle(task, 'cancelled', abortReason(task.signal!))
    } else if (task) this.settle(task, 'crashed', new WorkerStopped(`The worker running this ${task.kind.name} task stopped (${why}); the task failed, the server has replaced the worker`))
    this.drain()
  }

  /** Stops a worker on purpose (cancelled task, closing pool). */
  private retire(slot: Slot): void {
    slot.retired = true
    slot.task = null
    const index = this.slots.indexOf(slot)
    if (index !== -1) this.slots.splice(index, 1)
    slot.worker.terminate()
  }

  private cancel(task: Task): void {
    const queued = this.queue.indexOf(task)
    if (queued !== -1) {
      this.queue.splice(queued, 1)
      this.settle(task, 'cancelled', abortReason(task.signal!))
      return
    }
    const slot = this.slots.find((s) => s.task === task)
    if (!slot || task.cancelling) return
    if (task.cancelGraceMs > 0) {
      slot.worker.postMessage({ cancel: task.id })
      task.cancelling = setTimeout(() => {
        if (slot.task === task && !slot.retired) this.stop(slot, task)
      }, task.cancelGraceMs)
      return
    }
    this.stop(slot, task)
  }

  /** Work running synchronously cannot be interrupted but by ending its thread. The task is
   * settled once the thread has ended, so that nothing it does (a file it writes) follows. */
  private stop(slot: Slot, task: Task): void {
    this.retire(slot)
    this.drain()
    slot.ended.then(() => this.settle(task, 'cancelled', abortReason(task.signal!)))
  }

  private next(slot: Slot): void {
    const task = this.queue.shift()
    if (task) this.start(slot, task)
  }

  /** Starts waiting tasks on idle or new workers. */
  private drain(): void {
    while (this.queue.length && !this.closed) {
      const slot = this.idleSlot()
      if (!slot) return
      this.start(slot, this.queue.shift()!)
    }
  }

  private settle(task: Task, outcome: WorkDone['outcome'], error: Error | null, value?: unknown): void {
    if (task.onAbort) task.signal?.removeEventListener('abort', task.onAbort)
    clearTimeout(task.cancelling)
    const seconds = task.startedAt ? (performance.now() - task.startedAt) / 1000 : 0
    if (outcome === 'ok') this.counts.completed++
    else if (outcome === 'failed') this.counts.failed++
    else if (outcome === 'crashed') this.counts.crashed++
    else this.counts.cancelled++
    if (outcome === 'ok' || outcome === 'failed') this.meanSeconds = this.meanSeconds * 0.9 + seconds * 0.1
    for (const listener of this.listeners) listener({ kind: task.kind.name, seconds, outcome })
    if (error) task.reject(error)
    else task.resolve(value)
  }

  /** Seconds until a place in the queue is likely free: the waiting work over the workers, at least 1. */
  private retryAfter(): number {
    const waiting = (this.queue.length + this.size) * this.meanSeconds
    return Math.min(60, Math.max(1, Math.ceil(waiting / this.size)))
  }
}

/** The error a task threw in its worker, as it was: an AppError keeps its code (a 400 stays a 400). */
function rebuild(error: Reply['error']): Error {
  if (error?.name === 'AppError' && error.code && error.code in ERROR_STATUS) return new AppError(error.code as ErrorCode, error.message)
  const rebuilt = new Error(error?.message ?? 'the task failed')
  rebuilt.name = error?.name ?? 'Error'
  return rebuilt
}

let shared: WorkPool | null = null

/**
 * The process's pool for code that runs without a server's (scripts, the built-in embedder made
 * outside createServices), sized from UAGENT_WORKERS / UAGENT_WORK_QUEUE or the defaults. It
 * starts no worker until it gets work.
 */
export function sharedWorkPool(): WorkPool {
  const number = (value: string | undefined, fallback: number) => (value && /^\d+$/.test(value) ? Number(value) : fallback)
  shared ??= new WorkPool({ size: number(process.env.UAGENT_WORKERS, defaultWorkers()) || defaultWorkers(), queueLimit: number(process.env.UAGENT_WORK_QUEUE, DEFAULT_WORK_QUEUE) })
  return shared
}
