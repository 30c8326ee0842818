import type { Database } from 'bun:sqlite'
import pkg from '../../../package.json'
import { formatBytes, freeBytes } from '../../core/storage'
import type { WorkPoolState } from '../../core/work-pool'
import type { Static } from 'elysia'
import type { SystemInfoResponse } from './model'

export interface Features {
  rag: boolean
  voice: boolean
  plugins: boolean
  multiAgent: boolean
}

/** What /health reports about the model engines (see src/ml): their state and the active ids. */
export interface EngineStatusSource {
  status(): { embedder: string; llm: string; embedderId: string; generatorId: string; embedderReason?: string; llmReason?: string }
  /** Re-checks a remote model server; absent when there is none. */
  check?(): Promise<void>
}

export interface SystemDeps {
  db: Database
  /** PostgreSQL's state when UAGENT_DATABASE_URL is set (see PostgresMonitor): `problem` is null while it answers. */
  postgres?: { readonly problem: string | null }
  /** Redis (UAGENT_REDIS_URL), when replicas share it. */
  redis?: { readonly problem: string | null }
  engines?: EngineStatusSource
  /** The work pool, whose state /health shows. */
  pool?: { state(): WorkPoolState }
  features: Features
  maxRequestSize: string
  rateLimit: { window: number; max: number }
  environment: string
  startedAt: number
  /** Where the data lives (free space is reported for it); none for an in-memory server. */
  dataDir?: string | null
  /** Free bytes below which /health is degraded (UAGENT_MIN_FREE_MB). */
  minFreeBytes?: number
  /**
   * Which path serves vector search (`/health` connections.vectorSearch, `/system/info` vectorSearch):
   * on SQLite `usearch` (large collections through their approximate index) or `exact`, with why.
   */
  vectorSearch?: () => VectorSearchInfo
}

/** What /system/info says of vector search (SystemInfoResponse.vectorSearch). */
export type VectorSearchInfo = NonNullable<Static<typeof SystemInfoResponse>['vectorSearch']>

/** Pages a write may need beyond the current end of the database; fewer left counts as full. */
const SPARE_PAGES = 16

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

  /** When a write last failed for want of storage (cleared once there is room again). */
  private fullSince: number | null = null

  /** Told by the error handler that a write failed because the storage is full. */
  storageFull(): void {
    this.fullSince ??= Date.now()
    this.cached = null
  }

  /** The data dir's free bytes and whether the database can still grow; a reason when it cannot. */
  private storage(): { freeBytes: number | null; reason: string | null } {
    const free = this.deps.dataDir ? freeBytes(this.deps.dataDir) : null
    const floor = this.deps.minFreeBytes ?? 0
    if (free !== null && free < floor) {
      return { freeBytes: free, reason: `storage low: ${formatBytes(free)} free in the data dir, below the ${formatBytes(floor)} floor (UAGENT_MIN_FREE_MB); large writes are refused` }
    }
    if (this.fullSince !== null) {
      let pagesLeft = Number.POSITIVE_INFINITY
      try {
        const row = this.deps.db.query<{ max: number; count: number; free: number }, []>(
          'SELECT (SELECT max_page_count FROM pragma_max_page_count) AS max, (SELECT page_count FROM pragma_page_count) AS count, (SELECT freelist_count FROM pragma_freelist_count) AS free',
        ).get()!
        pagesLeft = row.max - row.count + row.free
      } catch {}
      if (pagesLeft > SPARE_PAGES && (free === null || free > floor)) this.fullSince = null
      else return { freeBytes: free, reason: `storage full: writes fail since ${new Date(this.fullSince).toISOString()} (${free === null ? 'free space unknown' : `${formatBytes(free)} free`}); make room in the data dir` }
    }
    return { freeBytes: free, reason: null }
  }

  private cached: { at: number; value: ReturnType<SystemService['probe']>; json: string } | null = null

  /**
   * The health document, re-probed at most every 250 ms: monitors may poll as fast as they like
   * without each poll paying for the database and engine checks.
   */
  health() {
    return this.current().value
  }

  /** Whether the health document depends on a remote check (an upstream model server). */
  get checksRemote(): boolean {
    return typeof this.deps.engines?.check === 'function'
  }

  /** The health document after the remote check (cached by the client, so polls stay cheap). */
  async healthJsonChecked(): Promise<string> {
    const before = this.deps.engines?.status().llm
    await this.deps.engines?.check?.()
    if (this.deps.engines?.status().llm !== before) this.cached = null
    return this.healthJson()
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
    const postgresProblem = this.deps.postgres?.problem ?? null
    const connections: Record<string, string> = { database, vectorStore, embedder: engines.embedder, llm: engines.llm }
    if (this.deps.postgres) connections.postgres = postgresProblem === null ? 'connected' : 'unreachable'
    const redisProblem = this.deps.redis?.problem ?? null
    if (this.deps.redis) connections.redis = redisProblem === null ? 'connected' : 'unreachable'
    if (this.deps.vectorSearch) connections.vectorSearch = this.deps.vectorSearch().path
    const storage = this.storage()
    const reasons: string[] = []
    if (postgresProblem !== null) reasons.push(`postgresql: DATABASE_UNAVAILABLE, UAGENT_DATABASE_URL cannot be reached (${postgresProblem})`)
    if (redisProblem !== null) reasons.push(`redis: UAGENT_REDIS_URL cannot be reached (${redisProblem}); rate limits are counted per replica`)
    if (database !== 'connected') reasons.push('database: not answering')
    if (vectorStore !== 'connected') reasons.push('vector store: sqlite-vec not loaded')
    if (engines.embedder === 'error') reasons.push(`embedder: ${engines.embedderReason ?? 'cannot be loaded'}`)
    if (engines.llm === 'unreachable') reasons.push(`llm: ${engines.llmReason ?? 'the upstream model server cannot be reached'}`)
    if (storage.reason) reasons.push(storage.reason)
    return {
      status: reasons.length === 0 ? 'healthy' : 'degraded',
      ...(reasons.length ? { reason: reasons.join('; ') } : {}),
      uptime: Math.floor((Date.now() - this.deps.startedAt) / 1000),
      memory: formatMegabytes(residentBytes()),
      connections,
      features: { ...this.deps.features },
      models: { embedder: engines.embedderId, generator: engines.generatorId },
      storage: { status: storage.reason === null ? 'ok' : this.fullSince !== null ? 'full' : 'low', freeBytes: storage.freeBytes },
      ...(this.deps.pool ? { workers: this.deps.pool.state() } : {}),
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
      ...(this.deps.vectorSearch ? { vectorSearch: this.deps.vectorSearch() } : {}),
    }
  }
}
