import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { emptyPostgresDatabase } from '../postgres'
import { killGroup, trackProcess } from '../processes'
import { startRedis, type TestRedis } from '../redis'

export const CLUSTER_ADMIN = { email: 'admin@replicas.test', password: 'admin-password-1' }
const root = join(import.meta.dir, '..', '..')

export interface Replica {
  name: string
  base: string
  ws: string
  proc: Bun.Subprocess<'ignore', 'pipe', 'pipe'>
  dataDir: string
  /** What the server wrote on stderr so far. */
  log(): string
  /** SIGKILL to the server and what it started, as a crash would. */
  kill(): Promise<void>
  call(method: string, path: string, init?: { token?: string; body?: unknown }): Promise<{ status: number; json: any; text: string; headers: Headers }>
}

export interface Cluster {
  replicas: Replica[]
  databaseUrl: string
  redis: TestRedis
  stop(): Promise<void>
}

/**
 * `count` servers as `bun run start` runs them (processes of their own, on free ports), each with its
 * own empty data dir, on one new PostgreSQL database and one Redis, started at the same moment.
 */
export async function startCluster(count: number, env: Record<string, string> = {}): Promise<Cluster> {
  const database = await emptyPostgresDatabase()
  const redis = await startRedis()
  const started = await Promise.allSettled(
    Array.from({ length: count }, (_, i) =>
      startReplica(`replica-${String.fromCharCode(97 + i)}`, {
        UAGENT_DATABASE_URL: database.url,
        UAGENT_REDIS_URL: redis.url,
        UAGENT_ADMIN_EMAIL: CLUSTER_ADMIN.email,
        UAGENT_ADMIN_PASSWORD: CLUSTER_ADMIN.password,
        ...env,
      }),
    ),
  )
  const failed = started.find((outcome) => outcome.status === 'rejected')
  const replicas = started.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []))
  if (failed) {
    // Nothing of a cluster that did not start is left running.
    for (const replica of replicas) await replica.kill()
    await redis.stop()
    throw failed.reason
  }
  return {
    replicas,
    databaseUrl: database.url,
    redis,
    async stop() {
      for (const replica of replicas) await replica.kill()
      await redis.stop()
    },
  }
}

async function startReplica(name: string, env: Record<string, string>): Promise<Replica> {
  const dataDir = mkdtempSync(join(tmpdir(), `uagent-${name}-`))
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('UAGENT_')))
  // A process group of its own: killed, it takes what it started (plugins, MCP servers) with it.
  const proc = Bun.spawn(['bun', join(root, 'src/index.ts')], {
    cwd: root,
    detached: true,
    env: { ...inherited, PORT: '0', UAGENT_DATA_DIR: dataDir, UAGENT_INSTANCE_ID: name, ...env },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  trackProcess(proc, true)
  let errors = ''
  void (async () => {
    for await (const chunk of proc.stderr) errors += new TextDecoder().decode(chunk)
  })()
  const reader = proc.stdout.getReader()
  let output = ''
  while (!/listening on (http:\/\/\S+)/.test(output)) {
    const { value, done } = await reader.read()
    if (done) {
      await proc.exited
      throw new Error(`${name} exited before listening (status ${proc.exitCode}): ${output}${errors}`)
    }
    output += new TextDecoder().decode(value)
  }
  void (async () => {
    for (;;) if ((await reader.read()).done) break
  })()
  const base = /listening on (http:\/\/\S+)/.exec(output)![1]!.replace('0.0.0.0', '127.0.0.1')
  return {
    name,
    base,
    ws: `${base.replace(/^http/, 'ws')}/ws`,
    proc,
    dataDir,
    log: () => errors,
    async kill() {
      killGroup(proc.pid)
      await proc.exited
      rmSync(dataDir, { recursive: true, force: true })
    },
    async call(method, path, init = {}) {
      const headers: Record<string, string> = {}
      if (init.token) headers.authorization = `Bearer ${init.token}`
      let body: string | undefined
      if (init.body !== undefined) {
        headers['content-type'] = 'application/json'
        body = JSON.stringify(init.body)
      }
      const response = await fetch(`${base}${path}`, { method, headers, body })
      const text = await response.text()
      let json: any
      try {
        json = text ? JSON.parse(text) : undefined
      } catch {}
      return { status: response.status, json, text, headers: response.headers }
    },
  }
}

/** Polls `check` until it returns true; how long that took (ms), or null after `limitMs`. */
export async function within(limitMs: number, check: () => Promise<boolean>): Promise<number | null> {
  const started = performance.now()
  for (;;) {
    if (await check()) return performance.now() - started
    if (performance.now() - started > limitMs) return null
    await Bun.sleep(25)
  }
}
