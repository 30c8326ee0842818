import type { PostgresMigration } from '.'

// The agent queue shared by replicas: the replica running a task (`owner`, its instance id) and
// its last sign of life (`heartbeat_at`, the database's clock); the caller's roles, so that any
// replica can run a task queued on another. The partial indexes serve the claim and the sweep.
export const agentQueue: PostgresMigration = {
  version: 30,
  name: 'agent_queue',
  sql: `
    ALTER TABLE agent_tasks
      ADD COLUMN owner TEXT,
      ADD COLUMN heartbeat_at TIMESTAMPTZ,
      ADD COLUMN caller_roles TEXT NOT NULL DEFAULT '[]';
    CREATE INDEX agent_tasks_queued ON agent_tasks(seq) WHERE status = 'queued';
    CREATE INDEX agent_tasks_running ON agent_tasks(heartbeat_at) WHERE status = 'running';
  `,
}
