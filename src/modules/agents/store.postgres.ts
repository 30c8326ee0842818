import type { Postgres } from '../../db/postgres'
import type { TaskSpec } from './orchestrate'
import { type ClaimedTask, now, ORPHANED, requestOf, type SharedTaskQueue, STALE, type TaskOutcome, type TaskRow, type TaskStatus, type TaskStore } from './store'
import type { AgentResult } from './types'

const COLUMNS =
  'id, user_id, status, task, request, progress, current_agent, results, final_synthesis, confidence, iterations, total_execution_time, error, created_at, started_at, ended_at'

/** Agent tasks in PostgreSQL (UAGENT_DATABASE_URL), and the queue every replica shares. */
export class PostgresTaskStore implements TaskStore, SharedTaskQueue {
  readonly asynchronous = true

  constructor(private readonly sql: Postgres) {}

  async create(id: string, userId: string, spec: TaskSpec, roles: string[] = []): Promise<void> {
    await this.sql`
      INSERT INTO agent_tasks (id, user_id, status, task, request, created_at, caller_roles)
      VALUES (${id}, ${userId}, 'queued', ${spec.task}, ${requestOf(spec)}, ${now()}, ${JSON.stringify(roles)})`
  }

  async claim(owner: string): Promise<ClaimedTask | null> {
    const rows: ClaimedTask[] = await this.sql.unsafe(
      `UPDATE agent_tasks SET status = 'running', owner = $1, heartbeat_at = now(), started_at = $2
       WHERE id = (SELECT id FROM agent_tasks WHERE status = 'queued' ORDER BY seq FOR UPDATE SKIP LOCKED LIMIT 1) AND status = 'queued'
       RETURNING ${COLUMNS}, caller_roles`,
      [owner, now()],
    )
    return rows[0] ?? null
  }

  async heartbeat(owner: string, ids: string[]): Promise<string[]> {
    if (!ids.length) return []
    const rows: { id: string }[] = await this.sql`
      UPDATE agent_tasks SET heartbeat_at = now() WHERE id IN ${this.sql(ids)} AND owner = ${owner} AND status = 'running' RETURNING id`
    return rows.map((row) => row.id)
  }

  async failStale(staleMs: number, own?: { owner: string; ms: number }): Promise<{ id: string; user_id: string }[]> {
    const rows: { id: string; user_id: string }[] = await this.sql`
      UPDATE agent_tasks SET status = 'failed', current_agent = NULL, ended_at = ${now()}, error = ${STALE}
      WHERE status = 'running' AND (heartbeat_at IS NULL OR heartbeat_at < now() - make_interval(secs => ${staleMs / 1000})
        OR (owner = ${own?.owner ?? null} AND heartbeat_at < now() - make_interval(secs => ${(own?.ms ?? staleMs) / 1000})))
      RETURNING id, user_id`
    return [...rows]
  }

  async release(id: string, owner: string): Promise<void> {
    await this.sql`
      UPDATE agent_tasks SET status = 'queued', owner = NULL, heartbeat_at = NULL, started_at = NULL, progress = 0, current_agent = NULL, results = '[]'
      WHERE id = ${id} AND owner = ${owner} AND status = 'running'`
  }

  async queuedCount(): Promise<number> {
    const [row]: { n: string }[] = await this.sql`SELECT count(*) AS n FROM agent_tasks WHERE status = 'queued'`
    return Number(row!.n)
  }

  async get(id: string): Promise<TaskRow | null> {
    const rows: TaskRow[] = await this.sql.unsafe(`SELECT ${COLUMNS} FROM agent_tasks WHERE id = $1`, [id])
    return rows[0] ?? null
  }

  async find(userId: string, id: string): Promise<TaskRow | null> {
    const rows: TaskRow[] = await this.sql.unsafe(`SELECT ${COLUMNS} FROM agent_tasks WHERE id = $1 AND user_id = $2`, [id, userId])
    return rows[0] ?? null
  }

  async list(userId: string, limit: number, offset: number, status?: TaskStatus): Promise<{ rows: TaskRow[]; total: number }> {
    const filter = status ? ' AND status = $2' : ''
    const args: (string | number)[] = status ? [userId, status] : [userId]
    const rows: TaskRow[] = await this.sql.unsafe(
      `SELECT ${COLUMNS} FROM agent_tasks WHERE user_id = $1${filter} ORDER BY created_at DESC, seq DESC LIMIT $${args.length + 1} OFFSET $${args.length + 2}`,
      [...args, limit, offset],
    )
    const [counted]: { n: string }[] = await this.sql.unsafe(`SELECT count(*) AS n FROM agent_tasks WHERE user_id = $1${filter}`, args)
    return { rows: [...rows], total: Number(counted!.n) }
  }

  async start(id: string): Promise<boolean> {
    return (await this.sql`UPDATE agent_tasks SET status = 'running', started_at = ${now()} WHERE id = ${id} AND status = 'queued'`).count > 0
  }

  async progress(id: string, progress: number, currentAgent: string | null, results: AgentResult[]): Promise<void> {
    await this.sql`UPDATE agent_tasks SET progress = ${progress}, current_agent = ${currentAgent}, results = ${JSON.stringify(results)} WHERE id = ${id} AND status = 'running'`
  }

  async current(id: string, currentAgent: string | null): Promise<void> {
    await this.sql`UPDATE agent_tasks SET current_agent = ${currentAgent} WHERE id = ${id} AND status = 'running'`
  }

  async complete(id: string, outcome: TaskOutcome): Promise<boolean> {
    const result = await this.sql`
      UPDATE agent_tasks SET status = 'completed', progress = 100, current_agent = NULL, results = ${JSON.stringify(outcome.results)},
        final_synthesis = ${outcome.finalSynthesis}, confidence = ${outcome.confidence}, iterations = ${outcome.iterations},
        total_execution_time = ${Math.round(outcome.totalExecutionTime)}, ended_at = ${now()}
      WHERE id = ${id} AND status = 'running'`
    return result.count > 0
  }

  async end(id: string, status: 'failed' | 'cancelled', error: string | null): Promise<boolean> {
    const result = await this.sql`
      UPDATE agent_tasks SET status = ${status}, error = ${error}, current_agent = NULL, ended_at = ${now()} WHERE id = ${id} AND status IN ('queued', 'running')`
    return result.count > 0
  }

  async failOrphans(): Promise<number> {
    const result = await this.sql`
      UPDATE agent_tasks SET status = 'failed', current_agent = NULL, ended_at = ${now()}, error = ${ORPHANED} WHERE status = 'running'`
    return result.count
  }

  async waiting(): Promise<ClaimedTask[]> {
    const rows: ClaimedTask[] = await this.sql.unsafe(`SELECT ${COLUMNS}, caller_roles FROM agent_tasks WHERE status = 'queued' ORDER BY seq`)
    return [...rows]
  }

  async prune(before: string): Promise<number> {
    return (await this.sql`DELETE FROM agent_tasks WHERE status IN ('completed', 'failed', 'cancelled') AND ended_at < ${before}`).count
  }

  async counts(): Promise<Record<TaskStatus, number>> {
    const counts: Record<TaskStatus, number> = { queued: 0, running: 0, completed: 0, failed: 0, cancelled: 0 }
    const rows: { status: TaskStatus; n: string }[] = await this.sql`SELECT status, count(*) AS n FROM agent_tasks GROUP BY status`
    for (const row of rows) counts[row.status] = Number(row.n)
    return counts
  }
}
