import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { randomUUID } from 'node:crypto'
import { LocalBus } from '../../../src/core/bus'
import { AppError } from '../../../src/core/errors'
import { openDatabase } from '../../../src/db'
import type { TaskSpec } from '../../../src/modules/agents/orchestrate'
import { AgentService } from '../../../src/modules/agents/service'
import { STALE } from '../../../src/modules/agents/store'
import { PostgresTaskStore } from '../../../src/modules/agents/store.postgres'
import { RagService } from '../../../src/modules/rag/service'
import { freshPostgres, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../../postgres'
import { TokenGenerator } from './fakes'

/** A user in PostgreSQL, whose tables name users by foreign key. */
async function pgUser(sql: Awaited<ReturnType<typeof freshPostgres>>): Promise<string> {
  const id = randomUUID()
  await sql`INSERT INTO users (id, email, password_hash, roles, created_at) VALUES (${id}, ${`${id}@example.com`}, 'x', '["user"]', ${new Date().toISOString()})`
  return id
}

const spec = (task: string): TaskSpec => ({ task, agents: ['writer'], parallel: false, maxIterations: 1, collections: null })

describe.skipIf(!TEST_DATABASE_URL)(`the agent queue shared in PostgreSQL${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('claims take the oldest queued task, each once, even at the same moment; heartbeat, stale sweep and hand-back', async () => {
    const sql = await freshPostgres()
    const store = new PostgresTaskStore(sql)
    const user = await pgUser(sql)
    const ids: string[] = []
    for (let i = 0; i < 3; i++) {
      const id = randomUUID()
      await store.create(id, user, spec(`task ${i}`), ['user', 'admin'])
      ids.push(id)
    }
    expect(await store.queuedCount()).toBe(3)
    const [one, two] = await Promise.all([store.claim('r1'), store.claim('r2')])
    expect(new Set([one!.id, two!.id])).toEqual(new Set(ids.slice(0, 2)))
    expect(one).toMatchObject({ status: 'running', caller_roles: '["user","admin"]' })
    const three = await store.claim('r1')
    expect(three!.id).toBe(ids[2]!)
    expect(await store.claim('r2')).toBeNull()
    expect(await store.queuedCount()).toBe(0)

    const mine = [one!.id, two!.id, three!.id]
    const ownedByR1 = (await sql`SELECT id FROM agent_tasks WHERE owner = 'r1' ORDER BY seq`).map((row: { id: string }) => row.id)
    expect(ownedByR1).toHaveLength(2)
    // The heartbeat answers the owner's tasks still running: a task cancelled elsewhere drops out.
    await store.end(ownedByR1[0]!, 'cancelled', 'Cancelled by the user')
    expect(await store.heartbeat('r1', mine)).toEqual([ownedByR1[1]!])

    // r2 stops beating: its task is failed once its heartbeat is older than the limit, not before.
    const r2Task = (await sql`SELECT id FROM agent_tasks WHERE owner = 'r2'`)[0].id as string
    expect(await store.failStale(15_000)).toEqual([])
    await sql`UPDATE agent_tasks SET heartbeat_at = now() - interval '16 seconds' WHERE id = ${r2Task}`
    expect(await store.failStale(15_000)).toEqual([{ id: r2Task, user_id: user }])
    expect(await store.get(r2Task)).toMatchObject({ status: 'failed', error: STALE })
    // r1 starting again: its own running task (a previous run's) is failed once it missed a heartbeat.
    expect(await store.failStale(15_000, { owner: 'r1', ms: 4000 })).toEqual([])
    await sql`UPDATE agent_tasks SET heartbeat_at = now() - interval '5 seconds' WHERE id = ${ownedByR1[1]!}`
    expect(await store.failStale(15_000, { owner: 'r3', ms: 4000 })).toEqual([])
    expect(await store.failStale(15_000, { owner: 'r1', ms: 4000 })).toEqual([{ id: ownedByR1[1]!, user_id: user }])

    const back = randomUUID()
    await store.create(back, user, spec('handed back'))
    expect((await store.claim('r3'))!.id).toBe(back)
    await store.progress(back, 50, 'writer', [])
    await store.release(back, 'someone else')
    expect((await store.get(back))!.status).toBe('running')
    await store.release(back, 'r3')
    expect(await store.get(back)).toMatchObject({ status: 'queued', progress: 0, current_agent: null, started_at: null })
    expect((await store.claim('r4'))!.id).toBe(back)
    await sql.close()
  })

  test('two services on one database, no event between them: the queue limit counts the shared queue; the other service polls and takes the tasks; a waiting execute() is answered when the other ran its task', async () => {
    const sql = await freshPostgres()
    const db: Database = openDatabase(':memory:')
    const rag = new RagService({ db, embedder: async () => { throw new Error('no embedder') }, generator: async () => { throw new Error('no generator') } } as never)
    // Each its own in-process bus: no event crosses between them (as with Redis down); polls do the work.
    const make = (name: string, generator: TokenGenerator, concurrency: number) =>
      new AgentService({ db, store: new PostgresTaskStore(sql), rag, generator: async () => generator, bus: new LocalBus(() => {}), instanceId: name, concurrency, queueLimit: 2, log: () => {} })
    const slow = new TokenGenerator(400)
    const fast = new TokenGenerator(10)
    // `front` runs nothing (its one slot is busy); `worker` runs what front queues.
    const front = make('front', slow, 1)
    const caller = { userId: await pgUser(sql), roles: ['user'] }
    const busy = await front.submit(caller, { task: 'Keeps the front busy', agents: ['writer', 'critic'] })
    for (let i = 0; i < 50 && (await front.store.get(busy.taskId))!.status !== 'running'; i++) await Bun.sleep(20)
    await front.submit(caller, { task: 'Waits one', agents: ['writer'] })
    await front.submit(caller, { task: 'Waits two', agents: ['writer'] })
    let full: unknown
    try {
      await front.submit(caller, { task: 'One too many', agents: ['writer'] })
    } catch (error) {
      full = error
    }
    expect(full).toBeInstanceOf(AppError)
    expect((full as AppError).code).toBe('QUEUE_FULL')

    const worker = make('worker', fast, 2)
    for (let i = 0; i < 100 && (await sql`SELECT count(*)::int AS n FROM agent_tasks WHERE status = 'queued'`)[0].n >= 2; i++) await Bun.sleep(20)
    const answer = await front.execute(caller, { task: 'Answered by the worker', agents: ['writer'] })
    expect(answer.finalSynthesis).toContain('reply-')
    const owner = (await sql`SELECT owner FROM agent_tasks WHERE id = ${answer.taskId}`)[0].owner
    expect(owner).toBe('worker')
    front.close()
    worker.close()
    await Bun.sleep(50)
    await sql.close({ timeout: 2 })
  }, 30_000)
})
