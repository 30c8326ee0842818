// The agent queue shared by replicas (PostgreSQL + Redis), measured in one process with two
// AgentServices as two replicas (each its own Redis connections and bus), a model that answers at
// once: how long a task submitted on one replica waits before a replica runs it, how long an event
// takes from one replica to the other, and tasks per second through one and two replicas; then the
// same start delay with Redis down (the queue is polled every second). Needs UAGENT_DATABASE_URL
// (or UAGENT_TEST_DATABASE_URL, where a fresh database is made) and UAGENT_REDIS_URL (or
// UAGENT_TEST_REDIS_URL); skipped, saying so, without them.
import { SQL } from 'bun'
import { randomBytes } from 'node:crypto'
import { type EventBus, LocalBus, RedisBus } from '../src/core/bus'
import { openDatabase } from '../src/db'
import { openPostgres, type Postgres } from '../src/db/postgres'
import { RedisLink } from '../src/db/redis'
import type { Generator } from '../src/ml'
import { AGENTS_TOPIC, AgentService } from '../src/modules/agents/service'
import { PostgresTaskStore } from '../src/modules/agents/store.postgres'

const TEST_URL = process.env.UAGENT_TEST_DATABASE_URL?.trim()
const DB_URL = process.env.UAGENT_DATABASE_URL?.trim()
const REDIS_URL = process.env.UAGENT_REDIS_URL?.trim() || process.env.UAGENT_TEST_REDIS_URL?.trim()
const TASKS = Number(process.env.BENCH_QUEUE_TASKS ?? 200)

const instant: Generator = {
  id: 'bench/instant',
  contextLength: 4096,
  countTokens: async (text: string) => text.split(/\s+/).length,
  generate: async () => ({ text: 'done', promptTokens: 1, completionTokens: 1, finishReason: 'stop' as const }),
  async *stream() {
    yield 'done'
  },
}

const pct = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN
}
const ms = (n: number) => `${n.toFixed(1)} ms`

async function main() {
  if ((!DB_URL && !TEST_URL) || !REDIS_URL) {
    console.log('agent-replicas: skipped (needs UAGENT_DATABASE_URL or UAGENT_TEST_DATABASE_URL, and UAGENT_REDIS_URL or UAGENT_TEST_REDIS_URL)')
    return
  }
  let url = DB_URL
  let drop: (() => Promise<void>) | null = null
  if (!url) {
    const name = `uagent_bench_${randomBytes(5).toString('hex')}`
    const admin = new SQL(TEST_URL!, { max: 1 })
    await admin.unsafe(`CREATE DATABASE ${name}`)
    const target = new URL(TEST_URL!)
    target.pathname = `/${name}`
    url = target.toString()
    drop = async () => {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await admin.close()
    }
  }
  const sql: Postgres = await openPostgres(url)
  const db = openDatabase(':memory:')
  const links: RedisLink[] = []
  const replica = (name: string, bus: EventBus, concurrency: number) =>
    new AgentService({ db, store: new PostgresTaskStore(sql), rag: {} as never, generator: async () => instant, bus, instanceId: name, concurrency, queueLimit: 100_000, log: () => {} })
  const redisBus = async () => {
    const link = new RedisLink(REDIS_URL!, () => {})
    await link.start()
    links.push(link)
    return new RedisBus(link, () => {})
  }
  // Tasks name their user by foreign key.
  const caller = { userId: crypto.randomUUID(), roles: ['user'] }
  await sql`INSERT INTO users (id, email, password_hash, roles, created_at) VALUES (${caller.userId}, ${`bench-${caller.userId}@example.com`}, 'x', '["user"]', ${new Date().toISOString()})`

  // Start delay and event latency: one task at a time, submitted on A, run by whichever replica; B hears.
  const [busA, busB] = [await redisBus(), await redisBus()]
  const a = replica('a', busA, 2)
  const b = replica('b', busB, 2)
  await Bun.sleep(300)
  const heardAt = new Map<string, number>()
  const sentAt = new Map<string, number>()
  const key = (event: Record<string, unknown>) => `${event.taskId}:${event.status}:${event.progress}:${event.currentAgent}`
  busA.subscribe(AGENTS_TOPIC, (event) => event.kind === 'update' && (sentAt.has(key(event)) ? heardAt.set(key(event), performance.now()) : sentAt.set(key(event), performance.now())))
  busB.subscribe(AGENTS_TOPIC, (event) => event.kind === 'update' && (sentAt.has(key(event)) ? heardAt.set(key(event), performance.now()) : sentAt.set(key(event), performance.now())))
  const startDelays: number[] = []
  for (let i = 0; i < 50; i++) {
    const t0 = performance.now()
    const { taskId } = await a.submit(caller, { task: `probe ${i}`, agents: ['writer'] })
    const started = await new Promise<number>((resolve) => {
      const stop = busB.subscribe(AGENTS_TOPIC, (event) => {
        if (event.taskId === taskId && event.status === 'running') {
          stop()
          resolve(performance.now())
        }
      })
    })
    startDelays.push(started - t0)
    await Bun.sleep(20)
  }
  const crossings = [...heardAt].map(([k, at]) => at - sentAt.get(k)!)
  console.log(`agent-replicas: submit on A → running announced (either replica runs it), 50 tasks: p50 ${ms(pct(startDelays, 50))}, p99 ${ms(pct(startDelays, 99))}`)
  console.log(`agent-replicas: an event from one replica to the other through Redis, ${crossings.length} events: p50 ${ms(pct(crossings, 50))}, p99 ${ms(pct(crossings, 99))}`)

  // Throughput: TASKS one-agent tasks through one replica, then through two (concurrency 2 each).
  const drain = async (services: AgentService[], label: string) => {
    const t0 = performance.now()
    const ids = await Promise.all(Array.from({ length: TASKS }, (_, i) => Promise.resolve(services[i % services.length]!.submit(caller, { task: `load ${i}`, agents: ['writer'] })).then((r) => r.taskId)))
    for (;;) {
      const [row]: { n: number }[] = await sql`SELECT count(*)::int AS n FROM agent_tasks WHERE id IN ${sql(ids)} AND status IN ('queued', 'running')`
      if (!row!.n) break
      await Bun.sleep(20)
    }
    const seconds = (performance.now() - t0) / 1000
    console.log(`agent-replicas: ${TASKS} tasks through ${label}: ${(TASKS / seconds).toFixed(0)} tasks/s`)
  }
  b.close()
  await drain([a], 'one replica')
  const b2 = replica('b2', busB, 2)
  await drain([a, b2], 'two replicas')
  a.close()
  b2.close()

  // Redis down: each replica its own bus, nothing crosses; B runs what A queues (A has no free slot).
  const front = replica('front', new LocalBus(() => {}), 0)
  const worker = replica('worker', new LocalBus(() => {}), 2)
  const polled: number[] = []
  for (let i = 0; i < 10; i++) {
    const t0 = performance.now()
    const { taskId } = await front.submit(caller, { task: `polled ${i}`, agents: ['writer'] })
    for (;;) {
      const row = await front.store.get(taskId)
      if (row && row.status !== 'queued') break
      await Bun.sleep(5)
    }
    polled.push(performance.now() - t0)
  }
  console.log(`agent-replicas: Redis down, submit on A → running on B (polled every 1 s), 10 tasks: p50 ${ms(pct(polled, 50))}, max ${ms(Math.max(...polled))}`)
  front.close()
  worker.close()
  for (const bus of [busA, busB]) bus.close()
  for (const link of links) link.close()
  await sql.close()
  await drop?.()
}

await main()
process.exit(0)
