import type { Migration } from '.'

export const agentTasks: Migration = {
  version: 6,
  name: 'agent_tasks',
  sql: `
    CREATE TABLE agent_tasks (
      id TEXT PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
      task TEXT NOT NULL,
      request TEXT NOT NULL,
      progress INTEGER NOT NULL DEFAULT 0,
      current_agent TEXT,
      results TEXT NOT NULL DEFAULT '[]',
      final_synthesis TEXT,
      confidence REAL,
      iterations INTEGER NOT NULL DEFAULT 0,
      total_execution_time INTEGER,
      error TEXT,
      created_at TEXT NOT NULL,
      started_at TEXT,
      ended_at TEXT
    );
    CREATE INDEX agent_tasks_user_created ON agent_tasks(user_id, created_at DESC, id);
    CREATE INDEX agent_tasks_status_ended ON agent_tasks(status, ended_at);
  `,
}
