import { t } from 'elysia'
import { nonBlankText } from '../../core/schema'

export const MAX_TASK = 32_000

export const ExecuteRequest = t.Object({
  task: nonBlankText(MAX_TASK, { description: '1..32000 characters, not blank', error: 'body.task: must be 1 to 32000 characters, not blank' }),
  agents: t.Array(t.String({ minLength: 1, maxLength: 64 }), {
    minItems: 1,
    maxItems: 10,
    error: 'body.agents: must list 1 to 10 agent names (see GET /agents)',
  }),
  parallel: t.Optional(t.Boolean({ default: false })),
  maxIterations: t.Optional(t.Integer({ minimum: 1, maximum: 10, default: 3, error: 'body.maxIterations: must be an integer from 1 to 10' })),
  async: t.Optional(t.Boolean({ default: false, description: 'Answer 202 { taskId, status: "queued" } at once; poll GET /agents/task/{taskId}' })),
  collections: t.Optional(
    t.Array(t.String({ minLength: 1, maxLength: 400 }), {
      maxItems: 50,
      description: 'Collections the researcher searches, as references (your own by name; shared ones by name, id or <owner email>/<name>); default: all you can read',
      error: 'body.collections: must list at most 50 collection references',
    }),
  ),
})

export const ToolCall = t.Object({
  tool: t.String(),
  arguments: t.Unknown(),
  result: t.Optional(t.Unknown()),
  error: t.Optional(t.String()),
})

export const AgentResult = t.Object({
  agent: t.String(),
  role: t.String(),
  response: t.String(),
  executionTime: t.Integer({ description: 'Milliseconds' }),
  round: t.Integer({ description: 'Refinement round, from 1' }),
  startTime: t.String({ format: 'date-time' }),
  endTime: t.String({ format: 'date-time' }),
  toolCalls: t.Array(ToolCall),
  sources: t.Optional(t.Array(t.Object({ n: t.Integer(), collection: t.String(), id: t.String(), title: t.String(), score: t.Number() }))),
  objections: t.Optional(t.Array(t.String())),
  steps: t.Optional(t.Array(t.String())),
})

export const ExecuteResponse = t.Object({
  success: t.Boolean(),
  taskId: t.String(),
  results: t.Array(AgentResult),
  finalSynthesis: t.String(),
  totalExecutionTime: t.Integer({ description: 'Milliseconds' }),
  confidence: t.Number({ minimum: 0, maximum: 1 }),
  iterations: t.Integer({ description: 'Rounds run' }),
})

export const QueuedResponse = t.Object({ taskId: t.String(), status: t.Literal('queued') })

const Status = t.Union([t.Literal('queued'), t.Literal('running'), t.Literal('completed'), t.Literal('failed'), t.Literal('cancelled')])

const TaskFields = {
  taskId: t.String(),
  status: Status,
  progress: t.Integer({ minimum: 0, maximum: 100 }),
  currentAgent: t.Nullable(t.String()),
  startTime: t.String({ format: 'date-time', description: 'When the task started (its submission time while queued)' }),
  endTime: t.Nullable(t.String({ format: 'date-time' })),
  createdAt: t.String({ format: 'date-time' }),
  task: t.String(),
  agents: t.Array(t.String()),
  parallel: t.Boolean(),
  maxIterations: t.Integer(),
  collections: t.Nullable(t.Array(t.String())),
  iterations: t.Integer(),
  error: t.Optional(t.String()),
  confidence: t.Optional(t.Number()),
  totalExecutionTime: t.Optional(t.Integer()),
}

export const TaskStatusResponse = t.Object({ ...TaskFields, results: t.Array(AgentResult), finalSynthesis: t.Optional(t.String()) })

export const TasksQuery = t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 20, error: 'query.limit: must be an integer from 1 to 100' })),
  offset: t.Optional(t.Integer({ minimum: 0, maximum: 1_000_000_000, default: 0, error: 'query.offset: must be an integer from 0 to 1000000000' })),
  status: t.Optional(t.Union([t.Literal('queued'), t.Literal('running'), t.Literal('completed'), t.Literal('failed'), t.Literal('cancelled')], { error: 'query.status: must be queued, running, completed, failed or cancelled' })),
})

export const TasksResponse = t.Object({
  tasks: t.Array(t.Object({ ...TaskFields, agentsDone: t.Integer() })),
  total: t.Integer(),
  limit: t.Integer(),
  offset: t.Integer(),
})

export const TaskParams = t.Object({ taskId: t.String({ maxLength: 100 }) })
export const CancelResponse = t.Object({ success: t.Boolean(), taskId: t.String(), status: t.Literal('cancelled') })
export const AgentsResponse = t.Object({ agents: t.Array(t.Object({ name: t.String(), role: t.String(), description: t.String() })) })
