import type { Command } from 'commander'
import { InvalidArgumentError } from 'commander'
import { ApiClient, CliError, EXIT } from '../client'
import { bold, cyan, dim, emit, example, globals, green, keyValues, table } from '../output'
import { integer } from '../parse'

/** How often a running task is polled: quickly at first, then once a second (well inside the rate limit). */
const pollDelay = (polls: number) => (polls < 20 ? 250 : 1000)
const ENDED = new Set(['completed', 'failed', 'cancelled'])

const list = (value: string) => {
  const names = value.split(',').map((name) => name.trim()).filter(Boolean)
  if (!names.length) throw new InvalidArgumentError('expected a comma-separated list of names')
  return names
}

const oneLine = (text: string, max = 100) => {
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length > max ? `${line.slice(0, max - 1)}…` : line
}

/** One finished agent, as a line: round, name, role, time, what it said (and its tool calls). */
function agentLine(result: any, rounds: boolean): string {
  const tools = result.toolCalls?.length ? dim(` [${result.toolCalls.map((c: any) => c.tool).join(', ')}]`) : ''
  return `${green('✓')} ${rounds ? dim(`round ${result.round} `) : ''}${bold(result.agent)} ${dim(`(${result.role}, ${result.executionTime} ms)`)}${tools} ${oneLine(result.response)}`
}

function printOutcome(task: any): void {
  console.log(`\n${bold('Synthesis')}\n${task.finalSynthesis}`)
  console.log(dim(`\nconfidence ${Number(task.confidence).toFixed(2)} · ${task.iterations} round${task.iterations === 1 ? '' : 's'} · ${task.totalExecutionTime} ms · task ${task.taskId}`))
}

function failure(task: any): CliError {
  return task.status === 'cancelled'
    ? new CliError('TASK_CANCELLED', `task ${task.taskId} was cancelled`, EXIT.apiError)
    : new CliError('TASK_FAILED', task.error ?? `task ${task.taskId} failed`, EXIT.apiError)
}

/**
 * Polls a task until it ends, calling `onChange` with each new state and `onResult` with each
 * agent result as it appears. Resolves to the last state.
 */
async function follow(client: ApiClient, taskId: string, onResult: (result: any, task: any) => void, onChange?: (task: any) => void): Promise<any> {
  let shown = 0
  let last = ''
  for (let polls = 0; ; polls++) {
    let task
    try {
      task = await client.json('GET', `/agents/task/${encodeURIComponent(taskId)}`)
    } catch (error) {
      // Rate limited while following a long task: wait as told and go on.
      if (!(error instanceof CliError) || error.code !== 'RATE_LIMITED') throw error
      await Bun.sleep(5000)
      continue
    }
    for (const result of task.results.slice(shown)) onResult(result, task)
    shown = task.results.length
    const state = `${task.status} ${task.progress} ${task.currentAgent ?? ''}`
    if (state !== last) onChange?.(task)
    last = state
    if (ENDED.has(task.status)) return task
    await Bun.sleep(pollDelay(polls))
  }
}

export function registerAgents(program: Command): void {
  const agents = program.command('agents').description('Multi-agent tasks: list agents, run tasks, follow and cancel them')
  example(
    agents
      .command('list')
      .description('The built-in agents')
      .action(async (_options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('GET', '/agents')
        emit(command, body, () => console.log(table(['NAME', 'ROLE', 'DESCRIPTION'], body.agents.map((a: any) => [a.name, a.role, a.description]), 100)))
      }),
    'uagent agents list',
  )
  example(
    agents
      .command('run <task...>')
      .description("Run a task across agents; shows each agent's line as it finishes, then the synthesis")
      .option('-a, --agents <names>', 'comma-separated agents, in order', list, ['researcher', 'analyst', 'writer', 'critic'])
      .option('-p, --parallel', 'run the agents concurrently')
      .option('-i, --iterations <n>', 'most refinement rounds (1-10)', integer)
      .option('-c, --collections <names>', 'collections the researcher searches (default: all of yours)', list)
      .option('--async', 'queue the task and print its id at once')
      .action(async (words: string[], options: { agents: string[]; parallel?: boolean; iterations?: number; collections?: string[]; async?: boolean }, command: Command) => {
        const client = new ApiClient(globals(command))
        const request = {
          task: words.join(' '),
          agents: options.agents,
          parallel: options.parallel === true,
          ...(options.iterations !== undefined ? { maxIterations: options.iterations } : {}),
          ...(options.collections ? { collections: options.collections } : {}),
        }
        if (!options.async && globals(command).json) {
          emit(command, await client.json('POST', '/agents/execute', request), () => {})
          return
        }
        const queued = await client.json('POST', '/agents/execute', { ...request, async: true })
        if (options.async) {
          emit(command, queued, () => console.log(`Task ${queued.taskId} queued. Follow it with: uagent agents status ${queued.taskId} --watch`))
          return
        }
        // Ctrl-C cancels the task on the server before leaving.
        const interrupt = () => {
          void client.json('DELETE', `/agents/task/${encodeURIComponent(queued.taskId)}`).catch(() => {}).finally(() => process.exit(130))
        }
        process.once('SIGINT', interrupt)
        try {
          console.error(dim(`task ${queued.taskId}: ${request.agents.join(request.parallel ? ' | ' : ' → ')}`))
          const task = await follow(client, queued.taskId, (result, state) => console.log(agentLine(result, state.maxIterations > 1 && state.agents.includes('critic'))))
          if (task.status !== 'completed') throw failure(task)
          printOutcome(task)
        } finally {
          process.off('SIGINT', interrupt)
        }
      }),
    'uagent agents run "Compare our two VPN guides and write a summary" --agents researcher,analyst,writer,critic',
    'uagent agents run "Plan the office move" --agents planner,writer --async',
  )
  example(
    agents
      .command('status <taskId>')
      .description("A task's status, progress and results; --watch follows it to the end")
      .option('-w, --watch', 'follow the task until it ends')
      .action(async (taskId: string, options: { watch?: boolean }, command: Command) => {
        const client = new ApiClient(globals(command))
        const json = globals(command).json
        if (!options.watch) {
          const task = await client.json('GET', `/agents/task/${encodeURIComponent(taskId)}`)
          emit(command, task, () => {
            console.log(
              keyValues([
                ['task', task.task],
                ['status', task.status],
                ['progress', `${task.progress}%`],
                ['current agent', task.currentAgent ?? '-'],
                ['agents', task.agents.join(task.parallel ? ' | ' : ' → ')],
                ['started', task.startTime],
                ['ended', task.endTime ?? '-'],
                ...(task.error ? ([['error', task.error]] as [string, unknown][]) : []),
              ]),
            )
            for (const result of task.results) console.log(agentLine(result, task.iterations > 1))
            if (task.status === 'completed') printOutcome(task)
          })
          return
        }
        const task = await follow(
          client,
          taskId,
          (result) => json || console.log(agentLine(result, true)),
          (state) => json || console.log(cyan(`${state.status} ${state.progress}%${state.currentAgent ? ` · ${state.currentAgent}` : ''}`)),
        )
        emit(command, task, () => task.status === 'completed' && printOutcome(task))
        if (task.status !== 'completed') throw failure(task)
      }),
    'uagent agents status 6f0c… --watch',
  )
  example(
    agents
      .command('tasks')
      .description('Your tasks, newest first')
      .option('-n, --limit <n>', 'tasks per page (1-100)', integer, 20)
      .option('--offset <n>', 'tasks to skip', integer, 0)
      .option('-s, --status <status>', 'only queued, running, completed, failed or cancelled tasks')
      .action(async (options: { limit: number; offset: number; status?: string }, command: Command) => {
        const query = new URLSearchParams({ limit: String(options.limit), offset: String(options.offset), ...(options.status ? { status: options.status } : {}) })
        const body = await new ApiClient(globals(command)).json('GET', `/agents/tasks?${query}`)
        emit(command, body, () => {
          console.log(
            table(
              ['ID', 'STATUS', 'PROGRESS', 'AGENTS', 'CREATED', 'TASK'],
              body.tasks.map((t: any) => [t.taskId, t.status, `${t.progress}%`, t.agents.join(','), t.createdAt.slice(0, 19).replace('T', ' '), t.task]),
            ),
          )
          console.log(dim(`${body.tasks.length} of ${body.total} tasks`))
        })
      }),
    'uagent agents tasks --status running',
  )
  example(
    agents
      .command('cancel <taskId>')
      .description('Cancel a queued or running task')
      .action(async (taskId: string, _options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('DELETE', `/agents/task/${encodeURIComponent(taskId)}`)
        emit(command, body, () => console.log(`Cancelled task ${body.taskId}.`))
      }),
    'uagent agents cancel 6f0c…',
  )
}
