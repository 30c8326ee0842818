import { accounts } from './001_accounts'
import { conversations } from './002_conversations'
import { accountAdmin } from './005_account_admin'
import { agentTasks } from './006_agent_tasks'
import { analytics } from './007_analytics'
import { apiKeys } from './009_api_keys'
import { voice } from './010_voice'
import { analyticsSpans } from './012_analytics_spans'
import { analyticsStrings } from './013_analytics_strings'
import { serverSecrets } from './016_server_secrets'
import { userForeignKeys } from './017_user_foreign_keys'
import { agentQueue } from './030_agent_queue'

/**
 * A PostgreSQL migration: numbered like the SQLite migration of the same tables
 * (src/db/migrations/NNN_*.ts), so that one number means one schema step on both backends.
 * Only the stores that have a PostgreSQL adapter have their tables here; a store still on SQLite
 * gets its PostgreSQL migration with its adapter.
 */
export interface PostgresMigration {
  version: number
  name: string
  /** One or more statements, run in the one migration transaction. */
  sql: string
}

/** Every PostgreSQL migration. A store moving to PostgreSQL adds its file and one line here. */
export const PG_MIGRATIONS: PostgresMigration[] = [accounts, conversations, accountAdmin, agentTasks, analytics, apiKeys, voice, analyticsSpans, analyticsStrings, serverSecrets, userForeignKeys, agentQueue]
