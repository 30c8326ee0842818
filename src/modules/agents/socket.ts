import { AppError } from '../../core/errors'
import type { SocketHandlers } from '../ws/registry'
import { MAX_TASK } from './model'
import type { AgentService } from './service'

const invalid = (message: string) => new AppError('VALIDATION_ERROR', message)

function stringList(value: unknown, name: string, max: number): string[] | undefined {
  if (value === undefined || value === null) return undefined
  if (!Array.isArray(value) || value.length > max || value.some((item) => typeof item !== 'string' || !item || item.length > 64)) {
    throw invalid(`${name} must be a list of at most ${max} names of 1..64 characters`)
  }
  return value as string[]
}

/**
 * `agent_task {taskId}` follows one of the caller's tasks, wherever it runs; `agent_task {task,
 * agents, parallel?, maxIterations?, collections?}` starts one (closing the socket cancels it) and
 * follows it. Each new state comes as `task_progress {taskId, status, progress, currentAgent,
 * results}`; the end as `chat_response {data}`, the task as GET /agents/task/{taskId} shows it.
 */
export function registerAgentSocket(handlers: SocketHandlers, agents: AgentService): void {
  handlers.register('agent_task', async ({ principal, signal, send }, message) => {
    const { taskId, task, agents: names, parallel, maxIterations, collections } = message
    const caller = { userId: principal.user.id, roles: principal.user.roles }
    let id: string
    let started = false
    if (taskId !== undefined) {
      if (typeof taskId !== 'string' || !taskId || taskId.length > 100) throw invalid('taskId must be a string of 1..100 characters')
      if (task !== undefined) throw invalid('send either taskId (follow a task) or task and agents (start one), not both')
      id = taskId
    } else if (task !== undefined) {
      if (typeof task !== 'string' || !/\S/.test(task) || task.length > MAX_TASK) throw invalid(`task must be a string of 1..${MAX_TASK} characters, not blank`)
      const agentNames = stringList(names, 'agents', 10)
      if (!agentNames?.length) throw invalid('agents must list 1 to 10 agent names (see GET /agents)')
      if (parallel !== undefined && typeof parallel !== 'boolean') throw invalid('parallel must be true or false')
      if (maxIterations !== undefined && (typeof maxIterations !== 'number' || !Number.isInteger(maxIterations) || maxIterations < 1 || maxIterations > 10)) {
        throw invalid('maxIterations must be an integer from 1 to 10')
      }
      const submitted = await agents.submit(caller, {
        task,
        agents: agentNames,
        ...(parallel !== undefined ? { parallel } : {}),
        ...(maxIterations !== undefined ? { maxIterations: maxIterations as number } : {}),
        collections: stringList(collections, 'collections', 50) ?? null,
      })
      id = submitted.taskId
      started = true
    } else throw invalid('agent_task needs taskId (follow a task) or task and agents (start one)')
    const result = await agents.follow(caller.userId, id, (progress) => send({ type: 'task_progress', ...progress }), signal)
    // The socket closed before the task it started ended: the task is cancelled, like a stream_chat.
    if (result === null && started) {
      try {
        await agents.cancel(caller.userId, id)
      } catch {
        // It had ended meanwhile (409): nothing to cancel.
      }
    }
    return result
  })
}
