import { t } from 'elysia'

// The OpenAI API's request and response shapes, as far as this server serves them. Fields the
// OpenAI clients send that change nothing here (`user`, `seed`, zero penalties) are accepted;
// fields that would change the answer and cannot be honoured are refused with a 400 (service.ts).

export const OpenAiError = t.Object(
  {
    error: t.Object({
      message: t.String(),
      type: t.String({ description: 'invalid_request_error, authentication_error, permission_error, rate_limit_error or server_error' }),
      param: t.Nullable(t.String()),
      code: t.Nullable(t.String()),
    }),
  },
  { description: "Every non-2xx response under /v1, in OpenAI's shape" },
)

export const v1Errors = {
  400: OpenAiError,
  401: OpenAiError,
  404: OpenAiError,
  429: OpenAiError,
  503: OpenAiError,
}

export const Model = t.Object({
  id: t.String({ description: 'The active chat or embedding engine, or rag:<collection> for grounded answers from one of your collections' }),
  object: t.Literal('model'),
  created: t.Integer({ description: 'Unix seconds' }),
  owned_by: t.String(),
})

export const ModelList = t.Object({ object: t.Literal('list'), data: t.Array(Model) })

export const ModelParams = t.Object({ id: t.String({ minLength: 1, maxLength: 300 }) })
export const OwnedModelParams = t.Object({ id: t.String({ minLength: 1, maxLength: 150 }), name: t.String({ minLength: 1, maxLength: 150 }) })

const TextPart = t.Object({ type: t.String({ maxLength: 40 }), text: t.Optional(t.String()) })

const ToolCall = t.Object({
  id: t.String({ maxLength: 200 }),
  type: t.Literal('function'),
  function: t.Object({ name: t.String({ maxLength: 200 }), arguments: t.String() }),
})

export const Message = t.Object({
  role: t.Union([t.Literal('system'), t.Literal('developer'), t.Literal('user'), t.Literal('assistant'), t.Literal('tool')]),
  content: t.Optional(t.Nullable(t.Union([t.String(), t.Array(TextPart, { maxItems: 1000 })]))),
  name: t.Optional(t.String({ maxLength: 200 })),
  tool_calls: t.Optional(t.Array(ToolCall, { maxItems: 128 })),
  tool_call_id: t.Optional(t.String({ maxLength: 200 })),
})

const Tool = t.Object({
  type: t.Literal('function'),
  function: t.Object({
    name: t.String({ minLength: 1, maxLength: 64 }),
    description: t.Optional(t.String()),
    parameters: t.Optional(t.Record(t.String(), t.Unknown())),
    strict: t.Optional(t.Nullable(t.Boolean())),
  }),
})

const ToolChoice = t.Union([
  t.Literal('none'),
  t.Literal('auto'),
  t.Literal('required'),
  t.Object({ type: t.Literal('function'), function: t.Object({ name: t.String({ maxLength: 64 }) }) }),
])

const maxTokens = (description: string) => t.Optional(t.Nullable(t.Integer({ minimum: 1, maximum: 1_000_000, description })))

export const ChatCompletionRequest = t.Object({
  model: t.String({ minLength: 1, maxLength: 300 }),
  messages: t.Array(Message, { minItems: 1, maxItems: 10_000 }),
  temperature: t.Optional(t.Nullable(t.Number({ minimum: 0, maximum: 2 }))),
  top_p: t.Optional(t.Nullable(t.Number({ minimum: 0, maximum: 1 }))),
  max_tokens: maxTokens('Longest reply, in tokens'),
  max_completion_tokens: maxTokens('Longest reply, in tokens (wins over max_tokens)'),
  stop: t.Optional(t.Nullable(t.Union([t.String({ maxLength: 1000 }), t.Array(t.String({ maxLength: 1000 }), { maxItems: 4 })]))),
  stream: t.Optional(t.Nullable(t.Boolean())),
  stream_options: t.Optional(t.Nullable(t.Object({ include_usage: t.Optional(t.Nullable(t.Boolean())) }))),
  n: t.Optional(t.Nullable(t.Integer({ minimum: 1, maximum: 128 }))),
  logprobs: t.Optional(t.Nullable(t.Boolean())),
  top_logprobs: t.Optional(t.Nullable(t.Integer({ minimum: 0, maximum: 20 }))),
  seed: t.Optional(t.Nullable(t.Integer({ minimum: -9_223_372_036_854_775_808, maximum: 9_223_372_036_854_775_807 }))),
  frequency_penalty: t.Optional(t.Nullable(t.Number({ minimum: -2, maximum: 2 }))),
  presence_penalty: t.Optional(t.Nullable(t.Number({ minimum: -2, maximum: 2 }))),
  logit_bias: t.Optional(t.Nullable(t.Record(t.String(), t.Number()))),
  response_format: t.Optional(t.Nullable(t.Object({ type: t.String({ maxLength: 40 }) }))),
  tools: t.Optional(t.Nullable(t.Array(Tool, { maxItems: 128 }))),
  tool_choice: t.Optional(t.Nullable(ToolChoice)),
  parallel_tool_calls: t.Optional(t.Nullable(t.Boolean())),
  user: t.Optional(t.String({ maxLength: 256 })),
})

const Usage = t.Object({ prompt_tokens: t.Integer(), completion_tokens: t.Integer(), total_tokens: t.Integer() })

export const Source = t.Object({ id: t.String(), title: t.String(), relevanceScore: t.Number() })

export const ChatCompletion = t.Object({
  id: t.String(),
  object: t.Literal('chat.completion'),
  created: t.Integer(),
  model: t.String(),
  choices: t.Array(
    t.Object({
      index: t.Integer(),
      message: t.Object({
        role: t.Literal('assistant'),
        content: t.Nullable(t.String()),
        refusal: t.Optional(t.Nullable(t.String())),
        tool_calls: t.Optional(t.Array(ToolCall)),
      }),
      logprobs: t.Null(),
      finish_reason: t.String({ description: 'stop, length or tool_calls' }),
    }),
  ),
  usage: Usage,
  system_fingerprint: t.Optional(t.Nullable(t.String())),
  sources: t.Optional(t.Array(Source, { description: 'rag:<collection> and assistant: models: the passages the answer cites as [1], [2]…' })),
})

export const EmbeddingsRequest = t.Object({
  model: t.String({ minLength: 1, maxLength: 300 }),
  input: t.Union([t.String({ maxLength: 200_000 }), t.Array(t.String({ maxLength: 200_000 }), { minItems: 1, maxItems: 2048 })], {
    error:
      'body.input: must be a string or an array of 1 to 2048 strings (each up to 200000 characters); token arrays are not supported: send the text itself',
  }),
  encoding_format: t.Optional(t.Union([t.Literal('float'), t.Literal('base64')])),
  dimensions: t.Optional(t.Integer({ minimum: 1, maximum: 65_536 })),
  user: t.Optional(t.String({ maxLength: 256 })),
})

export const EmbeddingsResponse = t.Object({
  object: t.Literal('list'),
  data: t.Array(
    t.Object({
      object: t.Literal('embedding'),
      index: t.Integer(),
      embedding: t.Union([t.Array(t.Number()), t.String({ description: 'base64 of little-endian float32s' })]),
    }),
  ),
  model: t.String(),
  usage: t.Object({ prompt_tokens: t.Integer(), total_tokens: t.Integer() }),
})
