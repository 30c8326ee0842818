import { Database } from 'bun:sqlite'
import { existsSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { Elysia } from 'elysia'
import { randomUUID } from 'node:crypto'
import { tmpdir } from 'node:os'
import { type Config, loadConfig } from './config'
import { type AddressSource, clientAddress, httpCore, trustedProxies } from './core/http'
import { RateLimiter } from './core/rate-limit'
import { WorkPool } from './core/work-pool'
import { jwtSecret, sharedJwtSecret as sharedJwtSecretOf } from './core/secrets'
import { assertWritableDir, StartupError } from './core/startup'
import { StorageGuard } from './core/storage'
import { TokenSigner } from './core/tokens'
import { analyticsPathFor, openAnalyticsDatabase, openDatabase } from './db'
import { createModels, type Models } from './ml'
import { setIntentModelCache } from './ml/intent/classifier'
import { apiKeysModule } from './modules/apikeys'
import { ApiKeyService } from './modules/apikeys/service'
import { adminModule } from './modules/admin'
import { BackupService } from './modules/admin/service'
import { authModule } from './modules/auth'
import { chatModule } from './modules/chat'
import { ChatService } from './modules/chat/service'
import { conversationsModule } from './modules/conversations'
import { ConversationResolver } from './modules/conversations/access'
import { PostgresConversationLookup } from './modules/conversations/access.postgres'
import { SqliteConversationLookup } from './modules/conversations/access.sqlite'
import { conversationActionsModule } from './modules/conversations/actions'
import { ConversationFiles } from './modules/conversations/files'
import type { ConversationStore } from './modules/conversations/store'
import { SqliteConversationStore } from './modules/conversations/store.sqlite'
import { SqliteApiKeyStore } from './modules/apikeys/store.sqlite'
import { PostgresApiKeyStore } from './modules/apikeys/store.postgres'
import { PostgresTaskStore } from './modules/agents/store.postgres'
import { PostgresVoiceStore } from './modules/voice/store.postgres'
import { PostgresConversationStore } from './modules/conversations/store.postgres'
import { gatedPostgres, openPostgres, type Postgres, PostgresMonitor } from './db/postgres'
import { measuredPostgres, PoolSlots, poolSize } from './db/postgres-pool'
import { andThen } from './db/maybe-promise'
import { RedisLink } from './db/redis'
import { type EventBus, LocalBus, RedisBus } from './core/bus'
import { ensureFirstAdmin } from './modules/auth/bootstrap'
import { AuthService } from './modules/auth/service'
import { PostgresAuthStore } from './modules/auth/store.postgres'
import { SqliteAuthStore } from './modules/auth/store.sqlite'
import { docsModule } from './modules/docs'
import { openAiModule } from './modules/openai'
import { OpenAiService } from './modules/openai/service'
import { healthModule, systemModule } from './modules/system'
import { SystemService } from './modules/system/service'
import { registerChatSocket } from './modules/chat/socket'
import { wsModule } from './modules/ws'
import { ragModule } from './modules/rag'
import { collectionRef, RagService } from './modules/rag/service'
import type { RagStore } from './modules/rag/store'
import { PostgresRagStore } from './modules/rag/store/postgres'
import { DEFAULT_VECTOR_CACHE } from './modules/rag/vectors/cache'
import { SqliteRagStore } from './modules/rag/store/sqlite'
import { DEFAULT_KEYWORD_TOPK } from './modules/rag/store/sqlite/keyword-topk'
import { DEFAULT_VECTOR_INDEX } from './modules/rag/store/sqlite/vector-index'
import type { VectorSearchInfo } from './modules/system/service'
import { DocumentLibrary } from './modules/rag/documents/library'
import { documentsModule } from './modules/rag/documents'
import { CollectionSharing } from './modules/rag/access/sharing'
import { assistantsModule } from './modules/assistants'
import { AssistantService } from './modules/assistants/service'
import { SqliteAssistantStore } from './modules/assistants/store.sqlite'
import { PostgresAssistantStore } from './modules/assistants/store.postgres'
import { UploadService } from './modules/rag/documents/uploads'
import { ingestJobsModule } from './modules/rag/jobs'
import { IngestJobService } from './modules/rag/jobs/service'
import { registerIngestJobSocket } from './modules/rag/jobs/socket'
import { SqliteIngestJobStore } from './modules/rag/jobs/store.sqlite'
import { PostgresIngestJobStore } from './modules/rag/jobs/store.postgres'
import { CollectionGrounding } from './modules/rag/answer/grounding'
import { SocketHandlers } from './modules/ws/registry'
import { agentsModule } from './modules/agents'
import { AgentService } from './modules/agents/service'
import { voiceModule } from './modules/voice'
import { type VoiceActions, VoiceCommands } from './modules/voice/commands'
import { SpeechService } from './modules/voice/service'
import { registerVoiceSocket } from './modules/voice/socket'
import { registerAgentSocket } from './modules/agents/socket'
import { answerQuestion } from './modules/rag/answer/answer'
import { pluginsModule } from './modules/plugins'
import { PluginService } from './modules/plugins/service'
import { PostgresPluginStore } from './modules/plugins/store.postgres'
import { SqlitePluginStore } from './modules/plugins/store.sqlite'
import { movePluginRegistry } from './modules/plugins/move'
import { moveMcpServers } from './modules/mcp/move'
import { registerPluginSocket } from './modules/plugins/socket'
import { createToolbox, type PluginToolbox } from './modules/plugins/tools'
import { analyticsModule } from './modules/analytics'
import { mcpModule } from './modules/mcp'
import { McpEndpoint } from './modules/mcp/server'
import { combineToolboxes, McpClientService } from './modules/mcp/service'
import { SqliteMcpServerStore } from './modules/mcp/store.sqlite'
import { PostgresMcpServerStore } from './modules/mcp/store.postgres'
import { servedTools } from './modules/mcp/tools'
import { PrometheusMetrics } from './modules/analytics/prometheus'
import { RequestRecorder } from './modules/analytics/recorder'
import { RouteTable } from './modules/analytics/route-table'
import { recordSocketMessage, requestRecording } from './modules/analytics/recording'
import { admission } from './core/admission'
import { queryCounting } from './modules/analytics/query-counting'
import { AnalyticsService } from './modules/analytics/service'
import { type Analytics, PostgresAnalyticsService } from './modules/analytics/service.postgres'
import { webModule } from './modules/web'
import { auditModule } from './modules/audit'
import { type AddressOf, RequestAudit } from './modules/audit/context'
import { AuditLog } from './modules/audit/service'
import { SqliteAuditStore } from './modules/audit/store.sqlite'
import { PostgresAuditStore } from './modules/audit/store.postgres'
import { groupsModule } from './modules/groups'
import { GroupService } from './modules/groups/service'
import { SqliteGroupStore } from './modules/groups/store.sqlite'
import { PostgresGroupStore } from './modules/groups/store.postgres'
import { WebBundle } from './modules/web/bundle'
import { webSessionModule } from './modules/web/session'
import { ssoModule } from './modules/sso'
import { SsoService } from './modules/sso/service'
import { PostgresSsoStore } from './modules/sso/store.postgres'
import { SqliteSsoStore } from './modules/sso/store.sqlite'

export type { Config }

export interface AppOptions extends Partial<Config> {
  /** A database path, ':memory:', or an open Database. Default: `<dataDir>/uagent.db`. */
  database?: string | Database
  /**
   * The request records' database: a path, ':memory:', or an open Database. Default: analytics.db
   * beside the server's database file (':memory:' beside an in-memory one).
   */
  analyticsDatabase?: string | Database
  /** Environment to read configuration from (default process.env); explicit options win. */
  env?: Record<string, string | undefined>
  /** Where operational messages go (default console.error). */
  log?: (line: string) => void
  /**
   * A connected, migrated PostgreSQL database (openPostgres): the stores that have a PostgreSQL
   * adapter keep their data there (see POSTGRES_STORES). startServices() opens it from
   * UAGENT_DATABASE_URL.
   */
  postgres?: Postgres
  /**
   * The JWT key kept in PostgreSQL (server_secrets), shared by every server on that database;
   * startServices() reads it when UAGENT_JWT_SECRET is unset (which wins when set). Without it, a
   * server built by createServices() signs with its data dir's key, as on SQLite.
   */
  sharedJwtSecret?: string
}

/** The stores that live in PostgreSQL when UAGENT_DATABASE_URL is set; the others stay in SQLite for now. */
export const POSTGRES_STORES = ['conversations', 'api keys', 'accounts and sessions', 'agent tasks', 'voice audio and autopilot', 'plugins', 'MCP servers', 'RAG', 'analytics', 'groups', 'audit log'] as const
/** Every store of the server, in the order they move to PostgreSQL. */
export const ALL_STORES = ['conversations', 'api keys', 'accounts and sessions', 'agent tasks', 'voice audio and autopilot', 'plugins', 'MCP servers', 'RAG', 'analytics', 'groups', 'audit log'] as const

/**
 * Bus topics: a session or user changed (`{ userId?, sessionId? }`); a collection written
 * (`{ collectionId }`); users' group memberships changed (`{ userIds }`).
 */
const ACCOUNTS_TOPIC = 'accounts'
const COLLECTIONS_TOPIC = 'collections'
const GROUPS_TOPIC = 'groups'

/** Everything the modules are built from; exposed so tests and the entry point can reach it. */
export interface Services {
  config: Config
  db: Database
  /** The PostgreSQL database the stores in POSTGRES_STORES use; null when all state is in SQLite. */
  postgres: Postgres | null
  /** Whether PostgreSQL answers (for /health and 503 DATABASE_UNAVAILABLE); null without it. */
  postgresMonitor: PostgresMonitor | null
  /** Redis (UAGENT_REDIS_URL), shared by replicas: rate limits and events; null without it. */
  redis: RedisLink | null
  /** Events a client waits for (agent task progress), to every replica through Redis when there is one. */
  bus: EventBus
  /** The request records' own database (analytics.db beside uagent.db; unused when they go to PostgreSQL). */
  analyticsDb: Database
  auth: AuthService
  /** Single sign-on: OpenID Connect, LDAP, the CLI's device codes. */
  sso: SsoService
  apiKeys: ApiKeyService
  limiter: RateLimiter
  system: SystemService
  models: Models
  conversations: ConversationStore
  chat: ChatService
  rag: RagService<RagStore>
  v1: OpenAiService
  agents: AgentService
  /** Assistants: shared presets, used by chat, /v1, MCP and agent tasks with the caller's rights. */
  assistants: AssistantService
  /** Ingestion jobs: uploads that go on after their 202 (OCR, slow files), run by any server. */
  ingestJobs: IngestJobService
  speech: SpeechService
  voice: VoiceCommands
  /** Built-in and installed plugins: catalog, isolated execution, install. */
  plugins: PluginService
  /** Every enabled plugin action and every registered MCP server's tool, for agents, the voice autopilot and model tool calls. */
  tools: PluginToolbox
  /** The MCP servers an admin registered (their tools are in `tools`). */
  mcp: McpClientService
  /** Online backups of the data dir; null for an in-memory server. */
  backups: BackupService | null
  /** The data dir's free-space floor (UAGENT_MIN_FREE_MB): `storage.assertRoom(bytes)` before a large write. */
  storage: StorageGuard
  /** Request records: buffered, written in batches; close() flushes (see shutdown). */
  recorder: RequestRecorder
  /** Dashboard, series and export: from analytics.db, or from PostgreSQL (every server's records) with UAGENT_DATABASE_URL. */
  analytics: Analytics
  prometheus: PrometheusMetrics
  /** The worker threads of the CPU-heavy work (speech, text extraction, embedding): started as work comes. */
  pool: WorkPool
  /** Groups of users; groupIdsOf(user) answers every collection access check. */
  groups: GroupService
  /** The audit log: record() appends off the request path; close() writes what is pending (see shutdown). */
  audit: AuditLog
  /** The browser app's bundle, built (or loaded from its cache) on first use. */
  web: WebBundle
  log: (line: string) => void
}

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>
}

/** The request records' database: as given, or analytics.db beside the server's database file. */
function openRecordsDatabase(option: string | Database | undefined, db: Database): Database {
  if (option instanceof Database) return option
  if (option !== undefined) return openAnalyticsDatabase(option)
  const file = db.filename
  return openAnalyticsDatabase(file && file !== ':memory:' ? analyticsPathFor(file) : ':memory:')
}

/** Builds the services: database (migrated), signer, accounts, limits. */
export function createServices(options: AppOptions = {}): Services {
  const { database, analyticsDatabase, env, log: logOption, postgres: postgresOption, sharedJwtSecret: sharedSecret, ...overrides } = options
  const loaded = loadConfig(env ?? process.env)
  // A data dir given in code takes its audio folder with it, unless that is given too.
  if (overrides.dataDir !== undefined && overrides.audioDir === undefined) loaded.audioDir = `${overrides.dataDir}/audio`
  const config: Config = { ...loaded, ...withoutUndefined(overrides) }
  const log = logOption ?? ((line: string) => console.error(line))
  if (config.databaseUrl && !postgresOption) {
    throw new StartupError('UAGENT_DATABASE_URL is set: the server must be built with startServices() (it connects to PostgreSQL and migrates it first), not createServices()')
  }
  // The stores get the pool behind the monitor's gate: once PostgreSQL is known to be lost, their
  // statements fail at once (503) rather than each waiting for a connection. Every query counts for
  // its request, and its wait for one of the pool's connections is measured (nothing is delayed).
  const postgresMonitor = postgresOption ? new PostgresMonitor(postgresOption, log) : null
  const poolWaits = { waited: (_seconds: number) => {} }
  const postgres =
    postgresOption && postgresMonitor ? measuredPostgres(gatedPostgres(postgresOption, () => postgresMonitor.problem), new PoolSlots(poolSize(postgresOption), poolWaits)) : null
  const redis = config.redisUrl ? new RedisLink(config.redisUrl, log) : null
  const bus: EventBus = redis ? new RedisBus(redis, log) : new LocalBus(log)
  // Names this server's own events on the bus (instance ids may repeat, e.g. two servers in one process).
  const origin = randomUUID()
  const inMemory = database === ':memory:'
  const dbPath = typeof database === 'string' ? database : `${config.dataDir}/uagent.db`
  if (!inMemory && !(database instanceof Database)) assertWritableDir(dirname(dbPath))
  // Read before the database is opened (which creates it when missing).
  const databaseExists = !inMemory && !(database instanceof Database) && existsSync(dbPath) && statSync(dbPath).size > 0
  const signer = new TokenSigner(config.jwtSecret ?? sharedSecret ?? jwtSecret(undefined, inMemory ? null : config.dataDir, { databaseExists }))
  const db = database instanceof Database ? database : openDatabase(dbPath)
  const analyticsDb = openRecordsDatabase(analyticsDatabase, db)
  const auth = new AuthService(postgres ? new PostgresAuthStore(postgres) : new SqliteAuthStore(db), signer)
  // Replicas tell each other at once what changed in accounts and collections; the time-limited
  // reads (LIVE_CHECK_MS, a collection's version every 100 ms) remain the promise when Redis is lost.
  if (postgres && redis) {
    auth.onChanged((target) => bus.publish(ACCOUNTS_TOPIC, { ...target, from: origin }))
    bus.subscribe(ACCOUNTS_TOPIC, (event) => {
      if (event.from === origin) return
      auth.changedElsewhere({ userId: typeof event.userId === 'string' ? event.userId : undefined, sessionId: typeof event.sessionId === 'string' ? event.sessionId : undefined })
    })
  }
  const audit = new AuditLog(postgres ? new PostgresAuditStore(postgres) : new SqliteAuditStore(db), { retentionDays: config.auditRetentionDays, log }).start()
  // A user's groups are answered from memory while every change reaches this process: one server,
  // or replicas whose bus runs through Redis. Replicas on PostgreSQL without Redis read them each time.
  const groups = new GroupService({ store: postgres ? new PostgresGroupStore(postgres) : new SqliteGroupStore(db), users: auth, audit, cacheable: () => !postgres || bus.shared })
  if (redis) {
    groups.onChanged((change) => bus.publish(GROUPS_TOPIC, { userIds: change.userIds, from: origin }))
    bus.subscribe(GROUPS_TOPIC, (event) => {
      if (event.from === origin || !Array.isArray(event.userIds)) return
      groups.changedElsewhere({ userIds: event.userIds.filter((id): id is string => typeof id === 'string') })
    })
  }
  const apiKeys = new ApiKeyService(postgres ? new PostgresApiKeyStore(postgres) : new SqliteApiKeyStore(db), auth)
  auth.acceptApiKeys(apiKeys)
  const sso = new SsoService(postgres ? new PostgresSsoStore(postgres) : new SqliteSsoStore(db), auth, config)
  sso.groups = groups
  sso.audit = audit
  const limiter = new RateLimiter(config.rateLimitMax, config.rateLimitWindow, redis)
  const pool = new WorkPool({ size: config.workers, queueLimit: config.workQueue, log })
  const models = createModels(config, pool)
  const startedAt = Date.now()
  const system = new SystemService({
    db,
    ...(postgresMonitor ? { postgres: postgresMonitor } : {}),
    ...(redis ? { redis } : {}),
    engines: models,
    pool,
    features: { rag: true, voice: true, plugins: true, multiAgent: true },
    maxRequestSize: config.maxRequestSize,
    rateLimit: { window: config.rateLimitWindow, max: config.rateLimitMax },
    environment: config.environment,
    startedAt,
    dataDir: inMemory ? null : config.dataDir,
    minFreeBytes: config.minFreeMb * 1024 * 1024,
    // Read when asked (the knowledge base is made below).
    vectorSearch: () => vectorSearchState(rag.store),
  })
  const conversations: ConversationStore = postgres ? new PostgresConversationStore(postgres) : new SqliteConversationStore(db)
  const chat = new ChatService({ conversations, generator: models.generator, userExists: (id) => andThen(auth.getUser(id), (user) => user !== null) })
  const storage = new StorageGuard(existsSync(config.dataDir) ? config.dataDir : null, config.minFreeMb * 1024 * 1024)
  // The memory the exact in-memory copy of vectors may use (UAGENT_VECTOR_CACHE_MB).
  const vectorCache = { minRows: DEFAULT_VECTOR_CACHE.minRows, budgetBytes: config.vectorCacheMb * 1024 * 1024 }
  // Large SQLite collections' approximate indexes (UAGENT_ANN_MIN_CHUNKS, UAGENT_VECTOR_INDEX).
  const vectorIndex = { ...DEFAULT_VECTOR_INDEX, enabled: config.vectorIndex, minChunks: config.annMinChunks, searchExpansion: config.annExpansion, log }
  const rag = new RagService<RagStore>({
    db,
    ...(postgres ? { store: new PostgresRagStore(postgres, { log, vectorCache: { minRows: 0, budgetBytes: vectorCache.budgetBytes } }) } : {}),
    embedder: models.embedder,
    generator: models.generator,
    storage,
    vectorCache,
    ...(postgres ? {} : { vectorIndex, keywordTopK: { ...DEFAULT_KEYWORD_TOPK, budgetBytes: config.keywordPostingsMb * 1024 * 1024 } }),
  })
  if (rag.store instanceof SqliteRagStore) {
    const { path, reason } = rag.store.indexes.state()
    if (!inMemory) log(path === 'usearch' ? `Vector search: collections of ${config.annMinChunks} chunks or more through an approximate index (usearch), others exactly` : `Vector search: exact for every collection (${reason})`)
  }
  if (postgres && redis && rag.store instanceof PostgresRagStore) {
    const store = rag.store
    store.onWritten = (collectionId) => bus.publish(COLLECTIONS_TOPIC, { collectionId, from: origin })
    bus.subscribe(COLLECTIONS_TOPIC, (event) => {
      if (event.from !== origin && typeof event.collectionId === 'number') store.changedElsewhere(event.collectionId)
    })
  }
  const keywordTopK = rag.store instanceof SqliteRagStore ? rag.store.keywords.topk : null
  const prometheus = new PrometheusMetrics(
    db,
    () => recorder.pendingCount,
    pool,
    () => vectorSearchState(rag.store),
    keywordTopK ? () => ({ usedBytes: keywordTopK.keptBytes, budgetBytes: keywordTopK.options.budgetBytes }) : undefined,
  )
  poolWaits.waited = (seconds) => prometheus.poolWaited(seconds)
  // Replicas (a shared database or Redis), or a server given a name, label their metrics by instance.
  if (config.databaseUrl || config.redisUrl || (env ?? process.env).UAGENT_INSTANCE_ID) prometheus.labelInstance(config.instanceId)
  const recorder = new RequestRecorder(analyticsDb, {
    retentionDays: config.analyticsRetentionDays,
    log,
    onSums: (sums) => prometheus.add(sums),
    onDrop: (count) => prometheus.dropped(count),
    ...(postgres ? { postgres, databaseDown: () => postgresMonitor?.problem != null } : {}),
  })
  if (config.analyticsEnabled) recorder.start()
  const analytics: Analytics = postgres
    ? new PostgresAnalyticsService(postgres, startedAt, (ids) => auth.emailsOf(ids))
    : new AnalyticsService(analyticsDb, startedAt, (ids) => auth.emailsOf(ids))
  const plugins = new PluginService({
    db,
    ...(postgres ? { store: new PostgresPluginStore(postgres) } : {}),
    storage,
    rag,
    // An in-memory database forgets installs at exit, so its plugins live in a temporary folder too.
    pluginsDir: config.pluginsDir ?? (inMemory ? join(tmpdir(), `uagent-plugins-${randomUUID()}`) : join(config.dataDir, 'plugins')),
    ephemeral: config.pluginsDir === undefined && inMemory,
    nodePath: config.nodePath,
    timeoutMs: config.pluginTimeoutMs,
    memoryMb: config.pluginMemoryMb,
    idleMs: config.pluginIdleMs,
    log,
  })
  const mcp = new McpClientService({
    store: postgres ? new PostgresMcpServerStore(postgres) : new SqliteMcpServerStore(db),
    reservedNames: () => andThen(plugins.current(), () => plugins.list().plugins.map((plugin) => plugin.name)),
    timeoutMs: config.mcpTimeoutMs,
    idleMs: config.mcpIdleMs,
    log,
  })
  const tools = combineToolboxes(createToolbox(plugins), mcp)
  const agents = new AgentService({
    db,
    ...(postgres ? { store: new PostgresTaskStore(postgres) } : {}),
    rag,
    generator: models.generator,
    tools,
    concurrency: config.agentConcurrency,
    queueLimit: config.agentQueueLimit,
    retentionMs: config.agentRetentionHours * 3600_000,
    log,
    bus,
    instanceId: config.instanceId,
  })
  const ingestJobs = new IngestJobService({
    store: postgres ? new PostgresIngestJobStore(postgres) : new SqliteIngestJobStore(db),
    bus,
    // Read when a job runs, so that a RAG service swapped in (tests) is the one used.
    library: () => new DocumentLibrary(services.rag),
    instanceId: config.instanceId,
    concurrency: config.ingestJobConcurrency,
    jobAfterMs: config.ingestJobAfterMs,
    extractTimeoutMs: config.extractTimeoutMs,
    pool,
    shared: postgres !== null,
    log,
  })
  // A deleted user's collections go through the RAG store (its keyword indexes and vector rows are
  // not reached by the database's cascade); conversations and sessions follow by cascade.
  auth.onUserDeleted((userId) => {
    // In PostgreSQL the store deletes them and drops what this server cached of them (the rows would
    // also go by cascade with the user, migration 018).
    if (rag.store instanceof PostgresRagStore) {
      rag.store.deleteAllOf(userId).catch((error) => log(`Deleting the collections of deleted user ${userId} failed: ${(error as Error).message}`))
      return
    }
    for (const collection of (rag as RagService).ownCollections(userId)) (rag as RagService).deleteCollection(userId, collection.name)
  })
  const collectionNames = (userId: string) => andThen(rag.listCollections(userId), ({ collections }) => collections.map(collectionRef))
  // Trained intent models are kept in the data dir (an in-memory server: the temporary folder's cache).
  if (!inMemory && !(database instanceof Database)) setIntentModelCache(join(config.dataDir, 'cache'))
  const speech = new SpeechService({
    db,
    ...(postgres ? { store: new PostgresVoiceStore(postgres) } : {}),
    audioDir: config.audioDir,
    audioRetentionMs: config.audioRetentionMs,
    speechModelDir: config.speechModelDir,
    pool,
    grammarNames: (userId) => andThen(collectionNames(userId), (collections) => ({ collections, plugins: voice.pluginNames(), agents: voice.agentNames() })),
  })
  const actions: VoiceActions = {
    collectionNames,
    search: (userId, collection, query, limit) => rag.search(userId, collection, query, limit),
    answer: (userId, collection, question) => answerQuestion(rag, userId, { question, collection, maxContext: 3, includeContext: false }),
    systemStatus: () => system.health(),
    chat: async (userId, message) => (await services.chat.chat({ userId, message })).response,
    runTool: (caller, name, args) => services.tools.call(name, args, caller),
    listToolNames: () => services.tools.list().map((tool) => tool.name),
    startAgentTask: async (caller, task, names) => services.agents.submit(caller, { task, agents: names.length ? names : ['researcher', 'writer'] }),
    listAgentNames: () => services.agents.list().agents.map((agent) => agent.name),
  }
  const voice = new VoiceCommands(speech, actions)
  // On PostgreSQL the first admin is made by startServices (it awaits the database).
  if (!postgres) ensureFirstAdmin(auth, config, log)
  const backups = inMemory || database instanceof Database
    ? null
    : new BackupService({
        dataDir: config.dataDir,
        dbPath,
        analyticsPath: analyticsDb.filename,
        intervalSeconds: config.backupIntervalSeconds,
        keep: config.backupKeep,
        log,
        postgres,
        onScheduled: (backup) => audit.record({ actor: null, action: 'backup.created', target: backup.name, details: { size: backup.size, files: backup.files, via: 'schedule' } }),
      })
  // Read through `services`, so that a test swapping a service (chat, tools) reaches the voice autopilot too.
  const services: Services = { config, db, postgres, postgresMonitor, redis, bus, analyticsDb, auth, sso, apiKeys, limiter, system, models, conversations, chat, rag, plugins, tools, mcp, agents, ingestJobs, speech, voice, storage, backups, recorder, analytics, prometheus, pool, groups, audit, web: new WebBundle(log), v1: null as unknown as OpenAiService, assistants: null as unknown as AssistantService, log }
  services.assistants = new AssistantService({
    store: postgres ? new PostgresAssistantStore(postgres) : new SqliteAssistantStore(db),
    rag: () => services.rag,
    collectionSharing: () => new CollectionSharing(services.rag.resolver, services.audit),
    tools: () => services.tools,
    generator: () => services.chat.generator(),
    grounding: () => services.chat.grounding,
    audit,
  })
  // /v1 answers with the chat service's engine and the RAG service as they are when asked, so a
  // replaced service (tests, embedding) answers on both surfaces alike.
  services.v1 = new OpenAiService({
    generator: () => services.chat.generator(),
    embedder: () => services.models.embedder(),
    rag: () => services.rag,
    assistants: () => services.assistants,
    startedAt: Math.floor(Date.now() / 1000),
  })
  return services
}

/**
 * createServices() for a server that may keep its state in PostgreSQL: with UAGENT_DATABASE_URL
 * set (and no `postgres` given), connects and migrates it first (unreachable: a StartupError
 * naming the variable), and says which stores are there. On PostgreSQL (given or opened) it also
 * does the start-up work that needs the database: the JWT key shared by every server on it
 * (unless UAGENT_JWT_SECRET is set), and the first admin.
 */
export async function startServices(options: AppOptions = {}): Promise<Services> {
  const config = loadConfig(options.env ?? process.env)
  const url = options.databaseUrl ?? config.databaseUrl
  if (!url && !options.postgres) return withRedis(createServices(options))
  const postgres = options.postgres ?? (await openPostgres(url!, undefined, config.databasePool))
  try {
    // Every server on the database signs with one key (UAGENT_JWT_SECRET wins when set).
    const sharedJwtSecret = options.jwtSecret ?? config.jwtSecret ?? (await sharedJwtSecretOf(postgres))
    const services = await withSharedRegistries(createServices({ ...options, postgres, sharedJwtSecret }))
    await ensureFirstAdmin(services.auth, services.config, services.log)
    // Vector search in the database (pgvector) when it is there, else in this server's memory.
    if (services.rag.store instanceof PostgresRagStore) {
      const setup = await services.rag.store.prepareVectors()
      services.log(setup.kind === 'pgvector' ? `RAG vector search: pgvector in PostgreSQL (${setup.reason})` : `RAG vector search: in this server's memory (${setup.reason})`)
    }
    const elsewhere = ALL_STORES.filter((store) => !(POSTGRES_STORES as readonly string[]).includes(store))
    services.log(
      elsewhere.length
        ? `PostgreSQL (UAGENT_DATABASE_URL) holds: ${POSTGRES_STORES.join(', ')}; still in SQLite at ${services.db.filename}: ${elsewhere.join(', ')}`
        : 'PostgreSQL (UAGENT_DATABASE_URL) holds every store',
    )
    return withRedis(services)
  } catch (error) {
    if (!options.postgres) await postgres.close().catch(() => {})
    throw error
  }
}

/**
 * The shared registries (plugins, MCP servers) are read once before the first request, and the
 * files of this data dir that PostgreSQL lacks (a server moved from SQLite: its plugins and audio)
 * are stored there, so that every server on it serves them.
 */
async function withSharedRegistries(services: Services): Promise<Services> {
  if (services.postgres) await moveRegistriesFromSqlite(services, services.postgres)
  await services.plugins.current()
  await services.mcp.current()
  await services.plugins.storeLocalPackages()
  const audio = await services.speech.audio.storeLocalFiles()
  if (audio) services.log(`${audio} audio file(s) of this data dir are now stored in PostgreSQL, for every server on it`)
  return services
}

/**
 * A server that kept its plugins and MCP servers in SQLite before they lived in PostgreSQL: its
 * registries move there at its first start on PostgreSQL (their files are stored next).
 */
async function moveRegistriesFromSqlite(services: Services, postgres: Postgres): Promise<void> {
  const plugins = await movePluginRegistry(new SqlitePluginStore(services.db), new PostgresPluginStore(postgres))
  const mcp = await moveMcpServers(new SqliteMcpServerStore(services.db), new PostgresMcpServerStore(postgres))
  const said = (what: string, { moved, kept }: { moved: string[]; kept: string[] }) =>
    [moved.length ? `${what} ${moved.join(', ')} moved from SQLite to PostgreSQL` : '', kept.length ? `${what} ${kept.join(', ')} already in PostgreSQL (kept as they are there)` : ''].filter(Boolean)
  const lines = [...said('Plugins', plugins), ...said('MCP servers', mcp)]
  if (lines.length) services.log(`${lines.join('; ')}`)
}

/** Waits for Redis's first answer (an unreachable Redis leaves the server degraded, never stopped). */
async function withRedis(services: Services): Promise<Services> {
  if (services.redis && !(await services.redis.start())) services.log('The server starts without Redis: /health says degraded until UAGENT_REDIS_URL answers')
  return services
}

/** The whole server as one Elysia app, built from its services. */
export function buildApp(services: Services) {
  const { config, auth, limiter, system, log, chat, conversations, rag, plugins, agents, backups, recorder, analytics, prometheus, speech, voice } = services
  const sockets = new SocketHandlers()
  // Built from the services as they are now (tests may have swapped the RAG service in).
  const library = new DocumentLibrary(rag)
  const uploads = new UploadService(services.ingestJobs, join(config.dataDir, 'tmp'), config.maxRequestBytes, (userId, ref) => library.writable(userId, ref))
  chat.grounding ??= new CollectionGrounding(rag, library)
  chat.assistants ??= services.assistants
  agents.assistants ??= services.assistants
  rag.audit ??= services.audit
  const sharing = new CollectionSharing(rag.resolver, services.audit)
  // Chat for every day (docs/chat.md): a conversation's files, and who reaches a conversation.
  const conversationFiles = new ConversationFiles(rag, library, uploads, services.ingestJobs)
  chat.files ??= conversationFiles
  const conversationResolver = new ConversationResolver(
    conversations,
    services.postgres ? new PostgresConversationLookup(services.postgres) : new SqliteConversationLookup(services.db),
    services.audit,
  )
  chat.conversationAccess ??= (userId, id) => conversationResolver.resolve(userId, id, 'owner')
  registerChatSocket(sockets, chat)
  registerPluginSocket(sockets, plugins)
  // Request records name routes by pattern, looked up in the app's own route list.
  const routes = new RouteTable((): readonly { method: string; path: string }[] => app.routes)
  // The client address audit events name, as the rate limits see it.
  const proxies = trustedProxies(config.trustedProxies)
  const addressOf: AddressOf = (request) => clientAddress(app.server, request, proxies)
  const audit = new RequestAudit(services.audit, addressOf)
  registerVoiceSocket(sockets, voice)
  registerAgentSocket(sockets, agents)
  registerIngestJobSocket(sockets, services.ingestJobs)
  // Elysia's default normalization ('exactMirror') reshapes a body before it is validated: a
  // string sent where an object is expected (RAG metadata, plugin parameters) became
  // {"0": "x"} and was stored. TypeBox's cleaning strips unknown fields after the check instead,
  // so a wrong type is a 400 and stored data is what the caller sent.
  const app = new Elysia({
    name: 'universal-agent',
    normalize: 'typebox',
    // No response schema transforms a value: the only transforms in them are Elysia's t.Integer
    // coercers (numeric strings in queries and forms), whose Encode returns its value. With
    // encodeSchema on, any response holding an integer (a conversation's messages, a search's
    // hits) went through TypeBox's interpreted Value.Encode: 11 % of the server's CPU under the team
    // load, and a quarter of a page of conversations' time. The response is still cleaned and
    // checked against its schema.
    encodeSchema: false,
    // Elysia finds the path after the 11th character by default ("http://a.b/" is the shortest
    // "standard" URL): an in-process request to http://x/health was routed as "th", a 405. From
    // the 7th, every host works; the search starts 4 characters earlier, nothing more.
    handler: { standardHostname: false },
    // A WebSocket frame over the request size limit closes the socket (1009, RFC 6455) unread.
    websocket: { maxPayloadLength: config.maxRequestBytes },
  })
    // At most UAGENT_MAX_ACTIVE_REQUESTS at once. Used before the recording, which so wraps it: a
    // recorded duration includes the wait at the door.
    .use(admission(config.maxActiveRequests))
    // Wraps the whole app: every request is recorded, /health and unknown paths included.
    .use(requestRecording(recorder, routes, config.analyticsEnabled))
    // On PostgreSQL, the queries each request makes (uagent_db_queries_per_request).
    .use(services.postgres ? queryCounting(prometheus, routes) : new Elysia({ name: 'analytics:query-counting' }))
    .use(healthModule(system, config.corsOrigins))
    .use(
      httpCore({
        maxRequestBytes: config.maxRequestBytes,
        maxRequestSize: config.maxRequestSize,
        limiter,
        log,
        corsOrigins: config.corsOrigins,
        trustedProxies: config.trustedProxies,
        onStorageFull: () => system.storageFull(),
        onDatabaseLost: (error) => services.postgresMonitor?.lostWith(error),
        server: (): AddressSource | null => app.server,
      }),
    )
    .use(docsModule(sockets))
    .use(systemModule(system, auth, limiter))
    .use(authModule(auth, limiter, audit))
    .use(webSessionModule(auth, limiter, audit))
    .use(ssoModule(services.sso, auth, limiter, audit, log))
    .use(apiKeysModule(services.apiKeys, auth, limiter, audit))
    .use(chatModule(chat, auth, limiter, log))
    .use(conversationsModule(conversations, auth, limiter, { files: conversationFiles, resolver: conversationResolver }))
    .use(conversationActionsModule({ store: conversations, resolver: conversationResolver, chat, files: conversationFiles, auth, limiter, addressOf, prometheus, log }))
    .use(ragModule(rag, auth, limiter, library, sharing, addressOf))
    .use(documentsModule(rag, library, uploads, auth, limiter, addressOf))
    .use(ingestJobsModule(services.ingestJobs, auth, limiter))
    .use(openAiModule(services.v1, auth, limiter))
    .use(agentsModule(agents, auth, limiter))
    .use(assistantsModule(services.assistants, auth, limiter, addressOf))
    .use(
      mcpModule(
        // Only the plugins' own actions are served: a registered server's tools are not passed on.
        new McpEndpoint({ rag, library, plugins: createToolbox(plugins), served: servedTools({ rag, library, agents, assistants: services.assistants }), log }),
        services.mcp,
        auth,
        limiter,
        audit,
      ),
    )
    .use(pluginsModule(plugins, auth, limiter, audit))
    .use(voiceModule(speech, voice, auth, limiter))
    .use(adminModule(backups, auth, limiter, { intervalSeconds: config.backupIntervalSeconds, keep: config.backupKeep }, audit))
    .use(groupsModule(services.groups, auth, limiter, addressOf))
    .use(auditModule(services.audit, auth, limiter))
    .use(analyticsModule({ analytics, recorder, prometheus, auth, limiter, metricsToken: config.metricsToken, feedback: () => conversations.feedbackByModel(), feedbackByAssistant: () => conversations.feedbackByAssistant() }))
    .use(webModule(services.web))
    .use(wsModule(sockets, auth, limiter, log, () => system.storageFull(), config.analyticsEnabled ? (message) => recordSocketMessage(recorder, message) : undefined, (error) => services.postgresMonitor?.lostWith(error)))
  return app
}

/**
 * The server as an Elysia app, for `app.listen()` or in-process `app.handle(request)`.
 * `createApp({ database: ':memory:', adminEmail, adminPassword })` runs it with no files.
 */
export function createApp(options: AppOptions = {}) {
  return buildApp(createServices(options))
}

export type App = ReturnType<typeof createApp>

/**
 * Which path serves vector search and the memory it uses (SystemDeps.vectorSearch, the Prometheus
 * gauges): SQLite's index state; another store's own when it reports one (`vectorSearch()`).
 */
function vectorSearchState(store: RagStore): VectorSearchInfo {
  const cache = { cacheBytes: store.cache.usedBytes, cacheBudgetBytes: store.cache.options.budgetBytes }
  if (store instanceof SqliteRagStore) return { ...store.indexes.state(), ...cache, columns: store.cache.columnsState() }
  const own = (store as { vectorSearch?: () => Omit<VectorSearchInfo, 'cacheBytes' | 'cacheBudgetBytes'> }).vectorSearch
  return { path: 'in-memory', ...(own ? own.call(store) : {}), ...cache }
}
