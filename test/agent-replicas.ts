import { buildApp, startServices, type Services } from '../src/app'
import { AgentService } from '../src/modules/agents/service'
import { PostgresTaskStore } from '../src/modules/agents/store.postgres'
import { shutdown } from '../src/shutdown'
import { ADMIN, tempDir } from './helpers'
import { TokenGenerator } from './modules/agents/fakes'

export const REPLICA_SECRET = 'replica-secret-'.repeat(3)

export interface ReplicaOptions {
  /** The instance id (UAGENT_INSTANCE_ID). */
  name: string
  databaseUrl: string
  redisUrl: string
  /** Each model call of the fake model takes this long. */
  delayMs: number
  concurrency?: number
  heartbeatMs?: number
  staleMs?: number
  dataDir?: string
  /** Where the replica's log lines go (default: nowhere, or stderr with HLOG set). */
  log?: (line: string) => void
}

/**
 * One replica as a deployment runs it: startServices() from UAGENT_DATABASE_URL and
 * UAGENT_REDIS_URL, its own data dir, the shared JWT secret and first admin, listening on a port;
 * its agents answer with a fake model (TokenGenerator) that takes `delayMs` per call.
 */
export async function startReplica(options: ReplicaOptions) {
  const dataDir = options.dataDir ?? tempDir(`replica-${options.name}`)
  const log = options.log ?? (process.env.HLOG ? (line: string) => console.error(`[${options.name}] ${line}`) : () => {})
  const services = await startServices({
    env: { UAGENT_DATABASE_URL: options.databaseUrl, UAGENT_REDIS_URL: options.redisUrl, UAGENT_INSTANCE_ID: options.name },
    dataDir,
    adminEmail: ADMIN.email,
    adminPassword: ADMIN.password,
    jwtSecret: REPLICA_SECRET,
    // The tests poll task states often; rate limits are not what they look at.
    rateLimitMax: 1_000_000_000,
    log,
  })
  const generator = new TokenGenerator(options.delayMs)
  services.agents.close()
  services.agents = new AgentService({
    db: services.db,
    store: new PostgresTaskStore(services.postgres!),
    rag: services.rag,
    generator: async () => generator,
    tools: services.tools,
    bus: services.bus,
    instanceId: options.name,
    concurrency: options.concurrency ?? 1,
    ...(options.heartbeatMs ? { heartbeatMs: options.heartbeatMs } : {}),
    ...(options.staleMs ? { staleMs: options.staleMs } : {}),
    log,
  })
  const app = buildApp(services).listen({ hostname: '127.0.0.1', port: 0 })
  const port = app.server!.port!
  return { name: options.name, services, generator, app, port, dataDir, ...client(port), stop: () => shutdown(app, services, 1000) }
}

/** HTTP calls to a server listening on `port`. */
export function client(port: number) {
  async function call(method: string, path: string, init: { token?: string; body?: unknown } = {}) {
    const headers: Record<string, string> = {}
    if (init.token) headers.authorization = `Bearer ${init.token}`
    if (init.body !== undefined) headers['content-type'] = 'application/json'
    const response = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) })
    const text = await response.text()
    let json: any
    try {
      json = text ? JSON.parse(text) : undefined
    } catch {}
    return { status: response.status, json, text }
  }
  async function login(email = ADMIN.email, password = ADMIN.password): Promise<{ accessToken: string; user: { id: string } }> {
    const res = await call('POST', '/auth/login', { body: { email, password } })
    if (res.status !== 200) throw new Error(`login on port ${port} failed: ${res.status} ${res.text}`)
    return res.json
  }
  return { call, login }
}

