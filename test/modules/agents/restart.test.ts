import { afterAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { ORPHANED, STALE } from '../../../src/modules/agents/store'
import { client } from '../../agent-replicas'
import { tempDir, until } from '../../helpers'
import { emptyPostgresDatabase, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../../postgres'

// The server as its own process, killed with SIGKILL while agent tasks queue behind a slow model
// server (an OpenAI-compatible upstream in this process), then started again on the same data:
// the task that was running ends failed with its reason, the queued ones run after the restart.

const ADMIN = { email: 'restart@example.com', password: 'restart-password-1' }
const MODEL = 'slow-model'

/** An OpenAI-compatible model server whose every reply takes `delayMs` (changeable). */
function slowModelServer() {
  const state = { delayMs: 0, calls: 0, answered: 0 }
  const server = Bun.serve({
    port: 0,
    async fetch(request) {
      const url = new URL(request.url)
      if (url.pathname === '/v1/models') return Response.json({ object: 'list', data: [{ id: MODEL, object: 'model' }] })
      if (url.pathname !== '/v1/chat/completions') return new Response('not found', { status: 404 })
      const body = (await request.json()) as { stream?: boolean }
      state.calls++
      await Bun.sleep(state.delayMs)
      state.answered++
      const text = `Answer number ${state.answered}.`
      if (!body.stream) {
        return Response.json({ id: 'c', object: 'chat.completion', model: MODEL, choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 4 } })
      }
      const events = [{ choices: [{ index: 0, delta: { role: 'assistant', content: text } }] }, { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }]
      return new Response(`${events.map((event) => `data: ${JSON.stringify(event)}\n\n`).join('')}data: [DONE]\n\n`, { headers: { 'content-type': 'text/event-stream' } })
    },
  })
  return { state, url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) }
}

const processes = new Set<ReturnType<typeof Bun.spawn>>()
const models: ReturnType<typeof slowModelServer>[] = []
afterAll(async () => {
  for (const proc of processes) proc.kill('SIGKILL')
  await Promise.all([...processes].map((proc) => proc.exited))
  for (const model of models) model.stop()
})

/** `bun src/index.ts` with `env` (and none of this shell's UAGENT_* variables); resolves once it listens. */
async function startServer(env: Record<string, string>) {
  const clean: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('UAGENT_') && value !== undefined) clean[key] = value
  const proc = Bun.spawn(['bun', join(import.meta.dir, '../../../src/index.ts')], {
    env: { ...clean, PORT: '0', UAGENT_ADMIN_EMAIL: ADMIN.email, UAGENT_ADMIN_PASSWORD: ADMIN.password, UAGENT_RATE_LIMIT_MAX: '1000000', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  processes.add(proc)
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader()
  let output = ''
  while (!/listening on (http:\/\/\S+)/.test(output)) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`the server exited before listening: ${output}${await new Response(proc.stderr as ReadableStream).text()}`)
    output += new TextDecoder().decode(value)
  }
  // Keeps reading, so that the pipe never fills.
  void (async () => {
    while (!(await reader.read()).done);
  })().catch(() => {})
  const port = Number(new URL(/listening on (http:\/\/\S+)/.exec(output)![1]!).port)
  return { proc, port, ...client(port) }
}

async function killedWhileQueued(env: Record<string, string>, runningReason: string) {
  const model = slowModelServer()
  models.push(model)
  const serverEnv = { ...env, UAGENT_LLM_URL: model.url, UAGENT_LLM_MODEL: MODEL, UAGENT_AGENT_CONCURRENCY: '1' }
  const first = await startServer(serverEnv)
  const { accessToken: token } = await first.login(ADMIN.email, ADMIN.password)
  // Each model call takes 30 s: the first task is still running, the others queued behind it, when the server dies.
  model.state.delayMs = 30_000
  const ids: string[] = []
  for (const task of ['Plan a harbour festival', 'Plan a library move', 'Plan a garden party']) {
    const res = await first.call('POST', '/agents/execute', { token, body: { task, agents: ['planner'], async: true } })
    expect(res.status).toBe(202)
    ids.push(res.json.taskId)
  }
  const get = (server: { call: typeof first.call }, id: string) => server.call('GET', `/agents/task/${id}`, { token }).then((res) => res.json)
  expect((await until(() => get(first, ids[0]!), (task) => task.status === 'running', 20_000)).status).toBe('running')
  await until(async () => model.state.calls, (calls) => calls > 0, 20_000)
  expect((await get(first, ids[1]!)).status).toBe('queued')
  expect((await get(first, ids[2]!)).status).toBe('queued')

  first.proc.kill('SIGKILL')
  await first.proc.exited
  processes.delete(first.proc)

  model.state.delayMs = 50
  const second = await startServer(serverEnv)
  // The token of the first run still works: the signing key is kept in the data dir (or the database).
  const ended = await Promise.all(ids.map((id) => until(() => get(second, id), (task) => ['completed', 'failed', 'cancelled'].includes(task.status), 20_000)))
  expect(ended[0]).toMatchObject({ taskId: ids[0], status: 'failed', error: runningReason })
  for (const [i, task] of ended.slice(1).entries()) {
    expect(task).toMatchObject({ taskId: ids[i + 1], status: 'completed', progress: 100 })
    expect(task.finalSynthesis).toContain('Answer number')
    expect(task.results.map((result: { agent: string }) => result.agent)).toEqual(['planner'])
  }
  // In the order they were queued.
  expect(ended[1].startTime <= ended[2].startTime).toBe(true)
  second.proc.kill('SIGTERM')
  await second.proc.exited
  processes.delete(second.proc)
}

describe('a server killed (SIGKILL) while agent tasks queue behind a slow model', () => {
  test('SQLite: after the restart the running task is failed with its reason; the queued ones run and complete', async () => {
    await killedWhileQueued({ UAGENT_DATA_DIR: tempDir('restart-sqlite') }, ORPHANED)
  }, 90_000)

  test.skipIf(!TEST_DATABASE_URL)(`PostgreSQL: the same${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, async () => {
    const database = await emptyPostgresDatabase()
    // A fixed instance id, as a deployment has (host and port): the server knows its own tasks when it starts again.
    await killedWhileQueued({ UAGENT_DATA_DIR: tempDir('restart-postgres'), UAGENT_DATABASE_URL: database.url, UAGENT_INSTANCE_ID: 'restart-test' }, STALE)
  }, 90_000)
})
