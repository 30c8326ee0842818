import { afterAll, describe, expect, test } from 'bun:test'
import OpenAI from 'openai'
import { makeServer } from '../../helpers'

// A model server that speaks OpenAI's protocol and calls a tool whenever it is offered one.
const seen: any[] = []
const TOOL_CALL = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }
const upstream = Bun.serve({
  port: 0,
  async fetch(request) {
    const { pathname } = new URL(request.url)
    if (pathname === '/v1/models') return Response.json({ data: [{ id: 'fake-model' }] })
    const body = (await request.json()) as any
    seen.push(body)
    const base = { id: 'chatcmpl-upstream', created: 1, model: body.model }
    const calls = body.tools?.length > 0
    if (!body.stream) {
      const message = calls ? { role: 'assistant', content: null, tool_calls: [TOOL_CALL] } : { role: 'assistant', content: 'Plain reply.' }
      return Response.json({
        ...base,
        object: 'chat.completion',
        choices: [{ index: 0, message, finish_reason: calls ? 'tool_calls' : 'stop' }],
        usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
      })
    }
    const chunk = (delta: object, finish: string | null = null) =>
      `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
    const events = calls
      ? [
          chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, ...TOOL_CALL, function: { name: 'get_weather', arguments: '' } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":"Oslo"}' } }] }),
          chunk({}, 'tool_calls'),
        ]
      : [chunk({ role: 'assistant', content: 'Plain' }), chunk({ content: ' reply.' }), chunk({}, 'stop')]
    return new Response(`${events.join('')}data: [DONE]\n\n`, { headers: { 'content-type': 'text/event-stream' } })
  },
})
afterAll(() => {
  upstream.stop(true)
  app.stop(true)
})

const server = makeServer({ llmUrl: `http://127.0.0.1:${upstream.port}`, llmModel: 'fake-model' })
const app = server.app.listen({ port: 0 })
const TOOLS: OpenAI.Chat.Completions.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
]

async function openai() {
  const { accessToken } = await server.login()
  return new OpenAI({ baseURL: `http://127.0.0.1:${app.server!.port}/v1`, apiKey: accessToken, maxRetries: 0 })
}

describe('tools with an upstream model server', () => {
  test('tools and tool_choice are passed through; the tool call comes back', async () => {
    const client = await openai()
    expect((await client.models.list()).data.map((m) => m.id)).toContain('fake-model')
    const reply = await client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      tools: TOOLS,
      tool_choice: 'auto',
      temperature: 0,
      max_completion_tokens: 50,
    })
    expect(reply.choices[0]!.finish_reason).toBe('tool_calls')
    expect(reply.choices[0]!.message.tool_calls).toEqual([TOOL_CALL as OpenAI.Chat.Completions.ChatCompletionMessageToolCall])
    const sent = seen.at(-1)
    expect(sent).toMatchObject({ model: 'fake-model', stream: false, tools: TOOLS, tool_choice: 'auto', temperature: 0, max_tokens: 50 })

    // The tool's result goes back as a tool message, with the assistant's call before it.
    await client.chat.completions.create({
      model: 'fake-model',
      tools: TOOLS,
      messages: [
        { role: 'user', content: 'Weather in Oslo?' },
        { role: 'assistant', content: null, tool_calls: [TOOL_CALL as OpenAI.Chat.Completions.ChatCompletionMessageToolCall] },
        { role: 'tool', tool_call_id: 'call_1', content: '{"celsius":4}' },
      ],
    })
    expect(seen.at(-1).messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_1', content: '{"celsius":4}' })
    expect(seen.at(-1).messages[1].tool_calls).toEqual([TOOL_CALL])
  })

  test('streamed: the tool call arrives in deltas, then [DONE]', async () => {
    const client = await openai()
    const stream = await client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'Weather?' }], tools: TOOLS, stream: true })
    let args = ''
    let finish: string | null = null
    for await (const chunk of stream) {
      args += chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? ''
      finish = chunk.choices[0]?.finish_reason ?? finish
    }
    expect(args).toBe('{"city":"Oslo"}')
    expect(finish).toBe('tool_calls')
    expect(seen.at(-1)).toMatchObject({ stream: true, tools: TOOLS })
  })

  test('without tools the upstream engine answers as usual, top_p passed on', async () => {
    const client = await openai()
    const reply = await client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'Hi' }], top_p: 0.3 })
    expect(reply.choices[0]!.message.content).toBe('Plain reply.')
    expect(reply.usage).toEqual({ prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 })
    expect(seen.at(-1)).toMatchObject({ top_p: 0.3 })
    expect(seen.at(-1)).not.toHaveProperty('tools')
  })
})

describe('rag:<collection> with an upstream model server', () => {
  test("the client's system message reaches the model after the grounding rules, with the sources and the question", async () => {
    const client = await openai()
    const { accessToken } = await server.login()
    const ingest = await server.call('POST', '/rag/ingest', {
      token: accessToken,
      body: { collection: 'handbook', documents: [{ id: 'printing', content: 'Release print jobs with your badge at any FollowMe printer on the second floor.' }] },
    })
    expect(ingest.status).toBe(200)
    const persona = 'You are Pim, the office helper. Always answer in French, in one sentence.'
    for (const stream of [false, true]) {
      const before = seen.length
      const request = {
        model: 'rag:handbook',
        messages: [
          { role: 'system' as const, content: persona },
          { role: 'developer' as const, content: 'End every answer with "— Pim".' },
          { role: 'user' as const, content: 'How do I release print jobs?' },
        ],
      }
      if (stream) for await (const _ of await client.chat.completions.create({ ...request, stream: true })) void _
      else expect((await client.chat.completions.create(request)).choices[0]!.message.content).toBeTruthy()
      expect(seen.length).toBe(before + 1)
      const sent = seen.at(-1).messages as { role: string; content: string }[]
      const system = sent.filter((m) => m.role === 'system')
      expect(system).toHaveLength(1)
      // The server's grounding rules first, then the client's own, in the order it sent them.
      expect(system[0]!.content.indexOf(persona)).toBeGreaterThan(0)
      expect(system[0]!.content.indexOf('End every answer with "— Pim".')).toBeGreaterThan(system[0]!.content.indexOf(persona))
      expect(sent.at(-1)!.content).toContain('FollowMe printer')
      expect(sent.at(-1)!.content).toContain('How do I release print jobs?')
      expect(sent.filter((m) => m.content.includes(persona))).toHaveLength(1)
    }
  })
})
