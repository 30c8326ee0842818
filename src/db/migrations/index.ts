import { accounts } from './001_accounts'
import { conversations } from './002_conversations'
import { rag } from './003_rag'
import { ragFtsPerCollection } from './004_rag_fts_per_collection'
import { accountAdmin } from './005_account_admin'
import { voice } from './010_voice'
import { agentTasks } from './006_agent_tasks'
import { plugins } from './011_plugins'
import { ragDocuments } from './008_rag_documents'
import { analytics } from './007_analytics'
import { apiKeys } from './009_api_keys'
import { analyticsSpans } from './012_analytics_spans'
import { analyticsStrings } from './013_analytics_strings'
import { analyticsMovedOut } from './014_analytics_moved_out'
import { mcpServers } from './015_mcp_servers'
import { agentTaskRoles } from './045_agent_task_roles'
import { groups } from './040_groups'
import { auditEvents } from './041_audit_events'
import { singleSignOn } from './044_single_sign_on'
import { ingestJobs } from './043_ingest_jobs'
import { collectionShares } from './042_collection_shares'
import { ragVectorIndex } from './050_rag_vector_index'
import { chatEveryDay } from './080_chat_every_day'
import { conversationShares } from './081_conversation_shares'
import { conversationWords } from './082_conversation_words'
import { conversationWordsPrefixes } from './083_conversation_words_prefixes'
import type { Database } from 'bun:sqlite'
import { assistants } from './070_assistants'

export interface Migration {
  version: number
  name: string
  /** One or more statements, run in one transaction. */
  sql: string
  /** Work done on the connection just before that transaction (outside it), e.g. moving data to another file. */
  before?: (db: Database, context: MigrationContext) => void
}

/** What a migration's `before` may use of the database layer (passed in: migrations import no module of it). */
export interface MigrationContext {
  /** The request records' database file beside a server database file. */
  analyticsPath(databasePath: string): string
  /** Opens (creating and migrating) a request records' database. */
  openAnalytics(path: string): Database
}

/** Every migration, in order. A new area adds its file and one line here. */
export const MIGRATIONS: Migration[] = [
  accounts, conversations, rag, ragFtsPerCollection, accountAdmin, agentTasks, analytics, ragDocuments, apiKeys, voice, plugins, analyticsSpans, analyticsStrings,
  analyticsMovedOut,
  mcpServers,
  groups,
  auditEvents,
  ingestJobs,
  singleSignOn,
  agentTaskRoles,
  collectionShares,
  ragVectorIndex,
  assistants,
  chatEveryDay,
  conversationShares,
  conversationWords,
  conversationWordsPrefixes,
]

/**
 * The request records' own database (analytics.db): the analytics migrations, numbered as they
 * were when the records lived in the server's database, so that one moved there keeps its history.
 */
export const ANALYTICS_MIGRATIONS: Migration[] = [analytics, analyticsSpans, analyticsStrings]
