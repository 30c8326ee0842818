import { afterAll, describe, expect, test } from 'bun:test'
import { AppError } from '../../src/core/errors'
import { UpstreamClient, UpstreamGenerator } from '../../src/ml/upstream'

/** A fake OpenAI-compatible server that answers each request with the next scripted message. */
const script: unknown[] = []
const bodies: any[] = []
const fake = Bun.serve({
  port: 0,
  async fetch(request) {
    bodies.push(await request.json())
    return Response.json({ choices: [{ message: script.shift() }] })
  },
})
afterAll(() => fake.stop(true))

const generator = new UpstreamGenerator(new UpstreamClient({ url: `http://127.0.0.1:${fake.port}` }), 'fake-llm')
const tools = [{ name: 'calculator__evaluate', description: 'Evaluate', parameters: { type: 'object', properties: { expression: { type: 'string' } } } }]

describe('upstream function calling (generateWithTools)', () => {
  test('sends tools and the conversation in OpenAI form, reads tool_calls (ids and object arguments filled in)', async () => {
    script.push({ role: 'assistant', content: null, tool_calls: [{ type: 'function', function: { name: 'calculator__evaluate', arguments: { expression: '1+1' } } }, { id: 'x', function: { arguments: '{}' } }] })
    const turn = await generator.generateWithTools(
      [
        { role: 'user', content: 'What is 1+1?' },
        { role: 'assistant', content: null, toolCalls: [{ id: 'call_a', name: 'calculator__evaluate', arguments: '{"expression":"2"}' }] },
        { role: 'tool', toolCallId: 'call_a', content: '{"result":{"value":2}}' },
      ],
      tools,
      { maxTokens: 50 },
    )
    expect(turn.text).toBe('')
    // The call without a function name is not a call.
    expect(turn.toolCalls).toEqual([{ id: 'call_0', name: 'calculator__evaluate', arguments: '{"expression":"1+1"}' }])
    const body = bodies.at(-1)
    expect(body).toMatchObject({ model: 'fake-llm', stream: false, max_tokens: 50, tool_choice: 'auto' })
    expect(body.tools).toEqual([{ type: 'function', function: tools[0] }])
    expect(body.messages[1]).toEqual({ role: 'assistant', content: null, tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'calculator__evaluate', arguments: '{"expression":"2"}' } }] })
    expect(body.messages[2]).toEqual({ role: 'tool', tool_call_id: 'call_a', content: '{"result":{"value":2}}' })
  })

  test("tool_choice 'none' is passed on; a plain reply has no calls; a reply with neither text nor calls is 503", async () => {
    script.push({ role: 'assistant', content: 'Two.' })
    const turn = await generator.generateWithTools([{ role: 'user', content: 'What is 1+1?' }], tools, { toolChoice: 'none' })
    expect(turn).toMatchObject({ text: 'Two.', toolCalls: [] })
    expect(bodies.at(-1).tool_choice).toBe('none')
    script.push({ role: 'assistant', content: null })
    const failure = await generator.generateWithTools([{ role: 'user', content: 'Hi' }], tools).catch((error) => error)
    expect(failure).toBeInstanceOf(AppError)
    expect(failure.code).toBe('MODEL_UNAVAILABLE')
  })
})
