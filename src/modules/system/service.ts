import type { Database } from 'bun:sqlite'
import pkg from '../../../package.json'

export interface Features {
  rag: boolean
  voice: boolean
  plugins: boolean
  multiAgent: boolean
}

/** What /health reports about the model engines (see src/ml): their state and the active ids. */
export interface EngineStatusSource {
  status(): { embedder: string; llm: string; embedderId: string; generatorId: string }
}

export interface SystemDeps {
  db: Database
  engines?: EngineStatusSource
  features: Features
  maxRequestSize: string
  rateLimit: { window: number; max: number }
  environment: string
  startedAt: number
}

export function formatMegabytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`
}

/** Reading RSS costs a /proc read (~8 µs); health probes get a figure at most 1 s old. */
let rssSample = { at: 0, bytes: 0 }
function residentBytes(now = Date.now()): number {
  if (now - rssSample.at >= 1000) rssSample = { at: now, bytes: process.memoryUsage.rss() }
  return rssSample.bytes
}

export class SystemService {
  private readonly ping

  constructor(private readonly deps: SystemDeps) {
    this.ping = deps.db.query<{ ok: number }, []>('SELECT 1 AS ok')
  }

  private cached: { at: number; value: ReturnType<SystemService['probe']>; json: string } | null = null

  /**
   * The health document, re-probed at most every 250 ms: monitors may poll as fast as they like
   * without each poll paying for the database and engine checks.
   */
  health() {
    return this.current().value
  }

  /** The same document, serialized once per probe. */
  healthJson(): string {
    return this.current().json
  }

  private current() {
    const now = Date.now()
    if (!this.cached || now - this.cached.at >= 250) {
      const value = this.probe()
      this.cached = { at: now, value, json: JSON.stringify(value) }
    }
    return this.cached
  }

  private probe() {
    let database = 'connected'
    let vectorStore = 'connected'
    try {
      this.ping.get()
    } catch {
      database = 'error'
    }
    try {
      this.deps.db.query('SELECT vec_version()').get()
    } catch {
      vectorStore = 'error'
    }
    const engines = this.deps.engines?.status() ?? { embedder: 'builtin', llm: 'builtin', embedderId: 'builtin', generatorId: 'builtin' }
    const connections = { database, vectorStore, embedder: engines.embedder, llm: engines.llm }
    const healthy = database === 'connected' && vectorStore === 'connected' && engines.embedder !== 'error' && engines.llm !== 'unreachable'
    return {
      status: healthy ? 'healthy' : 'degraded',
      uptime: Math.floor((Date.now() - this.deps.startedAt) / 1000),
      memory: formatMegabytes(residentBytes()),
      connections,
      features: { ...this.deps.features },
      models: { embedder: engines.embedderId, generator: engines.generatorId },
    }
  }

  info() {
    return {
      version: pkg.version,
      nodeVersion: `bun ${Bun.version} (node ${process.versions.node})`,
      platform: process.platform,
      architecture: process.arch,
      environment: this.deps.environment,
      features: Object.entries(this.deps.features)
        .filter(([, enabled]) => enabled)
        .map(([name]) => name),
      limits: { maxRequestSize: this.deps.maxRequestSize, rateLimit: { ...this.deps.rateLimit } },
    }
  }
}
