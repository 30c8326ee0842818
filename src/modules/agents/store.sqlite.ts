import type { Database } from 'bun:sqlite'
import type { TaskSpec } from './orchestrate'
import { type ClaimedTask, now, ORPHANED, requestOf, type TaskOutcome, type TaskRow, type TaskStatus, type TaskStore } from './store'
import type { AgentResult } from './types'

/** The agent_tasks table in the server's SQLite database: every call answers at once. */
export class SqliteTaskStore implements TaskStore {
  readonly asynchronous = false

  constructor(private readonly db: Database) {}

  create(id: string, userId: string, spec: TaskSpec, roles: string[] = []): void {
    this.db.run('INSERT INTO agent_tasks (id, user_id, status, task, request, created_at, caller_roles) VALUES (?, ?, ?, ?, ?, ?, ?)', [
      id,
      userId,
      'queued',
      spec.task,
      requestOf(spec),
      now(),
      JSON.stringify(roles),
    ])
  }

  get(id: string): TaskRow | null {
    return this.db.query<TaskRow, [string]>('SELECT * FROM agent_tasks WHERE id = ?').get(id)
  }

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
    this.db.run("UPDATE agent_tasks SET progress = ?, current_agent = ?, results = ? WHERE id = ? AND status = 'running'", [progress, currentAgent, JSON.stringify(results), id])
  }

  current(id: string, currentAgent: string | null): void {
    this.db.run("UPDATE agent_tasks SET current_agent = ? WHERE id = ? AND status = 'running'", [currentAgent, id])
  }

  complete(id: string, outcome: TaskOutcome): boolean {
    return (
      this.db.run(
        `UPDATE agent_tasks SET status = 'completed', progress = 100, current_agent = NULL, results = ?, final_synthesis = ?, confidence = ?,
           iterations = ?, total_execution_time = ?, ended_at = ? WHERE id = ? AND status = 'running'`,
        [JSON.stringify(outcome.results), outcome.finalSynthesis, outcome.confidence, outcome.iterations, outcome.totalExecutionTime, now(), id],
      ).changes > 0
    )
  }

  end(id: string, status: 'failed' | 'cancelled', error: string | null): boolean {
    return (
      this.db.run("UPDATE agent_tasks SET status = ?, error = ?, current_agent = NULL, ended_at = ? WHERE id = ? AND status IN ('queued', 'running')", [
        status,
        error,
        now(),
        id,
      ]).changes > 0
    )
  }

  failOrphans(): number {
    return this.db.run("UPDATE agent_tasks SET status = 'failed', current_agent = NULL, ended_at = ?, error = ? WHERE status = 'running'", [now(), ORPHANED]).changes
  }

  waiting(): ClaimedTask[] {
    return this.db.query<ClaimedTask, []>("SELECT * FROM agent_tasks WHERE status = 'queued' ORDER BY created_at, rowid").all()
  }

  prune(before: string): number {
    return this.db.run("DELETE FROM agent_tasks WHERE status IN ('completed', 'failed', 'cancelled') AND ended_at < ?", [before]).changes
  }

  counts(): Record<TaskStatus, number> {
    const counts: Record<TaskStatus, number> = { queued: 0, running: 0, completed: 0, failed: 0, cancelled: 0 }
    for (const row of this.db.query<{ status: TaskStatus; n: number }, []>('SELECT status, count(*) AS n FROM agent_tasks GROUP BY status').all()) counts[row.status] = row.n
    return counts
  }
}
