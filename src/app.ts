import { Database } from 'bun:sqlite'
import { Elysia } from 'elysia'
import { join } from 'node:path'
import { type Config, loadConfig } from './config'
import { httpCore } from './core/http'
import { RateLimiter } from './core/rate-limit'
import { jwtSecret } from './core/secrets'
import { TokenSigner } from './core/tokens'
import { openDatabase } from './db'
import { createModels, type Models } from './ml'
import { authModule } from './modules/auth'
import { chatModule } from './modules/chat'
import { ChatService } from './modules/chat/service'
import { conversationsModule } from './modules/conversations'
import { ConversationStore } from './modules/conversations/service'
import { ensureFirstAdmin } from './modules/auth/bootstrap'
import { AuthService } from './modules/auth/service'
import { docsModule } from './modules/docs'
import { healthModule, systemModule } from './modules/system'
import { SystemService } from './modules/system/service'
import { registerChatSocket } from './modules/chat/socket'
import { wsModule } from './modules/ws'
import { ragModule } from './modules/rag'
import { RagService } from './modules/rag/service'
import { SocketHandlers } from './modules/ws/registry'
import { agentsModule } from './modules/agents'
import { AgentService } from './modules/agents/service'
import { voiceModule } from './modules/voice'
import { type VoiceActions, VoiceCommands } from './modules/voice/commands'
import { SpeechService } from './modules/voice/service'
import { registerVoiceSocket } from './modules/voice/socket'
import { answerQuestion } from './modules/rag/answer'
import { pluginsModule } from './modules/plugins'
import { PluginService } from './modules/plugins/service'
import { registerPluginSocket } from './modules/plugins/socket'
import { createToolbox, type PluginToolbox } from './modules/plugins/tools'

export type { Config }

export interface AppOptions extends Partial<Config> {
  /** A database path, ':memory:', or an open Database. Default: `<dataDir>/uagent.db`. */
  database?: string | Database
  /** Environment to read configuration from (default process.env); explicit options win. */
  env?: Record<string, string | undefined>
  /** Where operational messages go (default console.error). */
  log?: (line: string) => void
}

/** Everything the modules are built from; exposed so tests and the entry point can reach it. */
export interface Services {
  config: Config
  db: Database
  auth: AuthService
  limiter: RateLimiter
  system: SystemService
  models: Models
  conversations: ConversationStore
  chat: ChatService
  rag: RagService
  agents: AgentService
  speech: SpeechService
  voice: VoiceCommands
  /** Built-in and installed plugins: catalog, isolated execution, install. */
  plugins: PluginService
  /** Every enabled plugin action as a tool, for agents, the voice autopilot and model tool calls. */
  tools: PluginToolbox
  log: (line: string) => void
}

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>
}

/** Builds the services: database (migrated), signer, accounts, limits. */
export function createServices(options: AppOptions = {}): Services {
  const { database, env, log: logOption, ...overrides } = options
  const loaded = loadConfig(env ?? process.env)
  // A data dir given in code takes its audio folder with it, unless that is given too.
  if (overrides.dataDir !== undefined && overrides.audioDir === undefined) loaded.audioDir = `${overrides.dataDir}/audio`
  const config: Config = { ...loaded, ...withoutUndefined(overrides) }
  const log = logOption ?? ((line: string) => console.error(line))
  const inMemory = database === ':memory:'
  const db = database instanceof Database ? database : openDatabase(database ?? `${config.dataDir}/uagent.db`)
  const signer = new TokenSigner(jwtSecret(config.jwtSecret, inMemory ? null : config.dataDir))
  const auth = new AuthService(db, signer)
  const limiter = new RateLimiter(config.rateLimitMax, config.rateLimitWindow)
  const models = createModels(config)
  const system = new SystemService({
    db,
    engines: models,
    features: { rag: true, voice: true, plugins: true, multiAgent: true },
    maxRequestSize: config.maxRequestSize,
    rateLimit: { window: config.rateLimitWindow, max: config.rateLimitMax },
    environment: config.environment,
    startedAt: Date.now(),
  })
  const conversations = new ConversationStore(db)
  const chat = new ChatService({ conversations, generator: models.generator, userExists: (id) => auth.getUser(id) !== null })
  const rag = new RagService({ db, embedder: models.embedder, generator: models.generator })
  const plugins = new PluginService({
    db,
    rag,
    pluginsDir: config.pluginsDir ?? join(config.dataDir, 'plugins'),
    nodePath: config.nodePath,
    timeoutMs: config.pluginTimeoutMs,
    memoryMb: config.pluginMemoryMb,
    idleMs: config.pluginIdleMs,
    log,
  })
  const tools = createToolbox(plugins)
  const agents = new AgentService({
    db,
    rag,
    generator: models.generator,
    tools,
    concurrency: config.agentConcurrency,
    queueLimit: config.agentQueueLimit,
    retentionMs: config.agentRetentionHours * 3600_000,
    log,
  })
  const collectionNames = (userId: string) => rag.listCollections(userId).collections.map((c) => c.name)
  const speech = new SpeechService({
    db,
    audioDir: config.audioDir,
    audioRetentionMs: config.audioRetentionMs,
    speechModelDir: config.speechModelDir,
    grammarNames: (userId) => ({ collections: collectionNames(userId), plugins: voice.pluginNames(), agents: voice.agentNames() }),
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
  const voice = new VoiceCommands(db, speech, actions)
  ensureFirstAdmin(auth, config, log)
  // Read through `services`, so that a test swapping a service (chat, tools) reaches the voice autopilot too.
  const services: Services = { config, db, auth, limiter, system, models, conversations, chat, rag, plugins, tools, agents, speech, voice, log }
  return services
}

/** The whole server as one Elysia app, built from its services. */
export function buildApp(services: Services) {
  const { config, auth, limiter, system, log, chat, conversations, rag, plugins, agents, speech, voice } = services
  const sockets = new SocketHandlers()
  registerChatSocket(sockets, chat)
  registerPluginSocket(sockets, plugins)
  registerVoiceSocket(sockets, voice)
  // Elysia's default normalization ('exactMirror') reshapes a body before it is validated: a
  // string sent where an object is expected (RAG metadata, plugin parameters) became
  // {"0": "x"} and was stored. TypeBox's cleaning strips unknown fields after the check instead,
  // so a wrong type is a 400 and stored data is what the caller sent.
  return new Elysia({
    name: 'universal-agent',
    normalize: 'typebox',
    // A WebSocket frame over the request size limit closes the socket (1009, RFC 6455) unread.
    websocket: { maxPayloadLength: config.maxRequestBytes },
  })
    .use(healthModule(system))
    .use(httpCore({ maxRequestBytes: config.maxRequestBytes, maxRequestSize: config.maxRequestSize, limiter, log }))
    .use(docsModule())
    .use(systemModule(system, auth, limiter))
    .use(authModule(auth, limiter))
    .use(chatModule(chat, auth, limiter, log))
    .use(conversationsModule(conversations, auth, limiter))
    .use(ragModule(rag, auth, limiter))
    .use(agentsModule(agents, auth, limiter))
    .use(pluginsModule(plugins, auth, limiter))
    .use(voiceModule(speech, voice, auth, limiter))
    .use(wsModule(sockets, auth, limiter, log))
}

/**
 * The server as an Elysia app, for `app.listen()` or in-process `app.handle(request)`.
 * `createApp({ database: ':memory:', adminEmail, adminPassword })` runs it with no files.
 */
export function createApp(options: AppOptions = {}) {
  return buildApp(createServices(options))
}

export type App = ReturnType<typeof createApp>
