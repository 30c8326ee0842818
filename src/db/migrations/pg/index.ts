import { accounts } from './001_accounts'
import { conversations } from './002_conversations'
import { rag } from './003_rag'
import { ragKeywords } from './004_rag_keywords'
import { accountAdmin } from './005_account_admin'
import { ragDocuments } from './008_rag_documents'
import { ragVersions } from './020_rag_versions'
import { agentTasks } from './006_agent_tasks'
import { analytics } from './007_analytics'
import { apiKeys } from './009_api_keys'
import { voice } from './010_voice'
import { serverSecrets } from './016_server_secrets'
import { userForeignKeys } from './017_user_foreign_keys'
import { ragUserForeignKey } from './018_rag_user_foreign_key'
import { agentQueue } from './030_agent_queue'
import { plugins } from './011_plugins'
import { mcpServers } from './015_mcp_servers'
import { pluginPackages } from './024_plugin_packages'
import { voiceAudioBytes } from './025_voice_audio_bytes'
import { analyticsSpans } from './012_analytics_spans'
import { analyticsStrings } from './013_analytics_strings'
import { ragChunkStorage } from './200_rag_chunk_storage'
import { groups } from './040_groups'
import { auditEvents } from './041_audit_events'
import { singleSignOn } from './044_single_sign_on'
import { conversationCounts } from './045_conversation_counts'
import { ingestJobs } from './043_ingest_jobs'
import { collectionShares } from './042_collection_shares'
import { ragVectorColumn } from './060_rag_vector_column'
import { assistants } from './070_assistants'
import { chatEveryDay } from './080_chat_every_day'
import { conversationShares } from './081_conversation_shares'
import { conversationWords } from './082_conversation_words'
import { conversationWordsNewest } from './083_conversation_words_newest'
import { messageWords } from './084_message_words'

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
export const PG_MIGRATIONS: PostgresMigration[] = [accounts, conversations, rag, ragKeywords, accountAdmin, agentTasks, analytics, ragDocuments, apiKeys, voice, plugins, analyticsSpans, analyticsStrings, mcpServers, serverSecrets, userForeignKeys, ragUserForeignKey, ragVersions, pluginPackages, voiceAudioBytes, agentQueue, ragChunkStorage, groups, auditEvents, ingestJobs, singleSignOn, collectionShares, conversationCounts, ragVectorColumn, assistants, chatEveryDay, conversationShares, conversationWords, conversationWordsNewest, messageWords]
