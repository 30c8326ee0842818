import { afterAll, describe, expect, test } from 'bun:test'
import OpenAI from 'openai'
import { type Generator } from '../../../src/ml'
import { type AppOptions } from '../../../src/app'
import { makeServer, makeServerWith, ScriptedGenerator } from '../../helpers'

const stops: (() => void)[] = []
afterAll(() => stops.forEach((stop) => stop()))

type Server = ReturnType<typeof makeServer>

/** A listening server (the OpenAI client speaks real HTTP), optionally with a scripted chat engine. */
function serve(options: AppOptions = {}, generator?: Generator): Server & { base: string } {
  const server = generator ? makeServerWith(generator, options) : makeServer(options)
  const app = server.app.listen({ port: 0 })
  stops.push(() => app.stop(true))
  return Object.assign(server, { base: `http://127.0.0.1:${app.server!.port}` })
}

async function keyFor(server: Server, token: string, name = 'client') {
  const created = await server.call('POST', '/auth/api-keys', { token, body: { name } })
  expect(created.status).toBe(200)
  return created.json as { id: string; key: string }
}

/** What a request failed with (null when it did not fail). */
const failure = (request: PromiseLike<unknown>) => Promise.resolve(request).then(() => null, (error: Error) => error)

const client = (server: { base: string }, apiKey: string) => new OpenAI({ baseURL: `${server.base}/v1`, apiKey, maxRetries: 0 })

const CONTEXT = 'Context: The lighthouse on Skerry Point was built in 1867. Its lamp burns paraffin and is visible for 18 nautical miles.'
const QUESTION = 'When was the lighthouse on Skerry Point built?'
const MESSAGES = [
  { role: 'system' as const, content: CONTEXT },
  { role: 'user' as const, content: QUESTION },
]

describe('/v1 with the official openai client', () => {
  const server = serve()
  let openai: OpenAI
  let userToken = ''

  test('models: the active chat and embedding engines by their real ids, and rag:<collection> per own collection', async () => {
    const { accessToken } = await server.login()
    const other = await server.userSession('other@example.com')
    userToken = accessToken
    for (const [token, collection] of [
      [accessToken, 'handbook'],
      [other.accessToken, 'secrets'],
    ] as const) {
      const ingested = await server.call('POST', '/rag/ingest', {
        token,
        body: {
          collection,
          documents: [
            { id: 'boilers', content: 'The boiler room is checked every Monday by the facilities team.', metadata: { title: 'Boiler checks' } },
            { id: 'parking', content: 'Visitors park in the north lot; staff use the garage under building C.', metadata: { title: 'Parking' } },
          ],
        },
      })
      expect(ingested.status).toBe(200)
    }
    openai = client(server, (await keyFor(server, accessToken)).key)

    const models = await openai.models.list()
    const ids = models.data.map((m) => m.id)
    const status = server.services.models.status()
    expect(ids).toEqual([status.generatorId, status.embedderId, 'rag:handbook'])
    expect(ids).toEqual(['builtin/extractive', 'builtin/hash-embed-384', 'rag:handbook'])
    for (const model of models.data) expect(model).toMatchObject({ object: 'model', created: expect.any(Number), owned_by: expect.any(String) })
    expect((await openai.models.retrieve('builtin/extractive')).id).toBe('builtin/extractive')
    expect((await openai.models.retrieve('rag:handbook')).id).toBe('rag:handbook')
    expect(await failure(openai.models.retrieve('rag:secrets'))).toBeInstanceOf(OpenAI.NotFoundError)
    // The same id, unencoded, as simpler clients send it.
    const raw = await fetch(`${server.base}/v1/models/builtin/extractive`, { headers: { authorization: `Bearer ${accessToken}` } })
    expect(((await raw.json()) as any).id).toBe('builtin/extractive')
  })

  test('a chat completion, and the same one streamed chunk by chunk, say the same; usage is real', async () => {
    const whole = await openai.chat.completions.create({ model: 'builtin/extractive', messages: MESSAGES, temperature: 0, seed: 7 })
    expect(whole.object).toBe('chat.completion')
    expect(whole.model).toBe('builtin/extractive')
    expect(whole.choices).toHaveLength(1)
    expect(whole.choices[0]!.message.role).toBe('assistant')
    expect(whole.choices[0]!.finish_reason).toBe('stop')
    const text = whole.choices[0]!.message.content!
    expect(text).toContain('built in 1867')
    expect(whole.usage!.prompt_tokens).toBeGreaterThan(10)
    expect(whole.usage!.completion_tokens).toBeGreaterThan(5)
    expect(whole.usage!.total_tokens).toBe(whole.usage!.prompt_tokens + whole.usage!.completion_tokens)

    const stream = await openai.chat.completions.create({
      model: 'builtin/extractive',
      messages: MESSAGES,
      temperature: 0,
      seed: 7,
      stream: true,
      stream_options: { include_usage: true },
    })
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = []
    for await (const chunk of stream) chunks.push(chunk)
    expect(chunks.length).toBeGreaterThan(5)
    for (const chunk of chunks) expect(chunk).toMatchObject({ object: 'chat.completion.chunk', id: chunks[0]!.id, model: 'builtin/extractive' })
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant')
    const withChoices = chunks.filter((c) => c.choices.length > 0)
    expect(withChoices.at(-1)!.choices[0]!.finish_reason).toBe('stop')
    expect(withChoices.slice(0, -1).every((c) => c.choices[0]!.finish_reason === null)).toBe(true)
    expect(withChoices.map((c) => c.choices[0]!.delta.content ?? '').join('')).toBe(text)
    const last = chunks.at(-1)!
    expect(last.choices).toEqual([])
    expect(last.usage!.prompt_tokens).toBe(whole.usage!.prompt_tokens)
    expect(last.usage!.completion_tokens).toBeGreaterThan(5)
    expect(last.usage!.total_tokens).toBe(last.usage!.prompt_tokens + last.usage!.completion_tokens)
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true)
  })

  test('the stream ends with data: [DONE]; without include_usage no chunk carries usage', async () => {
    const response = await fetch(`${server.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${userToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'builtin/extractive', messages: MESSAGES, stream: true }),
    })
    expect(response.headers.get('content-type')).toStartWith('text/event-stream')
    const events = (await response.text()).split('\n\n').filter(Boolean)
    expect(events.at(-1)).toBe('data: [DONE]')
    for (const event of events.slice(0, -1)) expect(JSON.parse(event.slice('data: '.length))).not.toHaveProperty('usage')
  })

  test('max_tokens and stop cut the reply and say so in finish_reason', async () => {
    const cut = await openai.chat.completions.create({ model: 'builtin/extractive', messages: MESSAGES, max_tokens: 3 })
    expect(cut.choices[0]!.finish_reason).toBe('length')
    expect(cut.choices[0]!.message.content!.split(' ')).toHaveLength(3)
    const stopped = await openai.chat.completions.create({ model: 'builtin/extractive', messages: MESSAGES, stop: ['1867'] })
    expect(stopped.choices[0]!.message.content).toEndWith('was built in')
  })

  test('embeddings for one string and for three, float and base64 decoding to the same vectors', async () => {
    const embedder = await server.services.models.embedder()
    const texts = ['boiler room checks', 'visitor parking', 'paraffin lamps']
    const one = await openai.embeddings.create({ model: 'builtin/hash-embed-384', input: texts[0]!, encoding_format: 'float' })
    expect(one.object).toBe('list')
    expect(one.data).toHaveLength(1)
    expect(one.data[0]!.embedding).toHaveLength(384)
    expect(one.usage.prompt_tokens).toBe(3)
    expect(one.usage.total_tokens).toBe(3)

    const floats = await openai.embeddings.create({ model: 'builtin/hash-embed-384', input: texts, encoding_format: 'float' })
    const base64 = await openai.embeddings.create({ model: 'builtin/hash-embed-384', input: texts, encoding_format: 'base64' })
    const byDefault = await openai.embeddings.create({ model: 'builtin/hash-embed-384', input: texts })
    const expected = await embedder.embed(texts)
    expect(floats.data.map((d) => d.index)).toEqual([0, 1, 2])
    expect(floats.usage.prompt_tokens).toBe(7)
    for (const [i, vector] of expected.entries()) {
      expect(floats.data[i]!.embedding).toEqual(Array.from(vector))
      const encoded = base64.data[i]!.embedding as unknown as string
      expect(typeof encoded).toBe('string')
      const bytes = Buffer.from(encoded, 'base64')
      expect(Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4))).toEqual(floats.data[i]!.embedding)
      expect(Array.from(byDefault.data[i]!.embedding)).toEqual(floats.data[i]!.embedding)
    }
    expect(one.data[0]!.embedding).toEqual(floats.data[0]!.embedding)

    const tokens = openai.embeddings.create({ model: 'builtin/hash-embed-384', input: [[101, 2023, 102]] })
    expect(await failure(tokens)).toBeInstanceOf(OpenAI.BadRequestError)
    expect((await failure(tokens))?.message).toContain('token arrays are not supported')
    expect(await failure(openai.embeddings.create({ model: 'builtin/extractive', input: 'x' }))).toBeInstanceOf(OpenAI.NotFoundError)
  })

  test('rag:<collection> answers from that collection, citing it, with sources', async () => {
    const question = 'How often is the boiler room checked?'
    const answer = await openai.chat.completions.create({ model: 'rag:handbook', messages: [{ role: 'user', content: question }] })
    const text = answer.choices[0]!.message.content!
    expect(text).toContain('every Monday')
    expect(text).toContain('[1]')
    const sources = (answer as unknown as { sources: { id: string; title: string; relevanceScore: number }[] }).sources
    expect(sources[0]).toMatchObject({ id: 'boilers', title: 'Boiler checks' })
    expect(answer.usage!.prompt_tokens).toBeGreaterThan(0)
    expect(answer.usage!.completion_tokens).toBeGreaterThan(0)

    const stream = await openai.chat.completions.create({ model: 'rag:handbook', messages: [{ role: 'user', content: question }], stream: true })
    const chunks: any[] = []
    for await (const chunk of stream) chunks.push(chunk)
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(text)
    expect(chunks[0].sources).toEqual(sources)
    // Another user's collection is not a model this caller has.
    expect(await failure(openai.chat.completions.create({ model: 'rag:secrets', messages: [{ role: 'user', content: question }] }))).toBeInstanceOf(OpenAI.NotFoundError)
  })

  test('unknown model → NotFoundError; unsupported parameters and tools on the built-in engine → BadRequestError', async () => {
    const unknown = openai.chat.completions.create({ model: 'gpt-4o', messages: MESSAGES })
    expect(await failure(unknown)).toBeInstanceOf(OpenAI.NotFoundError)
    expect((await failure(unknown))?.message).toContain('The model `gpt-4o` does not exist')
    expect((await failure(openai.chat.completions.create({ model: 'builtin/hash-embed-384', messages: MESSAGES })))?.message).toContain('embedding model')
    const refusals: [Partial<OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming>, string][] = [
      [{ n: 2 }, 'n'],
      [{ logprobs: true }, 'logprobs'],
      [{ presence_penalty: 1 }, 'presence_penalty'],
      [{ response_format: { type: 'json_object' } }, 'response_format'],
      [{ tools: [{ type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } }] }, 'tools'],
    ]
    for (const [extra, param] of refusals) {
      const error = await openai.chat.completions.create({ model: 'builtin/extractive', messages: MESSAGES, ...extra }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(OpenAI.BadRequestError)
      expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe(param)
      expect((error as InstanceType<typeof OpenAI.BadRequestError>).type).toBe('invalid_request_error')
    }
    const tools = await openai.chat.completions
      .create({ model: 'builtin/extractive', messages: MESSAGES, tools: [{ type: 'function', function: { name: 'f' } }] })
      .catch((e: Error) => e.message)
    expect(tools).toContain('Tool calling is not supported by builtin/extractive')
    const image = openai.chat.completions.create({
      model: 'builtin/extractive',
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] }],
    })
    expect((await failure(image))?.message).toContain('only text parts are supported')
    // Text parts are read as text.
    const parts = await openai.chat.completions.create({
      model: 'builtin/extractive',
      messages: [
        { role: 'system', content: [{ type: 'text', text: CONTEXT }] },
        { role: 'user', content: [{ type: 'text', text: QUESTION }] },
      ],
    })
    expect(parts.choices[0]!.message.content).toContain('built in 1867')
  })

  test("a deleted key raises AuthenticationError; errors are in OpenAI's shape on /v1 only", async () => {
    const { key, id } = await keyFor(server, userToken, 'short-lived')
    const withKey = client(server, key)
    expect((await withKey.models.list()).data.length).toBeGreaterThan(0)
    expect((await server.call('DELETE', `/auth/api-keys/${id}`, { token: userToken })).status).toBe(200)
    expect(await failure(withKey.models.list())).toBeInstanceOf(OpenAI.AuthenticationError)
    const raw = await fetch(`${server.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'builtin/extractive', messages: MESSAGES }),
    })
    expect(raw.status).toBe(401)
    expect(await raw.json()).toEqual({ error: { message: expect.stringContaining('API key'), type: 'authentication_error', param: null, code: 'invalid_api_key' } })
    const invalid = await server.call('POST', '/v1/chat/completions', { token: userToken, body: { model: 'builtin/extractive', messages: [] } })
    expect(invalid.status).toBe(400)
    expect(invalid.json.error).toMatchObject({ type: 'invalid_request_error', param: 'messages' })
    const elsewhere = await server.call('DELETE', '/auth/api-keys/none', { token: key })
    expect(elsewhere.status).toBe(401)
    expect(elsewhere.json).toMatchObject({ error: true, code: 'UNAUTHORIZED' })
  })
})

describe('/v1 in analytics', () => {
  test('tokens are recorded per model: completions whole and streamed, and embeddings', async () => {
    const server = serve()
    const { accessToken } = await server.login()
    const openai = client(server, (await keyFor(server, accessToken)).key)
    const whole = await openai.chat.completions.create({ model: 'builtin/extractive', messages: MESSAGES })
    let streamed = 0
    for await (const chunk of await openai.chat.completions.create({ model: 'builtin/extractive', messages: MESSAGES, stream: true, stream_options: { include_usage: true } })) {
      streamed += chunk.usage?.total_tokens ?? 0
    }
    const embedded = await openai.embeddings.create({ model: 'builtin/hash-embed-384', input: ['one text', 'another text'] })
    await server.services.recorder.settle()
    const dashboard = await server.call('GET', '/analytics/dashboard', { token: accessToken })
    const models = Object.fromEntries(dashboard.json.ai.topModels.map((m: any) => [m.model, m]))
    expect(models['builtin/extractive']).toMatchObject({ requests: 2, tokens: whole.usage!.total_tokens + streamed })
    expect(models['builtin/hash-embed-384']).toMatchObject({ requests: 1, tokens: embedded.usage.total_tokens })
  })
})

describe('/v1 limits and cancellation', () => {
  test('past the per-user rate limit: RateLimitError with Retry-After', async () => {
    const server = serve({ rateLimitMax: 2 })
    const { accessToken } = await server.login()
    const openai = client(server, (await keyFor(server, accessToken)).key)
    await openai.models.list()
    const error = await openai.models.list().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.RateLimitError)
    const limited = error as InstanceType<typeof OpenAI.RateLimitError>
    expect(Number(limited.headers?.get('retry-after'))).toBeGreaterThan(0)
    expect(limited.code).toBe('rate_limit_exceeded')
  })

  test('sampling and length parameters reach the engine', async () => {
    const generator = new ScriptedGenerator('one two three')
    const server = serve({}, generator)
    const { accessToken } = await server.login()
    const openai = client(server, accessToken)
    await openai.chat.completions.create({
      model: 'test/scripted',
      messages: [{ role: 'developer', content: 'Be brief.' }, { role: 'user', content: 'Count.' }],
      temperature: 0.4,
      top_p: 0.5,
      max_tokens: 100,
      max_completion_tokens: 9,
      stop: 'END',
    })
    expect(generator.options.at(-1)).toEqual({ temperature: 0.4, topP: 0.5, maxTokens: 9, stop: ['END'] })
    expect(generator.prompts.at(-1)).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Count.' },
    ])
  })

  test('a client that disconnects mid-stream stops the generation', async () => {
    const generator = new ScriptedGenerator(Array.from({ length: 200 }, (_, i) => `word${i}`).join(' '), 5)
    const server = serve({}, generator)
    const { accessToken } = await server.login()
    const openai = client(server, (await keyFor(server, accessToken)).key)
    const stream = await openai.chat.completions.create({ model: 'test/scripted', messages: [{ role: 'user', content: 'go' }], stream: true })
    let received = ''
    for await (const chunk of stream) {
      received += chunk.choices[0]?.delta.content ?? ''
      if (received.includes('word3')) break
    }
    stream.controller.abort()
    for (let i = 0; i < 200 && !generator.cancelled; i++) await Bun.sleep(10)
    expect(generator.cancelled).toBe(true)
    expect(generator.piecesSent).toBeLessThan(200)
  })
})
