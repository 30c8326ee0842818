import { describe, expect, test, setDefaultTimeout } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { makeServer } from '../../helpers'
import { agentServer, pollTask, TokenGenerator } from './fakes'

// Logins hash passwords (argon2): on a loaded machine a test with several users takes seconds.
setDefaultTimeout(30_000)

const HANDBOOK = [
  { id: 'vpn', content: 'To reset your VPN password, open the self-service portal and choose Reset. The reset link is valid for 30 minutes.', metadata: { title: 'VPN guide' } },
  { id: 'lunch', content: 'The canteen serves lunch from noon and closes at two in the afternoon.', metadata: { title: 'Canteen' } },
]

describe('agents: catalogue and validation', () => {
  const server = makeServer()

  test('GET /agents lists the six built-in agents with role and description', async () => {
    const { accessToken } = await server.login()
    const res = await server.call('GET', '/agents', { token: accessToken })
    expect(res.status).toBe(200)
    const names = res.json.agents.map((a: any) => a.name)
    expect(names).toEqual(expect.arrayContaining(['researcher', 'analyst', 'writer', 'critic', 'planner', 'summarizer']))
    for (const agent of res.json.agents) {
      expect(agent.role).toBeString()
      expect(agent.description.length).toBeGreaterThan(10)
    }
    expect((await server.call('GET', '/agents')).status).toBe(401)
  })

  test('400 for an empty task, 0 or 11 agents, an unknown agent, maxIterations 0 or 11', async () => {
    const { accessToken: token } = await server.login()
    const post = (body: unknown) => server.call('POST', '/agents/execute', { token, body })
    for (const body of [
      { task: '', agents: ['writer'] },
      { task: '   ', agents: ['writer'] },
      { task: 'Write', agents: [] },
      { task: 'Write', agents: Array(11).fill('writer') },
      { task: 'Write', agents: ['writer'], maxIterations: 0 },
      { task: 'Write', agents: ['writer'], maxIterations: 11 },
      { task: 'Write', agents: ['writer'], maxIterations: 1e400 },
      { task: 'Write', agents: ['writer'], maxIterations: 2.5 },
      { agents: ['writer'] },
    ]) {
      const res = await post(body)
      expect(res.status).toBe(400)
      expect(res.json.code).toBe('VALIDATION_ERROR')
    }
    expect((await post({ task: 'Write', agents: [] })).json.message).toContain('agents')
    expect((await post({ task: 'Write', agents: ['writer'], maxIterations: 11 })).json.message).toContain('maxIterations')
    const unknown = await post({ task: 'Write a note', agents: ['writer', 'poet'] })
    expect(unknown.status).toBe(400)
    expect(unknown.json.code).toBe('UNKNOWN_AGENT')
    expect(unknown.json.message).toContain('poet')
    for (const name of ['researcher', 'analyst', 'writer', 'critic', 'planner', 'summarizer']) expect(unknown.json.message).toContain(name)
  })

  test('a collection the caller does not own is 404, and nothing is stored', async () => {
    const { accessToken: token } = await server.login()
    const res = await server.call('POST', '/agents/execute', { token, body: { task: 'Find the VPN guide', agents: ['researcher'], collections: ['nope'] } })
    expect(res.status).toBe(404)
    expect(res.json.code).toBe('NOT_FOUND')
    expect((await server.call('GET', '/agents/tasks', { token })).json.total).toBe(0)
  })
})

describe('agents: runs on the built-in engine', () => {
  test('the researcher cites documents from the caller\'s collection and never another user\'s', async () => {
    const server = makeServer()
    const alice = await server.userSession('alice@example.com')
    const bob = await server.userSession('bob@example.com')
    await server.call('POST', '/rag/ingest', { token: alice.accessToken, body: { collection: 'secrets', documents: [{ id: 'launch', content: 'The launch code for the rocket is 7788.' }] } })
    await server.call('POST', '/rag/ingest', { token: bob.accessToken, body: { collection: 'notes', documents: [{ id: 'rocket', content: 'The launch code for the rocket is 1234.', metadata: { title: 'Rocket notes' } }] } })
    const res = await server.call('POST', '/agents/execute', { token: bob.accessToken, body: { task: 'What is the launch code for the rocket?', agents: ['researcher'] } })
    expect(res.status).toBe(200)
    const [research] = res.json.results
    expect(research.agent).toBe('researcher')
    expect(research.response).toContain('1234')
    expect(research.response).toContain('[1]')
    expect(research.response).toContain('Rocket notes')
    expect(research.response).not.toContain('7788')
    expect(research.sources).toEqual([{ n: 1, collection: 'notes', id: 'rocket', title: 'Rocket notes', score: expect.any(Number) }])
    // Naming Alice's collection is a 404 for Bob.
    const foreign = await server.call('POST', '/agents/execute', { token: bob.accessToken, body: { task: 'launch code', agents: ['researcher'], collections: ['secrets'] } })
    expect(foreign.status).toBe(404)
  })

  test('the researcher keeps weakly scored passages that share a key term with the task', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    await server.call('POST', '/rag/ingest', { token, body: { collection: 'it', documents: [{ id: 'security', content: 'Report lost laptops to the security desk within one hour.' }, ...HANDBOOK] } })
    const res = await server.call('POST', '/agents/execute', { token, body: { task: 'What should I do if I lose my laptop?', agents: ['researcher'] } })
    expect(res.json.results[0].sources.map((s: any) => s.id)).toEqual(['security'])
    expect(res.json.results[0].response).toContain('Report lost laptops to the security desk within one hour. [1]')
  })

  test('collections limits the researcher to the named ones', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    await server.call('POST', '/rag/ingest', { token, body: { collection: 'handbook', documents: HANDBOOK } })
    await server.call('POST', '/rag/ingest', { token, body: { collection: 'other', documents: [{ id: 'vpn-old', content: 'The old VPN password reset used a paper form.' }] } })
    const all = await server.call('POST', '/agents/execute', { token, body: { task: 'How do I reset the VPN password?', agents: ['researcher'] } })
    expect(new Set(all.json.results[0].sources.map((s: any) => s.collection))).toEqual(new Set(['handbook', 'other']))
    const one = await server.call('POST', '/agents/execute', { token, body: { task: 'How do I reset the VPN password?', agents: ['researcher'], collections: ['other'] } })
    expect(one.json.results[0].sources.map((s: any) => s.id)).toEqual(['vpn-old'])
  })

  test('the planner splits the task into steps; the writer builds on the researcher; the critic finds nothing to fix and the run stops after one round', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    await server.call('POST', '/rag/ingest', { token, body: { collection: 'handbook', documents: HANDBOOK } })
    const res = await server.call('POST', '/agents/execute', {
      token,
      body: { task: 'Find how to reset the VPN password, then explain how long the reset link is valid.', agents: ['planner', 'researcher', 'writer', 'critic'], maxIterations: 3 },
    })
    expect(res.status).toBe(200)
    const byAgent = Object.fromEntries(res.json.results.map((r: any) => [r.agent, r]))
    expect(byAgent.planner.steps).toEqual(['Find how to reset the VPN password', 'Explain how long the reset link is valid'])
    expect(byAgent.planner.response).toContain('1. Find how to reset the VPN password (researcher)')
    expect(byAgent.writer.response).toContain('Explain how long the reset link is valid:\nThe reset link is valid for 30 minutes. [1]')
    expect(byAgent.critic.objections).toEqual([])
    expect(byAgent.critic.response).toStartWith('No objections')
    expect(res.json.iterations).toBe(1)
    expect(res.json.results).toHaveLength(4)
    expect(res.json.finalSynthesis).toContain('30 minutes')
    expect(res.json.finalSynthesis).toContain('Review: no objections.')
    expect(res.json.confidence).toBeGreaterThan(0)
    expect(res.json.confidence).toBeLessThanOrEqual(1)
    expect(res.json.totalExecutionTime).toBeGreaterThanOrEqual(0)
    for (const result of res.json.results) expect(result.executionTime).toBeGreaterThanOrEqual(0)
  })

  test('maxIterations 1 vs 3: the critic\'s objection sends the work round again, up to the bound', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    const body = { task: 'Summarise our parental leave policy.', agents: ['researcher', 'writer', 'critic'] }
    const once = await server.call('POST', '/agents/execute', { token, body: { ...body, maxIterations: 1 } })
    expect(once.json.iterations).toBe(1)
    expect(once.json.results.map((r: any) => r.round)).toEqual([1, 1, 1])
    const critic = once.json.results[2]
    expect(critic.objections[0]).toContain('found no passage')
    expect(critic.response).toContain('Objections:')
    const thrice = await server.call('POST', '/agents/execute', { token, body: { ...body, maxIterations: 3 } })
    expect(thrice.json.iterations).toBe(3)
    expect(thrice.json.results.map((r: any) => r.round)).toEqual([1, 1, 1, 2, 2, 2, 3, 3, 3])
    expect(thrice.json.finalSynthesis).toContain('Open objections')
    // The same work with a document to find: no objection, one round.
    await server.call('POST', '/rag/ingest', { token, body: { collection: 'hr', documents: [{ id: 'leave', content: 'Our parental leave policy grants sixteen weeks of paid leave to every parent.' }] } })
    const sourced = await server.call('POST', '/agents/execute', { token, body: { ...body, maxIterations: 3 } })
    expect(sourced.json.iterations).toBe(1)
    expect(sourced.json.confidence).toBeGreaterThan(thrice.json.confidence)
  })

  test('the analyst finds the arithmetic in the task and reports what it needs (no calculator plugin here)', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    const res = await server.call('POST', '/agents/execute', { token, body: { task: 'Work out 12 * (3 + 4) for the budget.', agents: ['analyst'] } })
    expect(res.json.results[0].response).toContain('12 * (3 + 4)')
  })
})

describe('agents: orchestration with a fake model', () => {
  test('a sequential run passes each agent\'s output to the next', async () => {
    const generator = new TokenGenerator()
    const server = agentServer(generator)
    const { accessToken: token } = await server.login()
    const res = await server.call('POST', '/agents/execute', { token, body: { task: 'Write a product note', agents: ['researcher', 'analyst', 'writer'], parallel: false } })
    expect(res.status).toBe(200)
    const [a, b, c] = res.json.results.map((r: any) => r.response)
    expect(a).toBe('reply-1 from the researcher saw []')
    expect(b).toBe('reply-2 from the analyst saw [reply-1]')
    expect(c).toBe('reply-3 from the writer saw [reply-1,reply-2]')
    expect(res.json.finalSynthesis).toBe('reply-4 from the synthesis saw [reply-1,reply-2,reply-3]')
    expect(res.json.results.map((r: any) => r.role)).toEqual(['Research', 'Analysis', 'Writing'])
  })

  test("a small model's prompts are cut to fit its context: earlier work is shortened, the task kept", async () => {
    const generator = new TokenGenerator()
    generator.contextLength = 400
    generator.padding = 500
    const server = agentServer(generator)
    const { accessToken: token } = await server.login()
    const res = await server.call('POST', '/agents/execute', { token, body: { task: 'Write a product note', agents: ['researcher', 'analyst', 'writer'] } })
    expect(res.status).toBe(200)
    // Budget: 400 tokens less the reply's quarter; every prompt (system + user, in words here) fits.
    for (const prompt of generator.prompts) {
      const words = prompt.reduce((n, m) => n + m.content.split(/\s+/).filter(Boolean).length, 0)
      expect(words).toBeLessThanOrEqual(300)
      expect(prompt.at(-1)!.content).toStartWith('Task: Write a product note')
    }
    // Cut, the earlier work is still passed on.
    expect(res.json.results[2].response).toStartWith('reply-3 from the writer saw [reply-1,reply-2]')
  })

  test('a parallel run overlaps: every agent starts before any other has finished', async () => {
    const generator = new TokenGenerator(300)
    const server = agentServer(generator)
    const { accessToken: token } = await server.login()
    const res = await server.call('POST', '/agents/execute', { token, body: { task: 'Compare three options', agents: ['researcher', 'analyst', 'writer'], parallel: true } })
    expect(res.status).toBe(200)
    const spans = res.json.results.map((r: any) => ({ start: Date.parse(r.startTime), end: Date.parse(r.endTime) }))
    const latestStart = Math.max(...spans.map((s: any) => s.start))
    const earliestEnd = Math.min(...spans.map((s: any) => s.end))
    expect(latestStart).toBeLessThan(earliestEnd)
    // Working concurrently, none of them saw another's output.
    for (const result of res.json.results) expect(result.response).toEndWith('saw []')
  })

  test('a model critic saying "No objections" stops the run early; an objection sends it round again', async () => {
    const server = agentServer(new TokenGenerator())
    const { accessToken: token } = await server.login()
    // The fake critic replies "reply-N ..." (an objection): three rounds.
    const res = await server.call('POST', '/agents/execute', { token, body: { task: 'Write a note', agents: ['writer', 'critic'], maxIterations: 3 } })
    expect(res.json.iterations).toBe(3)
    // Round 2's writer was given the critic's objection (reply-2) to fix.
    expect(res.json.results[2]).toMatchObject({ agent: 'writer', round: 2 })
    expect(res.json.results[2].response).toContain('reply-2')
    expect(res.json.results[1].objections).toEqual([res.json.results[1].response])
    const approving = new TokenGenerator()
    approving.generate = async () => ({ text: 'No objections.', promptTokens: 1, completionTokens: 2, finishReason: 'stop' })
    const calm = agentServer(approving)
    const t2 = (await calm.login()).accessToken
    const stopped = await calm.call('POST', '/agents/execute', { token: t2, body: { task: 'Write a note', agents: ['writer', 'critic'], maxIterations: 3 } })
    expect(stopped.json.iterations).toBe(1)
    expect(stopped.json.results[1].objections).toEqual([])
  })

  test('one agent failing fails the task with the reason', async () => {
    const server = agentServer(new TokenGenerator(0, 'analyst'))
    const { accessToken: token } = await server.login()
    const queued = await server.call('POST', '/agents/execute', { token, body: { task: 'Write a note', agents: ['researcher', 'analyst', 'writer'], async: true } })
    const states = await pollTask(server, token, queued.json.taskId)
    const last = states.at(-1)
    expect(last.status).toBe('failed')
    expect(last.error).toContain('analyst')
    expect(last.error).toContain('ran out of memory')
    expect(last.endTime).toBeString()
    expect(last.results.map((r: any) => r.agent)).toEqual(['researcher'])
    const sync = await server.call('POST', '/agents/execute', { token, body: { task: 'Write a note', agents: ['analyst'] } })
    expect(sync.status).toBe(500)
  })
})

describe('agents: failures of the model and of the client', () => {
  test('an unreachable model server: the waiting request is 503 MODEL_UNAVAILABLE and the task is failed with the reason', async () => {
    const server = makeServer({ llmUrl: 'http://127.0.0.1:9', llmModel: 'absent' })
    const { accessToken: token } = await server.login()
    const res = await server.call('POST', '/agents/execute', { token, body: { task: 'Write a note', agents: ['writer'] } })
    expect(res.status).toBe(503)
    expect(res.json.code).toBe('MODEL_UNAVAILABLE')
    expect(res.json.message).toContain('The writer failed')
    const [task] = (await server.call('GET', '/agents/tasks', { token })).json.tasks
    expect(task.status).toBe('failed')
    expect(task.error).toContain('cannot be reached')
  })

  test('a client that goes away while waiting cancels its task and the generation', async () => {
    const generator = new TokenGenerator(30_000)
    const server = agentServer(generator)
    const { accessToken: token } = await server.login()
    const app = server.app.listen({ port: 0 })
    try {
      const controller = new AbortController()
      const pending = fetch(`http://127.0.0.1:${app.server!.port}/agents/execute`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ task: 'Long task', agents: ['writer'] }),
        signal: controller.signal,
      }).catch(() => null)
      let first: any
      while (first?.status !== 'running') {
        await Bun.sleep(10)
        first = (await server.call('GET', '/agents/tasks', { token })).json.tasks[0]
      }
      controller.abort()
      await pending
      const states = await pollTask(server, token, first.taskId)
      expect(states.at(-1).status).toBe('cancelled')
      expect(generator.aborted).toBe(1)
    } finally {
      app.stop(true)
    }
  })
})

describe('agents: the task queue', () => {
  test('async answers 202 queued; polling sees running with progress rising, then completed', async () => {
    const generator = new TokenGenerator(150)
    const server = agentServer(generator, { concurrency: 1 })
    const { accessToken: token } = await server.login()
    const first = await server.call('POST', '/agents/execute', { token, body: { task: 'First task', agents: ['writer', 'writer', 'writer', 'writer'], async: true } })
    const res = await server.call('POST', '/agents/execute', { token, body: { task: 'Second task', agents: ['researcher', 'analyst', 'writer'], async: true } })
    expect(first.status).toBe(202)
    expect(res.status).toBe(202)
    expect(res.json).toEqual({ taskId: expect.any(String), status: 'queued' })
    const states = await pollTask(server, token, res.json.taskId)
    const statuses = [...new Set(states.map((s) => s.status))]
    expect(statuses).toEqual(['queued', 'running', 'completed'])
    const progress = states.map((s) => s.progress)
    for (let i = 1; i < progress.length; i++) expect(progress[i]).toBeGreaterThanOrEqual(progress[i - 1])
    expect(progress.some((p) => p > 0 && p < 100)).toBe(true)
    expect(states.some((s) => s.status === 'running' && s.currentAgent === 'analyst' && s.results.length === 1)).toBe(true)
    const done = states.at(-1)
    expect(done).toMatchObject({ status: 'completed', progress: 100, currentAgent: null, task: 'Second task' })
    expect(done.results).toHaveLength(3)
    expect(done.finalSynthesis).toContain('reply-')
    expect(typeof done.confidence).toBe('number')
    expect(Date.parse(done.endTime)).toBeGreaterThanOrEqual(Date.parse(done.startTime))
  })

  test('with concurrency 1 a second task waits as queued; a full queue is 429 QUEUE_FULL with Retry-After', async () => {
    const generator = new TokenGenerator(5_000)
    const server = agentServer(generator, { concurrency: 1, queueLimit: 1 })
    const { accessToken: token } = await server.login()
    const post = () => server.call('POST', '/agents/execute', { token, body: { task: 'Long task', agents: ['writer'], async: true } })
    const a = await post()
    const b = await post()
    expect((await server.call('GET', `/agents/task/${a.json.taskId}`, { token })).json.status).toBe('running')
    const waiting = (await server.call('GET', `/agents/task/${b.json.taskId}`, { token })).json
    expect(waiting).toMatchObject({ status: 'queued', progress: 0, currentAgent: null, endTime: null, results: [] })
    const full = await post()
    expect(full.status).toBe(429)
    expect(full.json.code).toBe('QUEUE_FULL')
    expect(Number(full.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    // Cancelling the queued one frees its place.
    expect((await server.call('DELETE', `/agents/task/${b.json.taskId}`, { token })).json.status).toBe('cancelled')
    expect((await post()).status).toBe(202)
    server.services.agents.close()
  })

  test('cancel aborts the running generation within a second; cancelling again is 409', async () => {
    const generator = new TokenGenerator(30_000)
    const server = agentServer(generator)
    const { accessToken: token } = await server.login()
    const { json } = await server.call('POST', '/agents/execute', { token, body: { task: 'Long task', agents: ['writer', 'critic'], async: true } })
    await pollTask(server, token, json.taskId, (task) => task.currentAgent === 'writer')
    const res = await server.call('DELETE', `/agents/task/${json.taskId}`, { token })
    expect(res.status).toBe(200)
    expect(res.json).toEqual({ success: true, taskId: json.taskId, status: 'cancelled' })
    const deadline = Date.now() + 1000
    while (generator.aborted === 0 && Date.now() < deadline) await Bun.sleep(10)
    expect(generator.aborted).toBe(1)
    const task = (await server.call('GET', `/agents/task/${json.taskId}`, { token })).json
    expect(task.status).toBe('cancelled')
    expect(task.endTime).toBeString()
    await Bun.sleep(50)
    expect(generator.calls).toBe(1)
    const again = await server.call('DELETE', `/agents/task/${json.taskId}`, { token })
    expect(again.status).toBe(409)
  })

  test('another user gets 404 for a task (read and cancel), and so does an unknown id', async () => {
    const server = agentServer(new TokenGenerator())
    const owner = await server.login()
    const other = await server.userSession('mallory@example.com')
    const { json } = await server.call('POST', '/agents/execute', { token: owner.accessToken, body: { task: 'Write a note', agents: ['writer'] } })
    expect((await server.call('GET', `/agents/task/${json.taskId}`, { token: owner.accessToken })).status).toBe(200)
    for (const method of ['GET', 'DELETE']) {
      const res = await server.call(method, `/agents/task/${json.taskId}`, { token: other.accessToken })
      expect(res.status).toBe(404)
      expect(res.json.code).toBe('NOT_FOUND')
      expect(res.text).not.toContain('Write a note')
    }
    expect((await server.call('GET', '/agents/task/no-such-task', { token: owner.accessToken })).status).toBe(404)
    expect((await server.call('GET', '/agents/tasks', { token: other.accessToken })).json.total).toBe(0)
  })

  test('GET /agents/tasks lists the caller\'s tasks newest first, paginated, filterable by status', async () => {
    const server = agentServer(new TokenGenerator())
    const { accessToken: token } = await server.login()
    const ids: string[] = []
    for (const task of ['one', 'two', 'three']) ids.push((await server.call('POST', '/agents/execute', { token, body: { task: `Task ${task}`, agents: ['writer'] } })).json.taskId)
    const page = await server.call('GET', '/agents/tasks?limit=2&offset=0', { token })
    expect(page.json.total).toBe(3)
    expect(page.json.tasks.map((t: any) => t.taskId)).toEqual([ids[2], ids[1]])
    expect(page.json.tasks[0]).toMatchObject({ task: 'Task three', status: 'completed', agents: ['writer'], agentsDone: 1 })
    const next = await server.call('GET', '/agents/tasks?limit=2&offset=2', { token })
    expect(next.json.tasks.map((t: any) => t.taskId)).toEqual([ids[0]])
    expect((await server.call('GET', '/agents/tasks?status=failed', { token })).json.total).toBe(0)
    expect((await server.call('GET', '/agents/tasks?limit=101', { token })).status).toBe(400)
    expect((await server.call('GET', '/agents/tasks?limit=99999999999999999999', { token })).status).toBe(400)
  })

  test('finished tasks are pruned after the retention', async () => {
    const server = agentServer(new TokenGenerator(), { retentionMs: 30 })
    const { accessToken: token } = await server.login()
    const { json } = await server.call('POST', '/agents/execute', { token, body: { task: 'Write a note', agents: ['writer'] } })
    expect(server.services.agents.prune()).toBe(0)
    await Bun.sleep(60)
    expect(server.services.agents.prune()).toBe(1)
    expect((await server.call('GET', `/agents/task/${json.taskId}`, { token })).status).toBe(404)
  })

  test('after a crash, the next start fails the task that was running and runs the one left queued', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'uagent-agents-'))
    try {
      const options = { database: join(dir, 'uagent.db'), jwtSecret: 'j'.repeat(40) }
      const first = agentServer(new TokenGenerator(30_000), { concurrency: 1 }, options)
      const { accessToken: token } = await first.login()
      const running = (await first.call('POST', '/agents/execute', { token, body: { task: 'Long task', agents: ['writer'], async: true } })).json.taskId
      const queued = (await first.call('POST', '/agents/execute', { token, body: { task: 'Waiting task', agents: ['writer'], async: true } })).json.taskId
      // A second process on the same database: the first one "crashed".
      const second = makeServer(options)
      const failed = (await second.call('GET', `/agents/task/${running}`, { token })).json
      expect(failed.status).toBe('failed')
      expect(failed.error).toContain('server stopped')
      expect(failed.endTime).toBeString()
      const states = await pollTask(second, token, queued)
      expect(states.at(-1)).toMatchObject({ status: 'completed', progress: 100, task: 'Waiting task' })
      expect(states.at(-1).results.map((result: { agent: string }) => result.agent)).toEqual(['writer'])
      // What the dead process still does cannot overwrite that verdict.
      first.services.agents.close()
      expect((await second.call('GET', `/agents/task/${running}`, { token })).json.status).toBe('failed')
      first.services.db.close()
      second.services.db.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
