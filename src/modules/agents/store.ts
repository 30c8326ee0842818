import type { MaybePromise } from '../../db/maybe-promise'
import type { TaskSpec } from './orchestrate'
import type { AgentResult } from './types'

export type TaskStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled'

export interface TaskRow {
  id: string
  user_id: string
  status: TaskStatus
  task: string
  request: string
  progress: number
  current_agent: string | null
  results: string
  final_synthesis: string | null
  confidence: number | null
  iterations: number
  total_execution_time: number | null
  error: string | null
  created_at: string
  started_at: string | null
  ended_at: string | null
}

export interface TaskOutcome {
  results: AgentResult[]
  finalSynthesis: string
  confidence: number
  iterations: number
  totalExecutionTime: number
}

/**
 * The stored agent tasks, whatever the backend. Updates of a run only touch a task still running,
 * so a cancel or a restart's verdict stands. The SQLite adapter answers at once
 * (`asynchronous: false`: the queue's bookkeeping stays synchronous there, as it always was); the
 * PostgreSQL adapter answers with promises.
 */
export interface TaskStore {
  readonly asynchronous: boolean
  /** A new queued task; `roles` are the caller's (kept by a shared queue, for the replica that runs it). */
  create(id: string, userId: string, spec: TaskSpec, roles?: string[]): MaybePromise<void>
  get(id: string): MaybePromise<TaskRow | null>
  /** The user's task; null for unknown ids and other users' tasks alike. */
  find(userId: string, id: string): MaybePromise<TaskRow | null>
  /** Newest first. */
  list(userId: string, limit: number, offset: number, status?: TaskStatus): MaybePromise<{ rows: TaskRow[]; total: number }>
  /** queued → running; false when it was no longer queued. */
  start(id: string): MaybePromise<boolean>
  progress(id: string, progress: number, currentAgent: string | null, results: AgentResult[]): MaybePromise<void>
  current(id: string, currentAgent: string | null): MaybePromise<void>
  complete(id: string, outcome: TaskOutcome): MaybePromise<boolean>
  /** Ends a queued or running task as failed or cancelled; false when it had already ended. */
  end(id: string, status: 'failed' | 'cancelled', error: string | null): MaybePromise<boolean>
  /**
   * Tasks a previous process left running can never finish: they are failed (ORPHANED). Queued
   * ones stay queued, to run after the restart.
   */
  failOrphans(): MaybePromise<number>
  /** The queued tasks, oldest first, with their callers' roles (what a restarted server runs). */
  waiting(): MaybePromise<ClaimedTask[]>
  /** Deletes finished tasks that ended before `before`. */
  prune(before: string): MaybePromise<number>
  /** Tasks by status. */
  counts(): MaybePromise<Record<TaskStatus, number>>
}

/** A queued or claimed task, with what a server needs to run it. */
export interface ClaimedTask extends TaskRow {
  /** The caller's roles, JSON. */
  caller_roles: string
}

/**
 * A task store that several replicas share as one queue (PostgreSQL): a task queued by any
 * replica is claimed by one, whose heartbeat says it is still alive; any replica fails the
 * running tasks whose heartbeat stopped. Times are the database's clock.
 */
export interface SharedTaskQueue {
  /** The oldest queued task, now running under `owner` (one replica wins it); null when none waits. */
  claim(owner: string): Promise<ClaimedTask | null>
  /** Refreshes the heartbeat of `owner`'s running tasks among `ids`; returns the ids still running (the others ended elsewhere). */
  heartbeat(owner: string, ids: string[]): Promise<string[]>
  /**
   * Fails the running tasks whose heartbeat is older than `staleMs` (and, given `own`, the running
   * tasks of `own.owner` whose heartbeat is older than `own.ms`: a replica starting again is not
   * running them; the short limit spares a live replica misconfigured with the same id); returns them.
   */
  failStale(staleMs: number, own?: { owner: string; ms: number }): Promise<{ id: string; user_id: string }[]>
  /** Hands `owner`'s running task back to the queue (a replica that stops), as if never started. */
  release(id: string, owner: string): Promise<void>
  /** Tasks waiting in the queue, on every replica. */
  queuedCount(): Promise<number>
}

/** The store's shared queue, when it has one. */
export function sharedQueueOf(store: TaskStore): (TaskStore & SharedTaskQueue) | null {
  return 'claim' in store && typeof (store as Partial<SharedTaskQueue>).claim === 'function' ? (store as TaskStore & SharedTaskQueue) : null
}

export const now = () => new Date().toISOString()

export function requestOf(spec: TaskSpec): string {
  return JSON.stringify({ agents: spec.agents, parallel: spec.parallel, maxIterations: spec.maxIterations, collections: spec.collections })
}

export const ORPHANED = 'The server stopped before this task finished'

export const STALE = 'The replica running this task stopped'
