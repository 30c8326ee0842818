import type { Migration } from '.'

/**
 * The caller's roles on each agent task, as PostgreSQL keeps them (pg/030): a task still queued
 * when the server stopped runs after the restart with the roles of the caller who queued it.
 */
export const agentTaskRoles: Migration = {
  version: 45,
  name: 'agent_task_roles',
  sql: `
    ALTER TABLE agent_tasks ADD COLUMN caller_roles TEXT NOT NULL DEFAULT '[]';
    CREATE INDEX agent_tasks_queued ON agent_tasks(created_at) WHERE status = 'queued';
  `,
}
