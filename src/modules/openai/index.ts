import { Elysia } from 'elysia'
import { authPlugin } from '../../core/auth'
import type { RateLimiter } from '../../core/rate-limit'
import { sseResponse } from '../../core/sse'
import { recordUsage } from '../../core/usage'
import type { AuthService } from '../auth/service'
import { ChatCompletion, ChatCompletionRequest, EmbeddingsRequest, EmbeddingsResponse, Model, ModelList, ModelParams, OwnedModelParams, OpenAiError, v1Errors } from './model'
import type { OpenAiService, StreamEvent, Usage } from './service'

/** The streamed variant, documented only: a stream is not checked against a schema at run time. */
const streamedOrWhole = {
  200: {
    description: 'A chat.completion object, or with stream: true a text/event-stream of chat.completion.chunk objects ending with data: [DONE]',
    content: {
      'application/json': { schema: ChatCompletion as object },
      'text/event-stream': { schema: { type: 'string' as const } },
    },
  },
  ...Object.fromEntries(Object.keys(v1Errors).map((status) => [status, { description: "OpenAI's error shape", content: { 'application/json': { schema: OpenAiError as object } } }])),
}

/**
 * The OpenAI-compatible API under /v1, for the OpenAI client libraries and the tools built on
 * them. Authenticated by a personal API key (or an access token); errors in OpenAI's shape.
 */
export function openAiModule(v1: OpenAiService, auth: AuthService, limiter: RateLimiter) {
  return new Elysia({ name: 'module:openai', prefix: '/v1', tags: ['OpenAI-compatible'] })
    .use(authPlugin(auth, limiter))
    .get('/models', async ({ principal }) => ({ object: 'list' as const, data: await v1.listModels(principal.user.id) }), {
      auth: true,
      response: { 200: ModelList, ...v1Errors },
      detail: { summary: 'The models you can use: the chat and embedding engines, and rag:<collection> for each of your collections' },
    })
    .get('/models/:id', ({ params, principal }) => v1.getModel(principal.user.id, params.id), {
      auth: true,
      params: ModelParams,
      response: { 200: Model, ...v1Errors },
      detail: { summary: 'One model by id (an id with a "/" may be sent encoded as %2F, or as it is: see the next route)' },
    })
    .get('/models/:id/:name', ({ params, principal }) => v1.getModel(principal.user.id, `${params.id}/${params.name}`), {
      auth: true,
      params: OwnedModelParams,
      response: { 200: Model, ...v1Errors },
      detail: { summary: 'One model whose id has an owner part, e.g. HuggingFaceTB/SmolLM2-135M-Instruct or builtin/extractive (id: the part before the "/")' },
    })
    .post(
      '/chat/completions',
      async ({ body, principal, request, set }) => {
        const plan = await v1.plan(principal.user.id, body)
        // Sent as it is: a relayed reply is the model server's own object, not reshaped to the schema.
        // Tokens per model, for analytics: a rag: model under one label (its qualified name) however it was named.
        const record = (usage: Partial<Usage> | null | undefined) =>
          usage && recordUsage(request, { model: plan.kind === 'rag' ? plan.label : body.model, promptTokens: usage.prompt_tokens ?? 0, completionTokens: usage.completion_tokens ?? 0 })
        if (!body.stream) {
          const completion = await v1.complete(plan, request.signal)
          record(completion.usage as Partial<Usage> | undefined)
          return Response.json(completion, { headers: set.headers as Record<string, string> })
        }
        const controller = new AbortController()
        const stop = () => controller.abort()
        request.signal.addEventListener('abort', stop, { once: true })
        const events = v1.stream(plan, controller.signal, record)
        // The first event waits for the first piece: a failure to start is still an HTTP error.
        const first = await events.next().catch((error: unknown) => {
          request.signal.removeEventListener('abort', stop)
          throw error
        })
        return sseResponse(
          async function* (signal): AsyncGenerator<StreamEvent> {
            signal.addEventListener('abort', stop, { once: true })
            if (first.done) return
            yield first.value
            yield* events
          },
          set.headers as Record<string, string>,
          request.signal,
        )
      },
      {
        auth: true,
        body: ChatCompletionRequest,
        response: { 200: ChatCompletion, ...v1Errors },
        detail: { summary: 'Chat completion, whole or streamed (stream: true); rag:<collection> answers from that collection', responses: streamedOrWhole },
      },
    )
    .post(
      '/embeddings',
      async ({ body, request }) => {
        // Many inputs are embedded on the work pool: a client that goes away takes them out of it.
        const result = await v1.embeddings(body, request.signal)
        recordUsage(request, { model: result.model, promptTokens: result.usage.prompt_tokens, completionTokens: 0 })
        return result
      },
      {
        auth: true,
        body: EmbeddingsRequest,
        response: { 200: EmbeddingsResponse, ...v1Errors },
        detail: { summary: 'Embeddings of a string or an array of strings (encoding_format float or base64)' },
      },
    )
}
