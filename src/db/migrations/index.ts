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
import { mcpServers } from './015_mcp_servers'

export interface Migration {
  version: number
  name: string
  /** One or more statements, run in one transaction. */
  sql: string
}

/** Every migration, in order. A new area adds its file and one line here. */
export const MIGRATIONS: Migration[] = [accounts, conversations, rag, ragFtsPerCollection, accountAdmin, agentTasks, analytics, ragDocuments, apiKeys, voice, plugins, analyticsSpans, analyticsStrings, mcpServers]
