import { t } from 'elysia'

/**
 * The WebSocket protocol at /ws, as documented in /openapi/json (OpenAPI has no WebSocket
 * operations: it is described on `GET /ws`, the upgrade request, under `x-websocket`).
 * Message handlers check their own input at run time; these schemas are the documentation.
 */
const id = t.Optional(t.Union([t.String(), t.Number()], { description: 'Any value; echoed on every reply to this message' }))

export const ClientMessages = {
  auth: t.Object({ type: t.Literal('auth'), token: t.String({ description: 'An access token from POST /auth/login' }), id }),
  stream_chat: t.Object({
    type: t.Literal('stream_chat'),
    message: t.String({ minLength: 1, maxLength: 32_000 }),
    conversationId: t.Optional(t.String({ maxLength: 100 })),
    context: t.Optional(t.String({ maxLength: 100_000 })),
    optimizePrompt: t.Optional(t.Boolean()),
    assistant: t.Optional(t.String({ maxLength: 400, description: 'Answer as this assistant (as `assistant` on POST /chat)' })),
    id,
  }),
  voice_command: t.Object({ type: t.Literal('voice_command'), command: t.String(), context: t.Optional(t.Record(t.String(), t.Unknown())), id }),
  plugin_execute: t.Object({
    type: t.Literal('plugin_execute'),
    plugin: t.String(),
    action: t.String(),
    parameters: t.Optional(t.Record(t.String(), t.Unknown())),
    id,
  }),
  agent_task: t.Object(
    {
      type: t.Literal('agent_task'),
      taskId: t.Optional(t.String({ maxLength: 100, description: 'Follow this task of yours (started by any means, on any replica)' })),
      task: t.Optional(t.String({ minLength: 1, maxLength: 32_000, description: 'Or start a task (as POST /agents/execute) and follow it; closing the socket cancels it' })),
      agents: t.Optional(t.Array(t.String(), { minItems: 1, maxItems: 10 })),
      parallel: t.Optional(t.Boolean()),
      maxIterations: t.Optional(t.Integer({ minimum: 1, maximum: 10 })),
      collections: t.Optional(t.Array(t.String(), { maxItems: 50 })),
      id,
    },
    { description: 'taskId, or task and agents' },
  ),
}

export const ServerMessages = {
  auth_success: t.Object({ type: t.Literal('auth_success'), userId: t.String(), sessionId: t.String(), id }),
  stream_chunk: t.Object({ type: t.Literal('stream_chunk'), content: t.String({ description: 'The next piece of the reply' }), id }),
  task_progress: t.Object({
    type: t.Literal('task_progress'),
    taskId: t.String(),
    status: t.Union([t.Literal('queued'), t.Literal('running')]),
    progress: t.Integer({ minimum: 0, maximum: 100 }),
    currentAgent: t.Nullable(t.String()),
    results: t.Array(t.Unknown(), { description: 'The results of the agents done so far, as in GET /agents/task/{taskId}' }),
    id,
  }),
  ingest_job: t.Object({
    type: t.Literal('ingest_job'),
    data: t.Unknown({ description: 'One of your ingestion jobs as GET /rag/jobs/{id} shows it, sent unasked at each change (queued, each page or file read, the end) from `auth` on' }),
  }),
  chat_response: t.Object({
    type: t.Literal('chat_response'),
    data: t.Unknown({ description: 'The result: a ChatResponse (stream_chat), VoiceCommandResponse (voice_command), PluginExecuteResponse (plugin_execute) or the ended task as GET /agents/task/{taskId} shows it (agent_task)' }),
    id,
  }),
  error: t.Object({
    type: t.Literal('error'),
    code: t.String({ description: 'UNAUTHORIZED, VALIDATION_ERROR, or the code an HTTP call would answer with' }),
    message: t.String(),
    id,
  }),
}

export const WS_DESCRIPTION = `Upgrade to a WebSocket. Every message, both ways, is a JSON object with a \`type\`; a client may add \`id\`, echoed on every reply to that message.

1. Send \`{"type":"auth","token":"<accessToken>"}\` first; the server answers \`auth_success {userId, sessionId}\`, or \`error {code:"UNAUTHORIZED"}\` (the socket stays open; try again).
2. \`stream_chat {message, conversationId?, context?, optimizePrompt?, collection?, collections?, assistant?}\` → \`stream_chunk {content}\` … then \`chat_response {data: ChatResponse}\`.
3. \`voice_command {command, context?}\` → \`chat_response {data: VoiceCommandResponse}\`; \`plugin_execute {plugin, action, parameters}\` → \`chat_response {data: PluginExecuteResponse}\` (when those areas are installed).
   \`agent_task {taskId}\` follows one of your agent tasks, whichever replica runs it (or \`agent_task {task, agents, parallel?, maxIterations?, collections?}\` starts one and follows it; closing the socket cancels it): \`task_progress {taskId, status, progress, currentAgent, results}\` at each change, then \`chat_response {data}\` with the ended task as \`GET /agents/task/{taskId}\` shows it.
   From \`auth\` on, each change of one of your ingestion jobs (an upload answered 202: queued, pages read, files done, the end) comes unasked as \`ingest_job {data}\`, the job as \`GET /rag/jobs/{id}\` shows it, whichever replica runs it.
4. Anything before \`auth\` → \`error {code:"UNAUTHORIZED"}\`; invalid JSON, a bad shape or an unknown \`type\` → \`error {code:"VALIDATION_ERROR"}\`. Errors never close the socket. Frames larger than the request size limit close it with 1009; closing the socket cancels what it started.

The message shapes are under \`x-websocket\` of this operation: \`client\` (what a client sends) and \`server\` (what it receives).`
