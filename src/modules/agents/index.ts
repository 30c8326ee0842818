import { Elysia } from 'elysia'
import { authPlugin } from '../../core/auth'
import type { RateLimiter } from '../../core/rate-limit'
import type { AuthService } from '../auth/service'
import { ErrorResponse } from '../system/model'
import { AgentsResponse, CancelResponse, ExecuteRequest, ExecuteResponse, QueuedResponse, TaskParams, TasksQuery, TasksResponse, TaskStatusResponse } from './model'
import type { AgentService } from './service'

const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse, 429: ErrorResponse }

export function agentsModule(agents: AgentService, auth: AuthService, limiter: RateLimiter) {
  return new Elysia({ name: 'module:agents', prefix: '/agents', tags: ['Agents'] })
    .use(authPlugin(auth, limiter))
    .get('', () => agents.list(), {
      auth: true,
      response: { 200: AgentsResponse, 401: ErrorResponse, 429: ErrorResponse },
      detail: { summary: 'The built-in agents: name, role, description' },
    })
    .post(
      '/execute',
      async ({ body, principal, request, status }) => {
        const caller = { userId: principal.user.id, roles: principal.user.roles }
        if (body.async) return status(202, await agents.submit(caller, body))
        return agents.execute(caller, body, request.signal)
      },
      {
        auth: true,
        body: ExecuteRequest,
        response: { 200: ExecuteResponse, 202: QueuedResponse, ...errors, 409: ErrorResponse, 500: ErrorResponse, 503: ErrorResponse },
        detail: { summary: 'Run a task across agents, in sequence or in parallel; waits for the result, or answers 202 at once with async: true' },
      },
    )
    .get('/tasks', ({ query, principal }) => agents.tasks(principal.user.id, query.limit ?? 20, query.offset ?? 0, query.status), {
      auth: true,
      query: TasksQuery,
      response: { 200: TasksResponse, ...errors },
      detail: { summary: 'Your agent tasks, newest first' },
    })
    .get('/task/:taskId', ({ params, principal }) => agents.get(principal.user.id, params.taskId), {
      auth: true,
      params: TaskParams,
      response: { 200: TaskStatusResponse, ...errors },
      detail: { summary: "A task's status, progress and the results of the agents done so far" },
    })
    .delete('/task/:taskId', ({ params, principal }) => agents.cancel(principal.user.id, params.taskId), {
      auth: true,
      params: TaskParams,
      response: { 200: CancelResponse, ...errors, 409: ErrorResponse },
      detail: { summary: 'Cancel a queued or running task (its running generation is aborted)' },
    })
}
