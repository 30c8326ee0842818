import type { Database } from 'bun:sqlite'
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

const now = () => new Date().toISOString()

/** The agent_tasks table. Updates of a run only touch a task still running, so a cancel or a restart's verdict stands. */
export class TaskStore {
  constructor(private readonly db: Database) {}

  create(id: string, userId: string, spec: TaskSpec): void {
    this.db.run('INSERT INTO agent_tasks (id, user_id, status, task, request, created_at) VALUES (?, ?, ?, ?, ?, ?)', [
      id,
      userId,
      'queued',
      spec.task,
      JSON.stringify({ agents: spec.agents, parallel: spec.parallel, maxIterations: spec.maxIterations, collections: spec.collections }),
      now(),
    ])
  }

  get(id: string): TaskRow | null {
    return this.db.query<TaskRow, [string]>('SELECT * FROM agent_tasks WHERE id = ?').get(id)
  }

  /** The user's task; null for unknown ids and other users' tasks alike. */
  find(userId: string, id: string): TaskRow | null {
    return this.db.query<TaskRow, [string, string]>('SELECT * FROM agent_tasks WHERE id = ? AND user_id = ?').get(id, userId)
  }

  list(userId: string, limit: number, offset: number, status?: TaskStatus): { rows: TaskRow[]; total: number } {
    const filter = status ? ' AND status = ?' : ''
    const args: (string | number)[] = status ? [userId, status] : [userId]
    const rows = this.db
      .query<TaskRow, (string | number)[]>(`SELECT * FROM agent_tasks WHERE user_id = ?${filter} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?`)
      .all(...args, limit, offset)
    const total = this.db.query<{ n: number }, (string | number)[]>(`SELECT count(*) AS n FROM agent_tasks WHERE user_id = ?${filter}`).get(...args)!.n
    return { rows, total }
  }

  start(id: string): boolean {
    return this.db.run("UPDATE agent_tasks SET status = 'running', started_at = ? WHERE id = ? AND status = 'queued'", [now(), id]).changes > 0
  }

  progress(id: string, progress: number, currentAgent: string | null, results: AgentResult[]): void {
    this.db.run("UPDATE agent_tasks SET progress = ?, current_agent = ?, results = ? WHERE id = ? AND status = 'running'", [
      progress,
      currentAgent,
      JSON.stringify(results),
      id,
    ])
  }

  current(id: string, currentAgent: string | null): void {
    this.db.run("UPDATE agent_tasks SET current_agent = ? WHERE id = ? AND status = 'running'", [currentAgent, id])
  }

  complete(id: string, outcome: { results: AgentResult[]; finalSynthesis: string; confidence: number; iterations: number; totalExecutionTime: number }): boolean {
    return (
      this.db.run(
        `UPDATE agent_tasks SET status = 'completed', progress = 100, current_agent = NULL, results = ?, final_synthesis = ?, confidence = ?,
           iterations = ?, total_execution_time = ?, ended_at = ? WHERE id = ? AND status = 'running'`,
        [JSON.stringify(outcome.results), outcome.finalSynthesis, outcome.confidence, outcome.iterations, outcome.totalExecutionTime, now(), id],
      ).changes > 0
    )
  }

  /** Ends a queued or running task as failed or cancelled; false when it had already ended. */
  end(id: string, status: 'failed' | 'cancelled', error: string | null): boolean {
    return (
      this.db.run(
        "UPDATE agent_tasks SET status = ?, error = ?, current_agent = NULL, ended_at = ? WHERE id = ? AND status IN ('queued', 'running')",
        [status, error, now(), id],
      ).changes > 0
    )
  }

  /** Tasks a previous process left queued or running can never finish: they are failed. */
  failOrphans(): number {
    return this.db.run(
      "UPDATE agent_tasks SET status = 'failed', current_agent = NULL, ended_at = ?, error = 'The server stopped before this task finished' WHERE status IN ('queued', 'running')",
      [now()],
    ).changes
  }

  prune(before: string): number {
    return this.db.run("DELETE FROM agent_tasks WHERE status IN ('completed', 'failed', 'cancelled') AND ended_at < ?", [before]).changes
  }
}
