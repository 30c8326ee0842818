import { describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import type { TaskSpec } from '../../../src/modules/agents/orchestrate'
import type { TaskStore } from '../../../src/modules/agents/store'
import { PostgresTaskStore } from '../../../src/modules/agents/store.postgres'
import { SqliteTaskStore } from '../../../src/modules/agents/store.sqlite'
import { describeBackends, freshPostgres, deleteTestUser, insertTestUser, POSTGRES_SKIPPED, type TestBackend, TEST_DATABASE_URL } from '../../postgres'
import { agentServer, pollTask, TokenGenerator } from './fakes'

function tasksOf(backend: TestBackend): { store: TaskStore; user(): Promise<string> } {
  const user = () => insertTestUser(backend)
  return { store: backend.kind === 'postgres' ? new PostgresTaskStore(backend.sql) : new SqliteTaskStore(backend.db), user }
}

const spec = (task: string): TaskSpec => ({ task, agents: ['researcher', 'writer'], parallel: false, maxIterations: 2, collections: null })
const result = (agent: string) => ({ agent, output: `${agent} output`, confidence: 0.5, executionTime: 12 }) as never

describeBackends('agent task store', (backend) => {
  test('a task goes queued → running → completed once; updates touch only a running task; owners only', async () => {
    const { store, user } = tasksOf(backend())
    const owner = await user()
    const id = randomUUID()
    await store.create(id, owner, spec('Write a note'))
    expect(await store.find(await user(), id)).toBeNull()
    expect(await store.find(owner, id)).toMatchObject({ id, user_id: owner, status: 'queued', task: 'Write a note', progress: 0, results: '[]', iterations: 0 })
    expect(JSON.parse((await store.get(id))!.request)).toEqual({ agents: ['researcher', 'writer'], parallel: false, maxIterations: 2, collections: null })
    await store.progress(id, 50, 'researcher', [result('researcher')])
    expect((await store.get(id))!.progress).toBe(0)
    expect(await store.start(id)).toBe(true)
    expect(await store.start(id)).toBe(false)
    await store.current(id, 'researcher')
    expect((await store.get(id))!.current_agent).toBe('researcher')
    await store.progress(id, 50, null, [result('researcher')])
    expect(await store.complete(id, { results: [result('researcher'), result('writer')], finalSynthesis: 'done', confidence: 0.75, iterations: 2, totalExecutionTime: 1234 })).toBe(true)
    const done = (await store.get(id))!
    expect(done).toMatchObject({ status: 'completed', progress: 100, current_agent: null, final_synthesis: 'done', confidence: 0.75, iterations: 2, total_execution_time: 1234 })
    expect(JSON.parse(done.results)).toHaveLength(2)
    expect(done.started_at! <= done.ended_at!).toBe(true)
    // An ended task stays as it ended.
    expect(await store.end(id, 'cancelled', 'too late')).toBe(false)
    expect(await store.complete(id, { results: [], finalSynthesis: 'again', confidence: 0, iterations: 0, totalExecutionTime: 0 })).toBe(false)
    expect((await store.get(id))!.final_synthesis).toBe('done')
  })

  test('list: newest first, paged, filtered by status; counts; a restart fails running tasks and keeps queued ones; prune; a user’s tasks deleted', async () => {
    const { store, user } = tasksOf(backend())
    const owner = await user()
    const other = await user()
    const ids: string[] = []
    for (let i = 0; i < 4; i++) {
      const id = randomUUID()
      await store.create(id, owner, spec(`task ${i}`))
      ids.push(id)
    }
    await store.create(randomUUID(), other, spec('not yours'))
    await store.start(ids[1]!)
    await store.end(ids[2]!, 'cancelled', 'Cancelled by the user')
    const page = await store.list(owner, 2, 0)
    expect(page.total).toBe(4)
    expect(page.rows.map((row) => row.task)).toEqual(['task 3', 'task 2'])
    expect((await store.list(owner, 10, 2)).rows.map((row) => row.task)).toEqual(['task 1', 'task 0'])
    const cancelled = await store.list(owner, 10, 0, 'cancelled')
    expect(cancelled).toMatchObject({ total: 1, rows: [{ id: ids[2], error: 'Cancelled by the user' }] })
    const counts = await store.counts()
    expect(counts.queued).toBeGreaterThanOrEqual(3)
    expect(counts.cancelled).toBeGreaterThanOrEqual(1)

    // A restart: the running task is failed with the reason; the queued ones stay queued, in order, with their callers' roles.
    expect(await store.failOrphans()).toBeGreaterThanOrEqual(1)
    const orphan = (await store.get(ids[1]!))!
    expect(orphan).toMatchObject({ status: 'failed', error: 'The server stopped before this task finished' })
    expect((await store.get(ids[0]!))!.status).toBe('queued')
    const waiting = (await store.waiting()).filter((row) => row.user_id === owner)
    expect(waiting.map((row) => row.id)).toEqual([ids[0]!, ids[3]!])
    const withRoles = randomUUID()
    await store.create(withRoles, owner, spec('an admin’s'), ['admin', 'user'])
    expect(JSON.parse((await store.waiting()).find((row) => row.id === withRoles)!.caller_roles)).toEqual(['admin', 'user'])
    for (const id of [ids[0]!, ids[3]!, withRoles]) await store.end(id, 'cancelled', null)
    expect(await store.prune(new Date(Date.now() + 60_000).toISOString())).toBeGreaterThanOrEqual(5)
    expect((await store.list(owner, 10, 0)).total).toBe(0)

    await store.create(randomUUID(), owner, spec('kept?'))
    await store.create(randomUUID(), other, spec('kept'))
    await deleteTestUser(backend(), owner)
    expect((await store.list(owner, 10, 0)).total).toBe(0)
    // The other user's: 'not yours' (still queued: no restart fails a queued task) and 'kept'.
    expect((await store.list(other, 10, 0)).rows.map((row) => row.task)).toEqual(['kept', 'not yours'])
  })
})

describe.skipIf(!TEST_DATABASE_URL)(`agent tasks over HTTP on PostgreSQL${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('an async task runs to completion, a waiting one answers with its result, a queued one is cancelled; all in PostgreSQL', async () => {
    const postgres = await freshPostgres()
    const server = agentServer(new TokenGenerator(150), { concurrency: 1, store: new PostgresTaskStore(postgres) }, { postgres })
    const { accessToken: token } = await server.login()
    const first = await server.call('POST', '/agents/execute', { token, body: { task: 'First task', agents: ['researcher', 'writer'], async: true } })
    expect(first.status).toBe(202)
    const second = await server.call('POST', '/agents/execute', { token, body: { task: 'Second task', agents: ['writer'], async: true } })
    const cancelled = await server.call('DELETE', `/agents/task/${second.json.taskId}`, { token })
    expect(cancelled.json).toEqual({ success: true, taskId: second.json.taskId, status: 'cancelled' })
    expect((await server.call('DELETE', `/agents/task/${second.json.taskId}`, { token })).status).toBe(409)

    const states = await pollTask(server, token, first.json.taskId)
    expect(states.some((state) => state.status === 'running')).toBe(true)
    const last = states.at(-1)
    expect(last).toMatchObject({ status: 'completed', progress: 100 })
    expect(last.results.map((r: { agent: string }) => r.agent)).toEqual(['researcher', 'writer'])

    const waited = await server.call('POST', '/agents/execute', { token, body: { task: 'Third task', agents: ['writer'] } })
    expect(waited.status).toBe(200)
    expect(waited.json.finalSynthesis).toContain('reply-')

    const listed = await server.call('GET', '/agents/tasks', { token })
    expect(listed.json.total).toBe(3)
    expect(listed.json.tasks.map((task: { status: string }) => task.status)).toEqual(['completed', 'cancelled', 'completed'])
    const rows: { status: string }[] = await postgres`SELECT status FROM agent_tasks ORDER BY seq`
    expect(rows.map((row) => row.status)).toEqual(['completed', 'cancelled', 'completed'])
    expect(server.services.db.query('SELECT count(*) AS n FROM agent_tasks').get()).toEqual({ n: 0 })
    expect((await server.call('GET', '/agents/task/00000000-0000-4000-8000-000000000000', { token })).status).toBe(404)
    server.services.agents.close()
  })
})
