import { isIP } from 'node:net'
import { hostname } from 'node:os'
import { resolve } from 'node:path'
import { DEFAULT_WORK_QUEUE, defaultWorkers } from './core/work-pool'

/** Everything the server reads from its environment, checked once. */
// The comments of these fields are the configuration reference: `bun scripts/gen-docs.ts` makes
// the table of docs/configuration.md from them and from loadConfig's calls (`@default` overrides
// the default read from the call).
export interface Config {
  /** Port the server listens on (`0`: any free port, printed at start). */
  port: number
  /** Address the server listens on (`0.0.0.0` for every interface). */
  host: string
  /** The server's files: the databases (`uagent.db`, `analytics.db`), audio, installed plugins, backups and the JWT key. Created readable by its owner alone. */
  dataDir: string
  /** HS256 key that signs access tokens, at least 32 characters; unset, one is generated once and kept in the data dir. @default generated once into `<data>/jwt-secret` (mode 0600) */
  jwtSecret?: string
  /** Email of the first admin, created at start when no user exists. Without it `admin@uagent.local` is created with a random password printed once. */
  adminEmail?: string
  /** Password of that first admin, 8+ characters. */
  adminPassword?: string
  /** Local model weights in Hugging Face folder layout (see `models/README.md`). */
  modelsDir: string
  /** Embedding model id under the models dir, or `upstream:<name>` for the upstream server's embeddings. @default `Xenova/all-MiniLM-L6-v2` when its folder exists, else the built-in `builtin/hash-embed-384` */
  embedModel?: string
  /** Chat model id under the models dir. @default `HuggingFaceTB/SmolLM2-135M-Instruct` when its folder exists, else the built-in `builtin/extractive` */
  chatModel?: string
  /** An OpenAI-compatible server (Ollama, llama.cpp server, vLLM) to use for chat, with or without `/v1`. */
  llmUrl?: string
  /** The upstream server's model. @default the first model the upstream lists */
  llmModel?: string
  /** Bearer key sent to the upstream server. */
  llmApiKey?: string
  /** Requests per user (per client IP when anonymous) in each rate-limit window; beyond it 429 `RATE_LIMITED`. */
  rateLimitMax: number
  /** Length of the rate-limit window, in seconds. */
  rateLimitWindow: number
  /** Largest request body (`10mb`, `512kb`, bytes); larger bodies get 413 `PAYLOAD_TOO_LARGE`. */
  maxRequestSize: string
  maxRequestBytes: number
  /** Time limit of one plugin call, in milliseconds. */
  pluginTimeoutMs: number
  /** Time allowed to read one uploaded file (text extraction and OCR), in milliseconds; past it the file fails as `too slow` (see docs/knowledge-base.md). */
  extractTimeoutMs: number
  /** Agent tasks running at once; the rest wait as `queued`. */
  agentConcurrency: number
  /** Queued agent tasks beyond which a new one is 429 `QUEUE_FULL`. */
  agentQueueLimit: number
  /** Hours a finished agent task is kept. */
  agentRetentionHours: number
  /** An upload whose files are still being read after this many milliseconds is answered 202 and goes on as an ingestion job; `0`: every upload is a job. */
  ingestJobAfterMs: number
  /** Queued ingestion jobs this server takes on at once; `0`: it takes none (another replica does; an upload still being read here when it becomes a job goes on here). */
  ingestJobConcurrency: number
  /** Installed plugins, one folder each (`<pluginsDir>/<name>/`). @default `<data>/plugins` */
  pluginsDir?: string
  /** Node.js (>= 20) that runs installed plugins. @default `node` on `PATH` */
  nodePath?: string
  /** Heap limit of each plugin worker, in MB. */
  pluginMemoryMb: number
  /** A plugin worker without calls for this long (ms) is stopped. */
  pluginIdleMs: number
  /** Time limit, in milliseconds, of starting a registered MCP server (process and handshake) and of each call to it. */
  mcpTimeoutMs: number
  /** A registered MCP server without calls for this long (ms) is disconnected; a stdio server's process stops. */
  mcpIdleMs: number
  /** Reported by `GET /system/info` as `environment`. */
  environment: string
  /** Origins browsers may call the API from (CORS); none by default. */
  corsOrigins: string[]
  /** Proxies (addresses or CIDR ranges, comma-separated) whose `X-Forwarded-For` names the client, for per-IP rate limits behind nginx; none by default (the header is ignored). */
  trustedProxies: string[]
  /** Free space (MB) the data dir keeps: a write that would leave less is refused with 507 before the disk runs out. */
  minFreeMb: number
  /** Interval of scheduled backups into `<data>/backups/`, in seconds here. */
  backupIntervalSeconds: number
  /** Scheduled backups kept in `<data>/backups/` (the oldest go first). */
  backupKeep: number
  /** Whether requests are recorded for analytics; `off` records nothing. */
  analyticsEnabled: boolean
  /** Days request records are kept. */
  analyticsRetentionDays: number
  /** Days audit events are kept (`GET /admin/audit`); older ones are deleted in the background. */
  auditRetentionDays: number
  /** Bearer token a Prometheus scraper may use on `GET /metrics` besides admins. */
  metricsToken?: string
  /** Where synthesized audio is kept. @default `<data>/audio` */
  audioDir: string
  /** How long synthesized audio (files and records) is kept (hours in the variable; milliseconds in the config). */
  audioRetentionMs: number
  /** pocketsphinx's English model folder (Debian's pocketsphinx-en-us). */
  speechModelDir: string
  /** A PostgreSQL 15+ URL, `postgres://user:pass@host:port/db`: the stores docs/postgresql.md lists keep their data there (unset: everything in `<dataDir>/uagent.db`). */
  databaseUrl?: string
  /** Connections to PostgreSQL (`UAGENT_DATABASE_URL`) this server opens at most. How long queries wait for one is `uagent_db_pool_wait_seconds` on `/metrics`; docs/postgresql.md, "Under load", says how the default was chosen. Each replica opens its own: keep replicas × pool under PostgreSQL's `max_connections` (100 by default). */
  databasePool: number
  /** Requests worked on at once; more wait, in order of arrival, for one to end or to have run 50 ms (a long one then stops counting). Under load each request then waits once, at the door, instead of behind every other one after each database or Redis round trip (docs/postgresql.md, "Under load"). 0: no limit. */
  maxActiveRequests: number
  /** A Redis 7 URL, `redis://host:port`: rate-limit windows and events shared by every replica (see docs/replicas.md). */
  redisUrl?: string
  /** Worker threads of the work pool (speech, text extraction, OCR, embedding of ingested chunks), started as work comes. @default one less than the cores, at least 1 */
  workers: number
  /** Tasks waiting for a worker at most; one more is answered 503 `BUSY` with `Retry-After`. At about 20 ms of speech synthesis a task, a full queue of 64 on one worker waits ~1.3 s. @default `64` */
  workQueue: number
  /** Memory (MB) the in-memory copies of vectors may use, in all: the exact copy of collections from 10,000 chunks (SQLite; and PostgreSQL without pgvector) and, on SQLite, the int8 columns of collections from `UAGENT_ANN_MIN_CHUNKS` that answer their sparse queries (~0.48 KB a chunk: a million chunks take 490 MB). Collections that do not fit are searched by their index or by sqlite-vec's scan, never past it. `0`: no in-memory copy. See docs/knowledge-base.md, "At library scale". @default `512` */
  vectorCacheMb: number
  /** Memory (MB) the postings of large SQLite collections' common terms may take, kept for keyword top-k (least recently used dropped first). `0`: keyword top-k off, keyword candidates found as before. See docs/knowledge-base.md, "At library scale", "Keyword top-k". @default `128` */
  keywordPostingsMb: number
  /** Chunks from which a SQLite collection is searched through an approximate (HNSW, int8) index kept in `<data>/vector-index/`, its top candidates rescored exactly; smaller collections are searched exactly. See docs/knowledge-base.md, "At library scale". @default `50000` */
  annMinChunks: number
  /** Candidates the approximate index keeps while searching (HNSW's expansion, ef): more finds more of the exact nearest chunks and costs time in proportion (~50 ms at 1,024 over a million chunks of the built-in embedder on 2 cores). See docs/knowledge-base.md, "At library scale". @default `1024` */
  annExpansion: number
  /** `off`: no approximate index, every collection is searched exactly (as when the index library cannot load). */
  vectorIndex: boolean
  /** This server's name among replicas: the `instance` label of its Prometheus metrics. @default `<hostname>:<port>` (`<hostname>-<pid>` with PORT=0) */
  instanceId: string
  /** The server's URL as browsers reach it (`https://agent.example.com`): the OpenID Connect redirect URI is `<it>/auth/oidc/callback`, and `uagent login --web` sends people to `<it>/app/device`. @default the URL each request came to */
  publicUrl?: string
  /** An OpenID Connect provider's issuer (Keycloak, Authentik, Entra ID, Google, Dex…), found by discovery at `<it>/.well-known/openid-configuration`. See docs/single-sign-on.md. */
  oidcIssuer?: string
  /** This server's client id at the provider. */
  oidcClientId?: string
  /** This server's client secret at the provider (unset: a public client, PKCE only). */
  oidcClientSecret?: string
  /** The name of the provider on the sign-in page's button ("Sign in with <it>"). @default the issuer's host name */
  oidcName?: string
  /** The ID token (or userinfo) claim whose values are the user's groups. */
  oidcGroupsClaim: string
  /** Groups (comma-separated) of the groups claim whose members are admins. */
  oidcAdminGroups: string[]
  /** The scopes a sign-in asks for (space- or comma-separated; must include `openid`). Unset: `openid email profile`, and `groups` when the provider's discovery lists it in `scopes_supported` (Dex, Okta and oidc-provider release the groups claim only for it). @default `openid email profile` (+ `groups` when the provider supports it) */
  oidcScopes: string[] | null
  /** An LDAP directory (`ldap://host:389`, `ldaps://host:636`): OpenLDAP, Active Directory. See docs/single-sign-on.md. */
  ldapUrl?: string
  /** The service account that looks users up (`cn=uagent,ou=services,dc=example,dc=com`). */
  ldapBindDn?: string
  /** That service account's password. */
  ldapBindPassword?: string
  /** Where users are looked up (`ou=people,dc=example,dc=com`), the whole subtree. */
  ldapUserBase?: string
  /** The search filter of a user, `{email}` standing for the escaped email typed at sign-in (Active Directory: `(userPrincipalName={email})`). */
  ldapUserFilter: string
  /** Where groups are looked up (`ou=groups,dc=example,dc=com`): groups whose `member` or `uniqueMember` names the user, and those of the user's `memberOf`, become `ldap` groups here. Unset: no group sync. */
  ldapGroupBase?: string
  /** Directory groups (comma-separated `cn`s) whose members are admins. */
  ldapAdminGroups: string[]
  /** `off`: only single sign-on users (OpenID Connect, LDAP) sign in, except the admin named by `UAGENT_ADMIN_EMAIL` (a way back in). */
  localLogin: boolean
}

/** Connections to PostgreSQL a server opens at most, unless UAGENT_DATABASE_POOL says otherwise (loadConfig's default: the same). */
export const DEFAULT_DATABASE_POOL = 20

/** UAGENT_VECTOR_CACHE_MB's default: the in-memory copy of large collections' vectors, in MB. */
export const DEFAULT_VECTOR_CACHE_MB = 512
/** UAGENT_ANN_MIN_CHUNKS's default: from this many chunks a SQLite collection is served by its approximate index. */
export const DEFAULT_ANN_MIN_CHUNKS = 50_000
/** UAGENT_ANN_EXPANSION's default: candidates kept while searching an approximate index. */
export const DEFAULT_ANN_EXPANSION = 1024

export class ConfigError extends Error {
  constructor(variable: string, problem: string) {
    super(`${variable}: ${problem}`)
    this.name = 'ConfigError'
  }
}

type Env = Record<string, string | undefined>

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `expected a whole number, got "${raw}"`)
  const value = Number(raw.trim())
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`)
  return value
}

function toggle(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase()
  if (!raw) return fallback
  if (['1', 'true', 'on', 'yes'].includes(raw)) return true
  if (['0', 'false', 'off', 'no'].includes(raw)) return false
  throw new ConfigError(name, `expected on or off, got "${env[name]}"`)
}

function text(env: Env, name: string): string | undefined {
  const raw = env[name]?.trim()
  return raw ? raw : undefined
}

const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 }

/** Parses "10mb", "512kb", "1048576" into bytes; undefined when malformed. */
export function parseSize(raw: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)?$/i.exec(raw.trim())
  if (!match) return undefined
  const bytes = Math.floor(Number(match[1]) * SIZE_UNITS[(match[2] ?? 'b').toLowerCase()]!)
  return bytes > 0 ? bytes : undefined
}

function url(env: Env, name: string): string | undefined {
  const raw = text(env, name)
  if (raw === undefined) return undefined
  try {
    const parsed = new URL(raw)
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error()
  } catch {
    throw new ConfigError(name, `expected an http(s) URL, got "${raw}"`)
  }
  return raw.replace(/\/+$/, '')
}

/** A service URL of one of `protocols` with a host; the message never echoes it (it may hold a password). */
function serviceUrl(env: Env, name: string, protocols: string[], example: string): string | undefined {
  const raw = text(env, name)
  if (raw === undefined) return undefined
  let parsed: URL | undefined
  try {
    parsed = new URL(raw)
  } catch {}
  if (!parsed || !protocols.includes(parsed.protocol) || !parsed.hostname) throw new ConfigError(name, `expected ${example}`)
  return raw
}

/** A comma-separated list (blank items dropped), each item checked and normalized by `item`; [] when unset. */
function list(env: Env, name: string, item: (value: string) => string): string[] {
  const raw = text(env, name)
  if (raw === undefined) return []
  return raw
    .split(',')
    .map((value) => value.trim())
    .filter(Boolean)
    .map(item)
}

function proxies(env: Env, name: string): string[] {
  return list(env, name, (item) => {
    const [address, bits, extra] = item.split('/')
    const family = isIP(address ?? '')
    const max = family === 6 ? 128 : 32
    const validBits = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= max)
    if (!family || !validBits || extra !== undefined) throw new ConfigError(name, `expected addresses or CIDR ranges such as 10.0.0.0/8, got "${item}"`)
    return item
  })
}

function origins(env: Env, name: string): string[] {
  return list(env, name, (item) => {
    if (item === '*') return item
    try {
      const parsed = new URL(item)
      if ((parsed.protocol === 'http:' || parsed.protocol === 'https:') && parsed.origin === item.replace(/\/+$/, '')) return parsed.origin
    } catch {}
    throw new ConfigError(name, `expected origins such as "https://app.example.com" (scheme, host, optional port; no path), or *, got "${item}"`)
  })
}

const DURATION_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 }

/** "3600" (seconds), "90s", "30m", "6h", "1d" into seconds; 0 when unset. At least a minute, at most a year. */
function duration(env: Env, name: string): number {
  const raw = text(env, name)
  if (raw === undefined || raw === '0') return 0
  const match = /^(\d+)\s*([smhd]?)$/i.exec(raw)
  if (!match) throw new ConfigError(name, `expected a duration such as 3600, 30m, 6h or 1d, got "${raw}"`)
  const seconds = Number(match[1]) * DURATION_UNITS[(match[2] || 's').toLowerCase()]!
  if (seconds < 60 || seconds > 365 * 86_400) throw new ConfigError(name, `must be between 1 minute and 1 year, got "${raw}"`)
  return seconds
}

/** An issuer URL kept exactly as given: issuers are compared character for character (Authentik's ends with a slash). */
function issuer(env: Env, name: string): string | undefined {
  const raw = text(env, name)
  if (raw === undefined) return undefined
  url(env, name)
  return raw
}

const groupNames = (env: Env, name: string) => list(env, name, (item) => item)

/** OAuth scopes: space- or comma-separated scope tokens (RFC 6749 §3.3), `openid` among them. */
function scopes(env: Env, name: string): string[] | null {
  const raw = text(env, name)
  if (raw === undefined) return null
  const names = [...new Set(raw.split(/[\s,]+/).filter(Boolean))]
  const bad = names.find((scope) => !/^[\x21\x23-\x5B\x5D-\x7E]+$/.test(scope))
  if (bad !== undefined) throw new ConfigError(name, `"${bad}" is not a scope name (printable characters, no quotes or backslashes)`)
  if (!names.includes('openid')) throw new ConfigError(name, `must include openid (an OpenID Connect sign-in), got "${raw}"`)
  return names
}

/** Reads and checks the environment. Throws ConfigError naming the first bad variable. */
export function loadConfig(env: Env = process.env): Config {
  const maxRequestSize = text(env, 'UAGENT_MAX_REQUEST_SIZE') ?? '10mb'
  const maxRequestBytes = parseSize(maxRequestSize)
  if (maxRequestBytes === undefined) {
    throw new ConfigError('UAGENT_MAX_REQUEST_SIZE', `expected a size such as "10mb" or "512kb", got "${maxRequestSize}"`)
  }
  const adminEmail = text(env, 'UAGENT_ADMIN_EMAIL')
  if (adminEmail !== undefined && !/^[^\s@]+@[^\s@]+$/.test(adminEmail)) {
    throw new ConfigError('UAGENT_ADMIN_EMAIL', `not an email address: "${adminEmail}"`)
  }
  const adminPassword = env.UAGENT_ADMIN_PASSWORD || undefined
  if (adminPassword !== undefined && adminPassword.length < 8) {
    throw new ConfigError('UAGENT_ADMIN_PASSWORD', 'must be at least 8 characters')
  }
  const jwtSecret = env.UAGENT_JWT_SECRET || undefined
  if (jwtSecret !== undefined && jwtSecret.length < 32) {
    throw new ConfigError('UAGENT_JWT_SECRET', 'must be at least 32 characters')
  }
  const port = integer(env, 'PORT', 3000, 0, 65535)
  // Single sign-on (docs/single-sign-on.md): a provider is either complete or absent.
  const oidcIssuer = issuer(env, 'UAGENT_OIDC_ISSUER')
  const oidcClientId = text(env, 'UAGENT_OIDC_CLIENT_ID')
  if (oidcIssuer && !oidcClientId) throw new ConfigError('UAGENT_OIDC_CLIENT_ID', 'must be set with UAGENT_OIDC_ISSUER')
  if (!oidcIssuer && oidcClientId) throw new ConfigError('UAGENT_OIDC_ISSUER', 'must be set with UAGENT_OIDC_CLIENT_ID')
  const ldapUrl = serviceUrl(env, 'UAGENT_LDAP_URL', ['ldap:', 'ldaps:'], 'an LDAP URL such as ldap://host:389 or ldaps://host:636')
  const ldapUserBase = text(env, 'UAGENT_LDAP_USER_BASE')
  if (ldapUrl && !ldapUserBase) throw new ConfigError('UAGENT_LDAP_USER_BASE', 'must be set with UAGENT_LDAP_URL (where users are looked up)')
  const ldapBindDn = text(env, 'UAGENT_LDAP_BIND_DN')
  const ldapBindPassword = env.UAGENT_LDAP_BIND_PASSWORD || undefined
  if (ldapBindDn && ldapBindPassword === undefined) throw new ConfigError('UAGENT_LDAP_BIND_PASSWORD', 'must be set with UAGENT_LDAP_BIND_DN')
  const ldapUserFilter = text(env, 'UAGENT_LDAP_USER_FILTER') ?? '(mail={email})'
  if (!ldapUserFilter.includes('{email}')) throw new ConfigError('UAGENT_LDAP_USER_FILTER', 'must contain {email}, e.g. (mail={email})')
  const localLogin = toggle(env, 'UAGENT_LOCAL_LOGIN', true)
  if (!localLogin && !oidcIssuer && !ldapUrl) throw new ConfigError('UAGENT_LOCAL_LOGIN', 'off needs a single sign-on provider (UAGENT_OIDC_ISSUER or UAGENT_LDAP_URL)')
  return {
    port,
    host: text(env, 'HOST') ?? '127.0.0.1',
    dataDir: resolve(text(env, 'UAGENT_DATA_DIR') ?? './data'),
    jwtSecret,
    adminEmail,
    adminPassword,
    modelsDir: resolve(text(env, 'UAGENT_MODELS_DIR') ?? './models'),
    embedModel: text(env, 'UAGENT_EMBED_MODEL'),
    chatModel: text(env, 'UAGENT_CHAT_MODEL'),
    llmUrl: url(env, 'UAGENT_LLM_URL'),
    llmModel: text(env, 'UAGENT_LLM_MODEL'),
    llmApiKey: env.UAGENT_LLM_API_KEY || undefined,
    rateLimitMax: integer(env, 'UAGENT_RATE_LIMIT_MAX', 300, 1, 1_000_000_000),
    rateLimitWindow: integer(env, 'UAGENT_RATE_LIMIT_WINDOW', 60, 1, 86_400),
    maxRequestSize,
    maxRequestBytes,
    pluginTimeoutMs: integer(env, 'UAGENT_PLUGIN_TIMEOUT_MS', 10_000, 100, 600_000),
    extractTimeoutMs: integer(env, 'UAGENT_EXTRACT_TIMEOUT_MS', 30_000, 100, 3_600_000),
    agentConcurrency: integer(env, 'UAGENT_AGENT_CONCURRENCY', 2, 1, 64),
    agentQueueLimit: integer(env, 'UAGENT_AGENT_QUEUE_LIMIT', 100, 1, 100_000),
    agentRetentionHours: integer(env, 'UAGENT_AGENT_RETENTION_HOURS', 168, 1, 87_600),
    ingestJobAfterMs: integer(env, 'UAGENT_INGEST_JOB_AFTER_MS', 2000, 0, 600_000),
    ingestJobConcurrency: integer(env, 'UAGENT_INGEST_JOBS', 1, 0, 64),
    pluginsDir: text(env, 'UAGENT_PLUGINS_DIR') === undefined ? undefined : resolve(text(env, 'UAGENT_PLUGINS_DIR')!),
    nodePath: text(env, 'UAGENT_NODE_PATH'),
    pluginMemoryMb: integer(env, 'UAGENT_PLUGIN_MEMORY_MB', 128, 16, 16_384),
    pluginIdleMs: integer(env, 'UAGENT_PLUGIN_IDLE_MS', 300_000, 1_000, 86_400_000),
    mcpTimeoutMs: integer(env, 'UAGENT_MCP_TIMEOUT_MS', 30_000, 100, 600_000),
    mcpIdleMs: integer(env, 'UAGENT_MCP_IDLE_MS', 300_000, 1_000, 86_400_000),
    environment: text(env, 'NODE_ENV') ?? 'production',
    corsOrigins: origins(env, 'UAGENT_CORS_ORIGINS'),
    trustedProxies: proxies(env, 'UAGENT_TRUSTED_PROXIES'),
    minFreeMb: integer(env, 'UAGENT_MIN_FREE_MB', 64, 0, 100_000_000),
    backupIntervalSeconds: duration(env, 'UAGENT_BACKUP_INTERVAL'),
    backupKeep: integer(env, 'UAGENT_BACKUP_KEEP', 7, 1, 1000),
    analyticsEnabled: toggle(env, 'UAGENT_ANALYTICS', true),
    analyticsRetentionDays: integer(env, 'UAGENT_ANALYTICS_RETENTION_DAYS', 30, 1, 3650),
    auditRetentionDays: integer(env, 'UAGENT_AUDIT_RETENTION_DAYS', 365, 1, 36_500),
    metricsToken: text(env, 'UAGENT_METRICS_TOKEN'),
    audioDir: resolve(text(env, 'UAGENT_AUDIO_DIR') ?? `${text(env, 'UAGENT_DATA_DIR') ?? './data'}/audio`),
    audioRetentionMs: integer(env, 'UAGENT_AUDIO_RETENTION_HOURS', 24, 1, 24 * 365) * 3600_000,
    speechModelDir: resolve(text(env, 'UAGENT_SPEECH_MODEL_DIR') ?? '/usr/share/pocketsphinx/model/en-us'),
    databaseUrl: serviceUrl(env, 'UAGENT_DATABASE_URL', ['postgres:', 'postgresql:'], 'a PostgreSQL URL such as postgres://user:password@host:5432/database'),
    databasePool: integer(env, 'UAGENT_DATABASE_POOL', 20, 1, 1000),
    maxActiveRequests: integer(env, 'UAGENT_MAX_ACTIVE_REQUESTS', 16, 0, 100_000),
    redisUrl: serviceUrl(env, 'UAGENT_REDIS_URL', ['redis:', 'rediss:'], 'a Redis URL such as redis://host:6379'),
    workers: integer(env, 'UAGENT_WORKERS', defaultWorkers(), 1, 256),
    workQueue: integer(env, 'UAGENT_WORK_QUEUE', DEFAULT_WORK_QUEUE, 0, 100_000),
    vectorCacheMb: integer(env, 'UAGENT_VECTOR_CACHE_MB', DEFAULT_VECTOR_CACHE_MB, 0, 1_048_576),
    keywordPostingsMb: integer(env, 'UAGENT_KEYWORD_POSTINGS_MB', 128, 0, 1_048_576),
    annMinChunks: integer(env, 'UAGENT_ANN_MIN_CHUNKS', DEFAULT_ANN_MIN_CHUNKS, 1, 1_000_000_000),
    annExpansion: integer(env, 'UAGENT_ANN_EXPANSION', DEFAULT_ANN_EXPANSION, 16, 65_536),
    vectorIndex: toggle(env, 'UAGENT_VECTOR_INDEX', true),
    instanceId: text(env, 'UAGENT_INSTANCE_ID') ?? (port === 0 ? `${hostname()}-${process.pid}` : `${hostname()}:${port}`),
    publicUrl: url(env, 'UAGENT_PUBLIC_URL'),
    oidcIssuer,
    oidcClientId,
    oidcClientSecret: env.UAGENT_OIDC_CLIENT_SECRET || undefined,
    oidcName: text(env, 'UAGENT_OIDC_NAME'),
    oidcGroupsClaim: text(env, 'UAGENT_OIDC_GROUPS_CLAIM') ?? 'groups',
    oidcAdminGroups: groupNames(env, 'UAGENT_OIDC_ADMIN_GROUPS'),
    oidcScopes: scopes(env, 'UAGENT_OIDC_SCOPES'),
    ldapUrl,
    ldapBindDn,
    ldapBindPassword,
    ldapUserBase,
    ldapUserFilter,
    ldapGroupBase: text(env, 'UAGENT_LDAP_GROUP_BASE'),
    ldapAdminGroups: groupNames(env, 'UAGENT_LDAP_ADMIN_GROUPS'),
    localLogin,
  }
}

