import { afterAll, describe, expect, test } from 'bun:test'
import { agentServer, TokenGenerator } from './fakes'

const generator = new TokenGenerator(120)
const server = agentServer(generator, { concurrency: 1 })
const app = server.app.listen({ port: 0 })
const port = app.server!.port
afterAll(() => {
  server.services.agents.close()
  app.stop(true)
})

async function socket(token: string) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`)
  const inbox: any[] = []
  ws.onmessage = (event) => inbox.push(JSON.parse(String(event.data)))
  await new Promise((resolve) => (ws.onopen = resolve))
  ws.send(JSON.stringify({ type: 'auth', token }))
  const until = async (found: () => boolean, ms = 5000) => {
    for (const deadline = Date.now() + ms; !found() && Date.now() < deadline; ) await Bun.sleep(10)
  }
  await until(() => inbox.length > 0)
  expect(inbox.shift()).toMatchObject({ type: 'auth_success' })
  return { ws, inbox, until, done: (id: unknown) => inbox.find((m) => m.id === id && m.type !== 'task_progress') }
}

describe('WebSocket agent_task (one server, SQLite)', () => {
  test('starts a task and follows it: task_progress as agents start and finish, then chat_response with the completed task', async () => {
    const { accessToken } = await server.login()
    const { ws, inbox, until, done } = await socket(accessToken)
    ws.send(JSON.stringify({ type: 'agent_task', task: 'Describe a lighthouse', agents: ['researcher', 'writer'], id: 'run' }))
    await until(() => done('run') !== undefined)
    const end = done('run')
    expect(end).toMatchObject({ type: 'chat_response', id: 'run', data: { status: 'completed', progress: 100 } })
    expect(end.data.results.map((r: { agent: string }) => r.agent)).toEqual(['researcher', 'writer'])
    const progress = inbox.filter((m) => m.type === 'task_progress')
    expect(progress.length).toBeGreaterThanOrEqual(2)
    expect(progress.every((m) => m.taskId === end.data.taskId && ['queued', 'running'].includes(m.status))).toBe(true)
    expect(progress.some((m) => m.currentAgent === 'writer' && m.results.length === 1 && m.progress > 0)).toBe(true)
    // Following a task that has ended answers at once.
    ws.send(JSON.stringify({ type: 'agent_task', taskId: end.data.taskId, id: 'again' }))
    await until(() => done('again') !== undefined)
    expect(done('again')).toMatchObject({ type: 'chat_response', data: { taskId: end.data.taskId, status: 'completed' } })
    ws.close()
  })

  test('follows a task submitted over HTTP; bad messages are VALIDATION_ERROR, unknown agents UNKNOWN_AGENT, unknown tasks NOT_FOUND', async () => {
    const { accessToken: token } = await server.login()
    const submitted = await server.call('POST', '/agents/execute', { token, body: { task: 'Sketch a bridge', agents: ['analyst'], async: true } })
    const { ws, until, done } = await socket(token)
    ws.send(JSON.stringify({ type: 'agent_task', taskId: submitted.json.taskId, id: 1 }))
    ws.send(JSON.stringify({ type: 'agent_task', id: 2 }))
    ws.send(JSON.stringify({ type: 'agent_task', task: 'x', agents: ['juggler'], id: 3 }))
    ws.send(JSON.stringify({ type: 'agent_task', task: '   ', agents: ['writer'], id: 4 }))
    ws.send(JSON.stringify({ type: 'agent_task', taskId: '00000000-0000-4000-8000-000000000000', id: 5 }))
    ws.send(JSON.stringify({ type: 'agent_task', task: 'x', agents: ['writer'], maxIterations: 11, id: 6 }))
    await until(() => [1, 2, 3, 4, 5, 6].every((id) => done(id) !== undefined))
    expect(done(1)).toMatchObject({ type: 'chat_response', data: { taskId: submitted.json.taskId, status: 'completed' } })
    expect(done(2)).toMatchObject({ type: 'error', code: 'VALIDATION_ERROR' })
    expect(done(3)).toMatchObject({ type: 'error', code: 'UNKNOWN_AGENT' })
    expect(done(4)).toMatchObject({ type: 'error', code: 'VALIDATION_ERROR' })
    expect(done(5)).toMatchObject({ type: 'error', code: 'NOT_FOUND' })
    expect(done(6)).toMatchObject({ type: 'error', code: 'VALIDATION_ERROR' })
    ws.close()
  })

  test('closing the socket cancels a task it started, not one it only followed', async () => {
    const { accessToken: token } = await server.login()
    const followed = await server.call('POST', '/agents/execute', { token, body: { task: 'Followed only', agents: ['researcher', 'analyst', 'writer'], async: true } })
    const { ws, inbox, until } = await socket(token)
    ws.send(JSON.stringify({ type: 'agent_task', taskId: followed.json.taskId, id: 'f' }))
    ws.send(JSON.stringify({ type: 'agent_task', task: 'Started here', agents: ['researcher', 'analyst', 'writer'], id: 's' }))
    await until(() => inbox.some((m) => m.id === 's' && m.type === 'task_progress'))
    const started = inbox.find((m) => m.id === 's').taskId as string
    ws.close()
    let status = ''
    for (const deadline = Date.now() + 5000; Date.now() < deadline; await Bun.sleep(20)) {
      status = (await server.call('GET', `/agents/task/${started}`, { token })).json.status
      if (status === 'cancelled') break
    }
    expect(status).toBe('cancelled')
    let kept = ''
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await Bun.sleep(20)) {
      kept = (await server.call('GET', `/agents/task/${followed.json.taskId}`, { token })).json.status
      if (['completed', 'failed', 'cancelled'].includes(kept)) break
    }
    expect(kept).toBe('completed')
  }, 20_000)
})
