import type { PostgresMigration } from '.'

// `seq` orders tasks made in the same millisecond as SQLite's rowid does. user_id got its foreign
// key to users (ON DELETE CASCADE) in migration 017.
export const agentTasks: PostgresMigration = {
  version: 6,
  name: 'agent_tasks',
  sql: `
    CREATE TABLE agent_tasks (
      seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
      id TEXT COLLATE "C" PRIMARY KEY,
      user_id TEXT COLLATE "C" NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
      task TEXT NOT NULL,
      request TEXT NOT NULL,
      progress INTEGER NOT NULL DEFAULT 0,
      current_agent TEXT,
      results TEXT NOT NULL DEFAULT '[]',
      final_synthesis TEXT,
      confidence DOUBLE PRECISION,
      iterations INTEGER NOT NULL DEFAULT 0,
      total_execution_time INTEGER,
      error TEXT,
      created_at TEXT COLLATE "C" NOT NULL,
      started_at TEXT,
      ended_at TEXT COLLATE "C"
    );
    CREATE INDEX agent_tasks_user_created ON agent_tasks(user_id, created_at DESC, id);
    CREATE INDEX agent_tasks_status_ended ON agent_tasks(status, ended_at);
  `,
}
