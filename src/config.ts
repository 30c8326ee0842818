import { resolve } from 'node:path'

/** Everything the server reads from its environment, checked once. */
export interface Config {
  port: number
  host: string
  dataDir: string
  /** HS256 key; undefined means "generated once and kept in the data dir". */
  jwtSecret?: string
  adminEmail?: string
  adminPassword?: string
  modelsDir: string
  embedModel?: string
  chatModel?: string
  llmUrl?: string
  llmModel?: string
  llmApiKey?: string
  rateLimitMax: number
  /** Seconds. */
  rateLimitWindow: number
  /** As configured, e.g. "10mb". */
  maxRequestSize: string
  maxRequestBytes: number
  pluginTimeoutMs: number
  /** Agent tasks run at once; more wait as queued. */
  agentConcurrency: number
  /** Queued agent tasks beyond which a new one is 429 QUEUE_FULL. */
  agentQueueLimit: number
  /** Hours a finished agent task is kept. */
  agentRetentionHours: number
  /** Installed plugins live in `<pluginsDir>/<name>/`; undefined means `<dataDir>/plugins`. */
  pluginsDir?: string
  /** Node.js that runs installed plugins (default: `node` on PATH). */
  nodePath?: string
  /** Heap bound of each plugin worker (MB). */
  pluginMemoryMb: number
  /** A plugin worker with nothing to do is stopped after this long (ms). */
  pluginIdleMs: number
  environment: string
  /** Where synthesized audio is kept (default `<dataDir>/audio`). */
  audioDir: string
  /** How long synthesized audio is kept, in milliseconds. */
  audioRetentionMs: number
  /** pocketsphinx's English model folder (Debian's pocketsphinx-en-us). */
  speechModelDir: string
}

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
  return {
    port: integer(env, 'PORT', 3000, 0, 65535),
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
    agentConcurrency: integer(env, 'UAGENT_AGENT_CONCURRENCY', 2, 1, 64),
    agentQueueLimit: integer(env, 'UAGENT_AGENT_QUEUE_LIMIT', 100, 1, 100_000),
    agentRetentionHours: integer(env, 'UAGENT_AGENT_RETENTION_HOURS', 168, 1, 87_600),
    pluginsDir: text(env, 'UAGENT_PLUGINS_DIR') === undefined ? undefined : resolve(text(env, 'UAGENT_PLUGINS_DIR')!),
    nodePath: text(env, 'UAGENT_NODE_PATH'),
    pluginMemoryMb: integer(env, 'UAGENT_PLUGIN_MEMORY_MB', 128, 16, 16_384),
    pluginIdleMs: integer(env, 'UAGENT_PLUGIN_IDLE_MS', 300_000, 1_000, 86_400_000),
    environment: text(env, 'NODE_ENV') ?? 'production',
    audioDir: resolve(text(env, 'UAGENT_AUDIO_DIR') ?? `${text(env, 'UAGENT_DATA_DIR') ?? './data'}/audio`),
    audioRetentionMs: integer(env, 'UAGENT_AUDIO_RETENTION_HOURS', 24, 1, 24 * 365) * 3600_000,
    speechModelDir: resolve(text(env, 'UAGENT_SPEECH_MODEL_DIR') ?? '/usr/share/pocketsphinx/model/en-us'),
  }
}
