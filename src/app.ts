import { Database } from 'bun:sqlite'
import { Elysia } from 'elysia'
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
import { DocumentLibrary } from './modules/rag/documents'
import { documentsModule } from './modules/rag/documents-module'
import { UploadService } from './modules/rag/uploads'
import { CollectionGrounding } from './modules/rag/grounding'
import { join } from 'node:path'
import { SocketHandlers } from './modules/ws/registry'

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
  log: (line: string) => void
}

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>
}

/** Builds the services: database (migrated), signer, accounts, limits. */
export function createServices(options: AppOptions = {}): Services {
  const { database, env, log: logOption, ...overrides } = options
  const config: Config = { ...loadConfig(env ?? process.env), ...withoutUndefined(overrides) }
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
    features: { rag: true, voice: false, plugins: false, multiAgent: false },
    maxRequestSize: config.maxRequestSize,
    rateLimit: { window: config.rateLimitWindow, max: config.rateLimitMax },
    environment: config.environment,
    startedAt: Date.now(),
  })
  const conversations = new ConversationStore(db)
  const chat = new ChatService({ conversations, generator: models.generator, userExists: (id) => auth.getUser(id) !== null })
  const rag = new RagService({ db, embedder: models.embedder, generator: models.generator })
  ensureFirstAdmin(auth, config, log)
  return { config, db, auth, limiter, system, models, conversations, chat, rag, log }
}

/** The whole server as one Elysia app, built from its services. */
export function buildApp(services: Services) {
  const { config, auth, limiter, system, log, chat, conversations, rag } = services
  const sockets = new SocketHandlers()
  // Built from the services as they are now (tests may have swapped the RAG service in).
  const library = new DocumentLibrary(rag, services.db)
  const uploads = new UploadService(library, join(config.dataDir, 'tmp'), config.maxRequestBytes)
  chat.grounding ??= new CollectionGrounding(rag, library)
  registerChatSocket(sockets, chat)
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
    .use(ragModule(rag, auth, limiter, library))
    .use(documentsModule(library, uploads, auth, limiter))
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
