import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { STALE } from '../../../src/modules/agents/store'
import { client, startReplica } from '../../agent-replicas'
import { ADMIN, tempDir, until } from '../../helpers'
import { emptyPostgresDatabase, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../../postgres'
import { freePort, REDIS_SERVER, REDIS_SKIPPED, startRedis, stopRedisServers } from '../../redis'

// The Redis servers this file started stop when it ends, whether its tests passed or not.
afterAll(stopRedisServers)

type Replica = Awaited<ReturnType<typeof startReplica>>

const skipped = !TEST_DATABASE_URL ? POSTGRES_SKIPPED : !REDIS_SERVER ? REDIS_SKIPPED : null
const USER = { email: 'tasks@example.com', password: 'tasks-password-1' }
const HEARTBEAT_MS = 500
const STALE_MS = 3000
const ENDED = ['completed', 'failed', 'cancelled']

/** Two replicas on one fresh database, the same user on both (logged in on each). */
async function pair(redisUrl: string, log?: (line: string) => void) {
  const database = await emptyPostgresDatabase()
  // Started at the same moment, like replicas of a deployment.
  const [a, b] = await Promise.all(
    ['a', 'b'].map((name) =>
      startReplica({ name, databaseUrl: database.url, redisUrl, delayMs: 250, heartbeatMs: HEARTBEAT_MS, staleMs: STALE_MS, ...(log ? { log } : {}) }),
    ),
  )
  for (const replica of [a!, b!]) database.track(replica.services.postgres!)
  const admin = await a!.login()
  const created = await a!.call('POST', '/auth/users', { token: admin.accessToken, body: { ...USER, roles: ['user'] } })
  if (created.status !== 200) throw new Error(`creating the user failed: ${created.status} ${created.text}`)
  const userId = created.json.id ?? created.json.user?.id
  const tokens = new Map<Replica, string>([
    [a!, (await a!.login(USER.email, USER.password)).accessToken],
    [b!, (await b!.login(USER.email, USER.password)).accessToken],
  ])
  return { a: a!, b: b!, database, userId, token: (replica: Replica) => tokens.get(replica)! }
}

async function submit(replica: Replica, token: string, agents: string[], task = 'Plan a small garden') {
  const res = await replica.call('POST', '/agents/execute', { token, body: { task, agents, async: true } })
  expect(res.status).toBe(202)
  return res.json.taskId as string
}

async function ownerOf(replica: Replica, taskId: string): Promise<{ owner: string | null; status: string }> {
  const rows: { owner: string | null; status: string }[] = await replica.services.postgres!`SELECT owner, status FROM agent_tasks WHERE id = ${taskId}`
  return rows[0]!
}

describe.skipIf(skipped !== null)(`agent tasks across two replicas on one PostgreSQL and one Redis${skipped ? ` (${skipped})` : ''}`, () => {
  let a: Replica
  let b: Replica
  let token: (replica: Replica) => string
  let userId: string
  let databaseUrl: string
  let redisUrl: string

  beforeAll(async () => {
    redisUrl = (await startRedis()).url
    const made = await pair(redisUrl)
    ;({ a, b, token, userId } = made)
    databaseUrl = made.database.url
  }, 60_000)

  const stopped = new Set<Replica>()
  afterAll(async () => {
    await Promise.all([a, b].filter((replica) => replica && !stopped.has(replica)).map((replica) => replica.stop()))
  })

  const get = (replica: Replica, taskId: string) => replica.call('GET', `/agents/task/${taskId}`, { token: token(replica) }).then((res) => res.json)
  const other = (owner: string | null) => (owner === 'a' ? b : a)
  const named = (owner: string | null) => (owner === 'a' ? a : b)

  test('async tasks queued on A complete and are read on B; with A busy, one queued on A runs on B', async () => {
    const first = await submit(a, token(a), ['researcher', 'analyst', 'writer'], 'First task')
    const second = await submit(a, token(a), ['writer'], 'Second task')
    for (const taskId of [first, second]) {
      const task = await until(() => get(b, taskId), (task) => ENDED.includes(task.status))
      expect(task.status).toBe('completed')
      expect(task.finalSynthesis).toContain('reply-')
    }
    expect((await get(b, second)).results.map((r: { agent: string }) => r.agent)).toEqual(['writer'])
    expect((await get(b, first)).results.map((r: { agent: string }) => r.agent)).toEqual(['researcher', 'analyst', 'writer'])
    // Each replica has one slot: both worked, one of them on a task queued on the other.
    const owners = new Set([(await ownerOf(a, first)).owner, (await ownerOf(a, second)).owner])
    expect(owners).toEqual(new Set(['a', 'b']))
    const listed = await b.call('GET', '/agents/tasks', { token: token(b) })
    expect(listed.json.tasks.map((task: { taskId: string }) => task.taskId)).toEqual(expect.arrayContaining([first, second]))
  }, 30_000)

  test('a cancel on the replica that is not running the task stops the run on the one that is', async () => {
    const taskId = await submit(a, token(a), ['researcher', 'analyst', 'writer', 'critic', 'planner', 'summarizer'], 'Long task to cancel')
    const running = await until(() => ownerOf(a, taskId), (row) => row.status === 'running')
    expect(running.status).toBe('running')
    const owner = named(running.owner)
    const canceller = other(running.owner)
    // Cancelled while a reply is being generated, early in it (not in the moment between two agents,
    // when there is nothing to abort): the bus must reach the owner within the rest of it.
    const generating = await until(async () => ({ active: owner.generator.active, since: Date.now() - owner.generator.lastStart }), ({ active, since }) => active > 0 && since < 60, 10_000)
    expect(generating.active).toBeGreaterThan(0)
    const abortedBefore = owner.generator.aborted
    const callsBefore = owner.generator.calls
    const cancelled = await canceller.call('DELETE', `/agents/task/${taskId}`, { token: token(canceller) })
    expect(cancelled.json).toEqual({ success: true, taskId, status: 'cancelled' })
    // The owner stops generating at once (the bus told it), and the task stays cancelled.
    const aborted = await until(async () => owner.generator.aborted, (n) => n > abortedBefore, 3000)
    expect(aborted).toBeGreaterThan(abortedBefore)
    await Bun.sleep(600)
    expect(owner.generator.calls).toBeLessThanOrEqual(callsBefore + 1)
    expect((await get(owner, taskId)).status).toBe('cancelled')
    expect((await get(canceller, taskId)).status).toBe('cancelled')
  }, 30_000)

  test('a WebSocket client on one replica receives the progress and the end of a task running on the other', async () => {
    const taskId = await submit(a, token(a), ['researcher', 'analyst', 'writer'], 'Task followed over a socket')
    const { owner } = await until(() => ownerOf(a, taskId), (row) => row.owner !== null)
    const follower = other(owner)
    expect(follower.name).not.toBe(owner)
    const socket = new WebSocket(`ws://127.0.0.1:${follower.port}/ws`)
    const inbox: any[] = []
    socket.onmessage = (event) => inbox.push(JSON.parse(String(event.data)))
    await new Promise((resolve) => (socket.onopen = resolve))
    socket.send(JSON.stringify({ type: 'auth', token: token(follower) }))
    await until(async () => inbox.length, (n) => n > 0, 3000)
    expect(inbox.shift()).toMatchObject({ type: 'auth_success', userId })
    socket.send(JSON.stringify({ type: 'agent_task', taskId, id: 7 }))
    await until(async () => inbox.some((m) => m.type !== 'task_progress'), (done) => done, 10_000)
    socket.close()
    const progress = inbox.filter((m) => m.type === 'task_progress')
    const end = inbox.find((m) => m.type !== 'task_progress')
    expect(end).toMatchObject({ type: 'chat_response', id: 7, data: { taskId, status: 'completed', progress: 100 } })
    expect(end.data.results.map((r: { agent: string }) => r.agent)).toEqual(['researcher', 'analyst', 'writer'])
    // Progress came while the task ran (events from the owner, through Redis), in order.
    expect(progress.every((m) => m.taskId === taskId && m.id === 7)).toBe(true)
    expect(progress.some((m) => m.status === 'running' && m.progress > 0 && m.results.length > 0)).toBe(true)
    const seen = progress.map((m) => m.progress)
    expect(seen).toEqual([...seen].sort((x, y) => x - y))
  }, 30_000)

  test("another user's task cannot be followed over the socket: 404", async () => {
    const taskId = await submit(a, token(a), ['writer'], 'Private task')
    const admin = await b.login(ADMIN.email, ADMIN.password)
    const socket = new WebSocket(`ws://127.0.0.1:${b.port}/ws`)
    const inbox: any[] = []
    socket.onmessage = (event) => inbox.push(JSON.parse(String(event.data)))
    await new Promise((resolve) => (socket.onopen = resolve))
    socket.send(JSON.stringify({ type: 'auth', token: admin.accessToken }))
    socket.send(JSON.stringify({ type: 'agent_task', taskId, id: 'theirs' }))
    socket.send(JSON.stringify({ type: 'agent_task', id: 'empty' }))
    await until(async () => inbox.length, (n) => n >= 3, 3000)
    socket.close()
    expect(inbox.find((m) => m.id === 'theirs')).toMatchObject({ type: 'error', code: 'NOT_FOUND' })
    expect(inbox.find((m) => m.id === 'empty')).toMatchObject({ type: 'error', code: 'VALIDATION_ERROR' })
    await until(() => get(a, taskId), (task) => ENDED.includes(task.status))
  }, 30_000)

  test('a voice autopilot session started on one replica continues on the other: same session, its preferences, commands executed there; stopped there, stopped on both', async () => {
    const autopilot = (replica: Replica, body: Record<string, unknown>) => replica.call('POST', '/voice/autopilot', { token: token(replica), body }).then((res) => res.json)
    const started = await autopilot(a, { mode: 'start', context: 'kitchen', preferences: { autoExecute: true, verbosity: 'low', timezone: 'Asia/Tokyo' } })
    expect(started).toMatchObject({ status: 'active' })
    expect(await autopilot(b, { mode: 'status' })).toMatchObject({ status: 'active', sessionId: started.sessionId, preferences: { autoExecute: true, verbosity: 'low', timezone: 'Asia/Tokyo' } })
    // A command on B is carried out by the session started on A, in its time zone.
    const time = await b.call('POST', '/voice/command', { token: token(b), body: { command: 'what time is it' } })
    expect(time.status).toBe(200)
    expect(time.json).toMatchObject({ intent: 'time', executed: true })
    const tokyo = new Intl.DateTimeFormat('en-US', { timeZone: 'Asia/Tokyo', hour: 'numeric' }).format(new Date())
    expect(time.json.response).toContain(`${tokyo.split(' ')[0]!}:`)
    // Started again on B: the same session, its preferences kept.
    expect(await autopilot(b, { mode: 'start' })).toMatchObject({ status: 'active', sessionId: started.sessionId, preferences: { autoExecute: true, verbosity: 'low' } })
    expect(await autopilot(b, { mode: 'stop' })).toMatchObject({ status: 'stopped', sessionId: started.sessionId })
    expect(await autopilot(a, { mode: 'status' })).toMatchObject({ status: 'stopped', sessionId: started.sessionId })
    const proposed = await a.call('POST', '/voice/command', { token: token(a), body: { command: 'what time is it' } })
    expect(proposed.json).toMatchObject({ intent: 'time', executed: false })
  }, 60_000)

  test('a replica killed with SIGKILL mid-task: its task ends failed within the stale limit, read on another; a replica starting fails no live task', async () => {
    const long = ['researcher', 'analyst', 'writer', 'critic', 'planner', 'summarizer', 'researcher', 'analyst', 'writer', 'critic']
    const early = await submit(a, token(a), long, 'Running while a replica starts')
    await until(() => ownerOf(a, early), (row) => row.status === 'running')
    const dataDir = tempDir('replica-c')
    const child = Bun.spawn(
      ['bun', join(import.meta.dir, '../../fixtures/agent-replica.ts'), JSON.stringify({ name: 'c', databaseUrl, redisUrl, delayMs: 250, heartbeatMs: HEARTBEAT_MS, staleMs: STALE_MS, dataDir })],
      { stdout: 'pipe', stderr: 'inherit' },
    )
    try {
      const reader = child.stdout.getReader()
      let out = ''
      while (!out.includes('\n')) {
        const { value, done } = await reader.read()
        if (done) break
        out += new TextDecoder().decode(value)
      }
      if (!out.trim()) throw new Error('replica c did not start (its stderr is above)')
      const c = client(JSON.parse(out).port as number)
      const tokenC = (await c.login(USER.email, USER.password)).accessToken
      // C's start-up did not fail the task running on A or B.
      expect(['running', 'completed']).toContain((await ownerOf(a, early)).status)
      // Three long tasks for three replicas of one slot each: C runs one of them.
      const tasks: string[] = []
      for (let i = 0; i < 3; i++) {
        const submitted = await c.call('POST', '/agents/execute', { token: tokenC, body: { task: `Long task ${i}`, agents: long, async: true } })
        expect(submitted.status).toBe(202)
        tasks.push(submitted.json.taskId)
      }
      const onC = async () => {
        const rows: { id: string; progress: number }[] = await a.services.postgres!`SELECT id, progress FROM agent_tasks WHERE id IN ${a.services.postgres!(tasks)} AND owner = 'c' AND status = 'running'`
        return rows[0] ?? null
      }
      const victim = await until(onC, (row) => row !== null && row.progress > 0, 20_000)
      expect(victim).not.toBeNull()
      child.kill('SIGKILL')
      await child.exited
      const killedAt = Date.now()
      const task = await until(() => get(b, victim!.id), (task) => task.status !== 'running', STALE_MS * 3)
      const after = Date.now() - killedAt
      expect(task).toMatchObject({ status: 'failed', error: STALE })
      // The heartbeat stops at the kill: failed once it is older than the limit, by the next sweep (every limit / 3).
      expect(after).toBeLessThan(STALE_MS + STALE_MS / 3 + 2000)
      expect((await get(a, victim!.id)).status).toBe('failed')
      // Everything else ends completed on A and B.
      for (const id of [early, ...tasks.filter((id) => id !== victim!.id)]) {
        const done = await until(() => get(a, id), (task) => ENDED.includes(task.status), 30_000)
        expect(done.status).toBe('completed')
      }
    } finally {
      child.kill('SIGKILL')
    }
  }, 90_000)

  // Last: it stops one of the two replicas.
  test('a replica stopped with SIGTERM (shutdown) hands its running task back to the queue; the other runs it to the end', async () => {
    const taskId = await submit(a, token(a), ['researcher', 'analyst', 'writer', 'summarizer'], 'Task of a replica that stops')
    const running = await until(() => ownerOf(a, taskId), (row) => row.status === 'running')
    const owner = named(running.owner)
    const survivor = other(running.owner)
    await until(() => get(survivor, taskId), (task) => task.progress > 0)
    stopped.add(owner)
    await owner.stop()
    const task = await until(() => get(survivor, taskId), (task) => ENDED.includes(task.status), 15_000)
    expect(task).toMatchObject({ status: 'completed', progress: 100 })
    expect(task.results.map((r: { agent: string }) => r.agent)).toEqual(['researcher', 'analyst', 'writer', 'summarizer'])
    expect((await ownerOf(survivor, taskId)).owner).toBe(survivor.name)
  }, 60_000)
})

describe.skipIf(!TEST_DATABASE_URL)(`agent tasks across two replicas with Redis down${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('tasks still run (the queue is polled), are read and cancelled from the other replica, a socket follows them; nothing throws', async () => {
    const lines: string[] = []
    const { a, b, token } = await pair(`redis://127.0.0.1:${freePort()}`, (line) => lines.push(line))
    try {
      expect(a.services.bus.shared).toBe(false)
      const health = await b.call('GET', '/health')
      expect(health.status).toBe(200)

      const done = await submit(a, token(a), ['researcher', 'writer'], 'Task without Redis')
      const task = await until(() => b.call('GET', `/agents/task/${done}`, { token: token(b) }).then((res) => res.json), (task) => ENDED.includes(task.status))
      expect(task).toMatchObject({ status: 'completed', progress: 100 })

      // Cancel on the replica that does not run it: the owner's heartbeat finds it ended and stops the run.
      const taskId = await submit(a, token(a), ['researcher', 'analyst', 'writer', 'critic', 'planner', 'summarizer'], 'Task cancelled without Redis')
      const running = await until(() => ownerOf(a, taskId), (row) => row.status === 'running')
      const owner = running.owner === 'a' ? a : b
      const canceller = running.owner === 'a' ? b : a
      const abortedBefore = owner.generator.aborted
      const cancelled = await canceller.call('DELETE', `/agents/task/${taskId}`, { token: token(canceller) })
      expect(cancelled.json.status).toBe('cancelled')
      expect(await until(async () => owner.generator.aborted, (n) => n > abortedBefore, HEARTBEAT_MS * 4)).toBeGreaterThan(abortedBefore)

      // A socket on B follows a task submitted on A to its end (its row is read every second).
      const followed = await submit(a, token(a), ['writer'], 'Task followed without Redis')
      const socket = new WebSocket(`ws://127.0.0.1:${b.port}/ws`)
      const inbox: any[] = []
      socket.onmessage = (event) => inbox.push(JSON.parse(String(event.data)))
      await new Promise((resolve) => (socket.onopen = resolve))
      socket.send(JSON.stringify({ type: 'auth', token: token(b) }))
      socket.send(JSON.stringify({ type: 'agent_task', taskId: followed }))
      await until(async () => inbox.some((m) => m.type === 'chat_response' || m.type === 'error'), (found) => found, 10_000)
      socket.close()
      expect(inbox.find((m) => m.type === 'chat_response' || m.type === 'error')).toMatchObject({ type: 'chat_response', data: { taskId: followed, status: 'completed' } })
      expect(lines.filter((line) => /agents: /.test(line))).toEqual([])
    } finally {
      await Promise.all([a.stop(), b.stop()])
    }
  }, 60_000)
})
