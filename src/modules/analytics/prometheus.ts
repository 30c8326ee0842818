import type { Database } from 'bun:sqlite'
import { collectDefaultMetrics, Counter, Gauge, Histogram, type Metric, Registry } from 'prom-client'
import type { WorkPool } from '../../core/work-pool'
import { type BatchSums, DURATION_BOUNDS } from './batch-sums'

/**
 * A Prometheus histogram fed a batch at a time. prom-client's Histogram validates and hashes the
 * labels of every observation (microseconds each, for every request); this one takes the counts
 * of a batch per series, added up by sumBatch(). The registry formats it like any metric, from get().
 */
class BatchHistogram {
  readonly type = 'histogram'
  readonly aggregator = 'sum'
  private readonly series = new Map<string, { labels: Record<string, string>; buckets: number[]; sum: number; count: number }>()

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: number[],
  ) {}

  /** Adds observations to a series: their count per bucket (bounds.length + 1 slots, the last above all bounds), sum and count. */
  add(key: string, labels: Record<string, string>, buckets: number[], sum: number, count: number): void {
    let series = this.series.get(key)
    if (!series) this.series.set(key, (series = { labels, buckets: new Array<number>(this.bounds.length).fill(0), sum: 0, count: 0 }))
    for (let i = 0; i < this.bounds.length; i++) series.buckets[i]! += buckets[i]!
    series.sum += sum
    series.count += count
  }

  /** Adds one observation to a series. */
  observe(key: string, labels: Record<string, string>, value: number): void {
    let series = this.series.get(key)
    if (!series) this.series.set(key, (series = { labels, buckets: new Array<number>(this.bounds.length).fill(0), sum: 0, count: 0 }))
    const bucket = this.bounds.findIndex((bound) => value <= bound)
    if (bucket !== -1) series.buckets[bucket]!++
    series.sum += value
    series.count++
  }

  get() {
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = []
    for (const { labels, buckets, sum, count } of this.series.values()) {
      let cumulative = 0
      for (const [i, bound] of this.bounds.entries()) {
        cumulative += buckets[i]!
        values.push({ labels: { le: bound, ...labels }, value: cumulative, metricName: `${this.name}_bucket` })
      }
      values.push({ labels: { le: '+Inf', ...labels }, value: count, metricName: `${this.name}_bucket` })
      values.push({ labels, value: sum, metricName: `${this.name}_sum` })
      values.push({ labels, value: count, metricName: `${this.name}_count` })
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator }
  }

  reset(): void {
    this.series.clear()
  }
}

/** A sample line of the exposition text with an `instance` label added (comments unchanged). */
function withInstanceLabel(line: string, instance: string): string {
  if (line === '' || line.startsWith('#')) return line
  const label = `instance="${instance.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`
  const brace = line.indexOf('{')
  const space = line.indexOf(' ')
  if (brace !== -1 && brace < space) {
    // After the series' own labels, as the registry places its default labels.
    const close = line.lastIndexOf('}')
    return `${line.slice(0, close)}${close > brace + 1 ? ',' : ''}${label}${line.slice(close)}`
  }
  return `${line.slice(0, space)}{${label}}${line.slice(space)}`
}

/** Upper bounds (seconds) of the pool-wait buckets: most queries wait 0; a saturated pool, milliseconds to a second. */
const POOL_WAIT_BOUNDS = [0, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
/** Upper bounds of the queries-per-request buckets. */
const QUERY_COUNT_BOUNDS = [0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 50]

let processRegistry: Registry | null = null

/**
 * Process-wide figures (prom-client's default metrics) in one registry for the whole process:
 * they describe the process, not an app, and their event-loop monitor should run once.
 */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry()
    collectDefaultMetrics({ register: processRegistry })
  }
  return processRegistry
}

const tableExists = (db: Database, name: string) =>
  db.query<{ found: number }, [string]>("SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== null

/**
 * The server's metrics in the Prometheus text format, in a registry of its own (several apps in
 * one process keep theirs apart). Request counts and durations are fed by the recorder as it
 * flushes; RAG chunks and agent tasks are read from the database at scrape time.
 */
export class PrometheusMetrics {
  readonly registry = new Registry()
  private readonly requests
  private readonly durations
  private readonly tokens
  private readonly droppedRecords
  private readonly poolWaits
  private readonly queriesPerRequest
  private readonly feedback

  constructor(
    db: Database,
    pending: () => number,
    /** The server's work pool: its queue depth and the time of its tasks by kind. */
    pool?: WorkPool,
    /** The memory of vector search's serving paths (see app.ts vectorSearchState). */
    vectorMemory?: () => { cacheBytes: number; cacheBudgetBytes: number; mappedBytes?: number; pendingBytes?: number },
    /** The memory of keyword top-k's kept postings (SQLite; see keyword-topk.ts). */
    keywordMemory?: () => { usedBytes: number; budgetBytes: number },
  ) {
    processMetrics()
    const registers = [this.registry]
    /** A memory gauge of what a serving path holds and what it may hold, by state (used, budget). */
    const budgetGauge = (name: string, help: string, read: () => { used: number; budget: number }) =>
      new Gauge({
        name,
        help,
        labelNames: ['state'] as const,
        registers,
        collect() {
          const { used, budget } = read()
          this.set({ state: 'used' }, used)
          this.set({ state: 'budget' }, budget)
        },
      })
    this.requests = new Counter({
      name: 'uagent_http_requests_total',
      help: 'Requests answered, by method, route pattern and status (WebSocket messages: method "WS", route the message type)',
      labelNames: ['method', 'route', 'status'] as const,
      registers,
    })
    this.durations = new BatchHistogram(
      'uagent_http_request_duration_seconds',
      'Time from arrival to the end of the response, by method, route pattern and status',
      DURATION_BOUNDS,
    )
    this.registry.registerMetric(this.durations as unknown as Metric)
    this.tokens = new Counter({
      name: 'uagent_model_tokens_total',
      help: 'Tokens processed by model calls, by model and type (prompt or completion)',
      labelNames: ['model', 'type'] as const,
      registers,
    })
    this.feedback = new Counter({
      name: 'uagent_feedback_total',
      help: 'Ratings of replies given (a rating changed counts again), by rating (up, down) and the model of the reply',
      labelNames: ['rating', 'model'] as const,
      registers,
    })
    this.droppedRecords = new Counter({
      name: 'uagent_analytics_records_dropped_total',
      help: 'Request records that could not be stored (database full or failing)',
      registers,
    })
    this.poolWaits = new BatchHistogram(
      'uagent_db_pool_wait_seconds',
      'PostgreSQL (UAGENT_DATABASE_URL): how long each query or transaction waited for one of the pool\'s UAGENT_DATABASE_POOL connections',
      POOL_WAIT_BOUNDS,
    )
    this.registry.registerMetric(this.poolWaits as unknown as Metric)
    this.queriesPerRequest = new BatchHistogram(
      'uagent_db_queries_per_request',
      'PostgreSQL (UAGENT_DATABASE_URL): queries made to answer one request, by method and route pattern (until the response is handed over)',
      QUERY_COUNT_BOUNDS,
    )
    this.registry.registerMetric(this.queriesPerRequest as unknown as Metric)
    new Gauge({
      name: 'uagent_analytics_records_pending',
      help: 'Request records waiting to be written',
      registers,
      collect() {
        this.set(pending())
      },
    })
    new Gauge({
      name: 'uagent_rag_chunks',
      help: 'Chunks stored in RAG collections, all users together',
      registers,
      collect() {
        this.set(tableExists(db, 'rag_chunks') ? db.query<{ n: number }, []>('SELECT count(*) AS n FROM rag_chunks').get()!.n : 0)
      },
    })
    new Gauge({
      name: 'uagent_rag_collections',
      help: 'RAG collections, all users together',
      registers,
      collect() {
        this.set(tableExists(db, 'rag_collections') ? db.query<{ n: number }, []>('SELECT count(*) AS n FROM rag_collections').get()!.n : 0)
      },
    })
    new Gauge({
      name: 'uagent_agent_tasks',
      help: 'Multi-agent tasks stored, by status',
      labelNames: ['status'] as const,
      registers,
      collect() {
        this.reset()
        // Every known state is reported, 0 when there are none, so series do not vanish.
        for (const status of ['queued', 'running', 'completed', 'failed']) this.set({ status }, 0)
        if (!tableExists(db, 'agent_tasks')) return
        for (const row of db.query<{ status: string; n: number }, []>('SELECT status, count(*) AS n FROM agent_tasks GROUP BY status').all()) {
          this.set({ status: row.status }, row.n)
        }
      },
    })
    new Gauge({
      name: 'uagent_process_memory_bytes',
      help: 'Memory of the server process, by type (rss, heap_used, heap_total, external)',
      labelNames: ['type'] as const,
      registers,
      collect() {
        const memory = process.memoryUsage()
        this.set({ type: 'rss' }, memory.rss)
        this.set({ type: 'heap_used' }, memory.heapUsed)
        this.set({ type: 'heap_total' }, memory.heapTotal)
        this.set({ type: 'external' }, memory.external)
      },
    })
    if (vectorMemory) {
      budgetGauge('uagent_vector_cache_bytes', 'Memory of the exact in-memory copy of large collections\' vectors, by state (used; budget: UAGENT_VECTOR_CACHE_MB)', () => {
        const memory = vectorMemory()
        return { used: memory.cacheBytes, budget: memory.cacheBudgetBytes }
      })
      new Gauge({
        name: 'uagent_vector_index_bytes',
        help: 'SQLite approximate vector indexes, by state: mapped (index files mapped read-only, served from the page cache) and pending (vectors written since, in memory)',
        labelNames: ['state'] as const,
        registers,
        collect() {
          const memory = vectorMemory()
          this.set({ state: 'mapped' }, memory.mappedBytes ?? 0)
          this.set({ state: 'pending' }, memory.pendingBytes ?? 0)
        },
      })
    }
    if (keywordMemory) {
      budgetGauge('uagent_keyword_postings_bytes', 'Postings of large SQLite collections\' common terms kept for keyword top-k, by state (used; budget: UAGENT_KEYWORD_POSTINGS_MB)', () => {
        const memory = keywordMemory()
        return { used: memory.usedBytes, budget: memory.budgetBytes }
      })
    }
    if (pool) {
      new Gauge({
        name: 'uagent_work_queue_depth',
        help: 'Tasks of the work pool waiting for a worker (beyond UAGENT_WORK_QUEUE: 503 BUSY)',
        registers,
        collect() {
          this.set(pool.queueDepth)
        },
      })
      new Gauge({
        name: 'uagent_work_workers',
        help: 'Worker threads of the work pool, by state (busy, idle; started lazily up to UAGENT_WORKERS)',
        labelNames: ['state'] as const,
        registers,
        collect() {
          const state = pool.state()
          this.set({ state: 'busy' }, state.busy)
          this.set({ state: 'idle' }, state.started - state.busy)
        },
      })
      const seconds = new Histogram({
        name: 'uagent_work_seconds',
        help: 'Time of work pool tasks on their worker, by kind (tts, transcribe, extract, ocr-check, embed, onnx-embed) and outcome (ok, failed, crashed, cancelled)',
        labelNames: ['kind', 'outcome'] as const,
        buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
        registers,
      })
      pool.onDone((done) => seconds.observe({ kind: done.kind, outcome: done.outcome }, done.seconds))
    }
  }

  /**
   * Counts a batch of records, added up per series (see batch-sums.ts): each series of the batch
   * updates its counter and histogram once.
   */
  add(sums: BatchSums): void {
    for (const { method, route, status, buckets, seconds, count } of sums.series) {
      const labels = { method, route, status: String(status) }
      this.requests.inc(labels, count)
      this.durations.add(`${method} ${route} ${status}`, labels, buckets, seconds, count)
    }
    for (const { model, prompt, completion } of sums.tokens) {
      if (prompt) this.tokens.inc({ model, type: 'prompt' }, prompt)
      if (completion) this.tokens.inc({ model, type: 'completion' }, completion)
    }
  }

  /** A reply rated (POST /conversations/{id}/messages/{messageId}/feedback). */
  rated(rating: 'up' | 'down', model: string): void {
    this.feedback.inc({ rating, model })
  }

  /**
   * Names this server among replicas: every series it exposes, the process's too, gets an
   * `instance` label (Prometheus keeps a scraped label of that name as `exported_instance`).
   */
  labelInstance(instance: string): void {
    this.instance = instance
    this.registry.setDefaultLabels({ instance })
  }

  private instance: string | null = null

  /** A PostgreSQL query or transaction waited `seconds` for a connection of the pool. */
  poolWaited(seconds: number): void {
    this.poolWaits.observe('', {}, seconds)
  }

  /** A request was answered with `count` PostgreSQL queries. */
  requestQueried(method: string, route: string, count: number): void {
    this.queriesPerRequest.observe(`${method} ${route}`, { method, route }, count)
  }

  dropped(count: number): void {
    this.droppedRecords.inc(count)
  }

  get contentType(): string {
    return this.registry.contentType
  }

  /** The exposition text: this app's metrics, then the process's (CPU, memory, event loop, heap). */
  async render(): Promise<string> {
    const instance = this.instance
    const process = (await processMetrics().metrics())
      .split('\n')
      // A figure with no samples yet (the event-loop monitor's first moments) says NaN: left out.
      .filter((line) => !/ (NaN|Nan)$/.test(line))
      .map((line) => (instance === null ? line : withInstanceLabel(line, instance)))
      .join('\n')
    return `${await this.registry.metrics()}\n${process}`
  }
}
