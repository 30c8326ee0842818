import { describe, expect, test, setDefaultTimeout } from 'bun:test'
import { agentServer, TokenGenerator } from '../modules/agents/fakes'
import { liveServer } from './live-server'

// Logins hash passwords (argon2): on a loaded machine a test with several users takes seconds.
setDefaultTimeout(30_000)

// Each model reply takes 400 ms, so a run's agents finish one by one, visibly apart.
const server = agentServer(new TokenGenerator(400), {}, { jwtSecret: 'c'.repeat(48) })
const { run, spawn, api } = liveServer(server.app, { login: true, cleanup: () => server.services.agents.close() })

describe('uagent agents', () => {
  test('list prints the agents; --json equals the API body', async () => {
    const human = await run(['agents', 'list'])
    expect(human.code).toBe(0)
    expect(human.stdout).toMatch(/^NAME\s+ROLE\s+DESCRIPTION/)
    for (const name of ['researcher', 'analyst', 'writer', 'critic', 'planner', 'summarizer']) expect(human.stdout).toContain(name)
    expect(JSON.parse((await run(['--json', 'agents', 'list'])).stdout)).toEqual(await api('GET', '/agents'))
  })

  test("run shows each agent's line as it finishes, then the synthesis", async () => {
    const proc = spawn(['agents', 'run', 'Write', 'a', 'note', 'about', 'printers', '--agents', 'researcher,writer'])
    const reader = proc.stdout.getReader()
    let output = ''
    // The researcher's line arrives while the task is still running (the writer has yet to finish).
    while (!output.includes('writer') && !output.includes('\n')) output += new TextDecoder().decode((await reader.read()).value ?? new Uint8Array())
    const tasks = await api('GET', '/agents/tasks?limit=1')
    expect(output).toContain('✓ researcher (Research,')
    expect(output).toContain('reply-1 from the researcher saw []')
    expect(tasks.tasks[0]).toMatchObject({ task: 'Write a note about printers', status: 'running' })
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      output += new TextDecoder().decode(value)
    }
    expect(await proc.exited).toBe(0)
    const lines = output.split('\n')
    const writer = lines.findIndex((l) => l.startsWith('✓ writer'))
    expect(writer).toBeGreaterThan(lines.findIndex((l) => l.startsWith('✓ researcher')))
    expect(lines[writer]).toContain('saw [reply-1]')
    expect(output).toContain('Synthesis\nreply-3 from the synthesis saw [reply-1,reply-2]')
    expect(output).toMatch(/confidence \d\.\d\d · 1 round · \d+ ms · task /)
  })

  test('run --json waits and prints the API response; options reach the request', async () => {
    const result = await run(['--json', 'agents', 'run', 'Compare', 'two', 'offers', '--agents', 'analyst,writer', '--parallel', '--iterations', '2'])
    expect(result.code).toBe(0)
    const body = JSON.parse(result.stdout)
    expect(body).toMatchObject({ success: true, iterations: 1 })
    expect(body.results.map((r: any) => r.agent).sort()).toEqual(['analyst', 'writer'])
    const task = await api('GET', `/agents/task/${body.taskId}`)
    expect(task).toMatchObject({ parallel: true, maxIterations: 2, agents: ['analyst', 'writer'], status: 'completed' })
  })

  test('run --async prints the id; status and status --watch follow it; tasks lists it', async () => {
    const queued = await run(['agents', 'run', 'Plan', 'the', 'office', 'move', '--agents', 'planner,writer', '--async'])
    expect(queued.code).toBe(0)
    const id = /Task (\S+) queued/.exec(queued.stdout)![1]!
    const watched = await run(['agents', 'status', id, '--watch'])
    expect(watched.code).toBe(0)
    // Status lines as the state changes (how many depends on how soon the CLI started), the last one completed.
    expect(watched.stdout).toContain('completed 100%\n')
    expect(watched.stdout).toContain('✓ round 1 planner (Planning,')
    expect(watched.stdout).toContain('✓ round 1 writer (Writing,')
    expect(watched.stdout).toContain('Synthesis')
    const status = await run(['agents', 'status', id])
    expect(status.stdout).toContain('completed')
    expect(status.stdout).toContain('100%')
    expect(JSON.parse((await run(['--json', 'agents', 'status', id])).stdout)).toEqual(await api('GET', `/agents/task/${id}`))
    const tasks = await run(['agents', 'tasks', '--limit', '50'])
    expect(tasks.stdout).toMatch(/^ID\s+STATUS\s+PROGRESS\s+AGENTS\s+CREATED\s+TASK/)
    expect(tasks.stdout).toContain(id)
    expect(tasks.stdout).toContain('Plan the office move')
    expect(JSON.parse((await run(['--json', 'agents', 'tasks'])).stdout)).toEqual(await api('GET', '/agents/tasks?limit=20&offset=0'))
  })

  test('cancel stops a running task; status --watch of it exits 1', async () => {
    const queued = JSON.parse((await run(['--json', 'agents', 'run', 'Long', 'job', '--agents', 'writer,writer,writer,writer,writer', '--async'])).stdout)
    const cancelled = await run(['agents', 'cancel', queued.taskId])
    expect(cancelled.code).toBe(0)
    expect(cancelled.stdout).toBe(`Cancelled task ${queued.taskId}.\n`)
    expect((await api('GET', `/agents/task/${queued.taskId}`)).status).toBe('cancelled')
    const watched = await run(['agents', 'status', queued.taskId, '--watch'])
    expect(watched.code).toBe(1)
    expect(watched.stderr).toContain('error TASK_CANCELLED:')
    const again = await run(['agents', 'cancel', queued.taskId])
    expect(again.code).toBe(1)
    expect(again.stderr).toContain('error CONFLICT:')
  })

  test('errors: unknown agent and unknown task exit 1 with the code; a malformed option exits 2', async () => {
    const unknown = await run(['agents', 'run', 'Write', '--agents', 'poet'])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain('error UNKNOWN_AGENT:')
    const missing = await run(['agents', 'status', 'no-such-task'])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain('error NOT_FOUND:')
    expect((await run(['agents', 'run', 'Write', '--iterations', 'many'])).code).toBe(2)
  })
})
