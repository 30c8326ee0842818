import { afterAll, describe, expect, test, setDefaultTimeout } from 'bun:test'
import { makeServer } from '../../helpers'

// Logins hash passwords (argon2): on a loaded machine a test with several users takes seconds.
setDefaultTimeout(30_000)

/** An OpenAI-compatible server that asks for the calculator, then answers with what it returned. */
function fakeUpstream(behaviour: 'once' | 'always') {
  const requests: any[] = []
  const server = Bun.serve({
    port: 0,
    async fetch(request) {
      const body = (await request.json()) as any
      requests.push(body)
      const reply = (message: object) => Response.json({ choices: [{ message, finish_reason: 'stop' }], usage: { prompt_tokens: 10, completion_tokens: 5 } })
      const toolMessages = body.messages.filter((m: any) => m.role === 'tool')
      const offered = (body.tools ?? []).some((t: any) => t.function?.name === 'calculator__evaluate')
      if (offered && body.tool_choice !== 'none' && (behaviour === 'always' || toolMessages.length === 0)) {
        return reply({ role: 'assistant', content: null, tool_calls: [{ id: `call_${requests.length}`, type: 'function', function: { name: 'calculator__evaluate', arguments: JSON.stringify({ expression: '12 * (3 + 4)' }) } }] })
      }
      if (toolMessages.length) {
        const value = JSON.parse(toolMessages.at(-1).content).result.value
        return reply({ role: 'assistant', content: `The total is ${value}.` })
      }
      const last = body.messages.at(-1).content as string
      return reply({ role: 'assistant', content: `Final answer: ${/The total is \d+/.exec(last)?.[0] ?? 'unknown'}.` })
    },
  })
  return { server, requests, url: `http://127.0.0.1:${server.port}` }
}

/** A server whose model is the fake upstream; agents call the real built-in plugins (services.tools). */
function serverOn(url: string) {
  return makeServer({ llmUrl: url, llmModel: 'fake-tools' })
}

describe('agents: function calling through an OpenAI-compatible upstream', () => {
  const once = fakeUpstream('once')
  const always = fakeUpstream('always')
  afterAll(() => {
    once.server.stop(true)
    always.server.stop(true)
  })

  test('the model calls the calculator, gets its result, and uses it in its answer', async () => {
    const server = serverOn(once.url)
    const { accessToken: token } = await server.login()
    const res = await server.call('POST', '/agents/execute', { token, body: { task: 'What is 12 * (3 + 4)?', agents: ['analyst'] } })
    expect(res.status).toBe(200)
    const [analyst] = res.json.results
    expect(analyst.toolCalls).toEqual([{ tool: 'calculator__evaluate', arguments: { expression: '12 * (3 + 4)' }, result: { value: 84 } }])
    expect(analyst.response).toBe('The total is 84.')
    expect(res.json.finalSynthesis).toBe('Final answer: The total is 84.')
    // The first request offered the tool; the second carried the call and its result back.
    const [first, second] = once.requests
    // The analyst is offered every enabled plugin action, the calculator among them, with its schema.
    const offered = first.tools.find((t: any) => t.function.name === 'calculator__evaluate')
    expect(offered).toMatchObject({ type: 'function', function: { parameters: { type: 'object', properties: { expression: expect.any(Object) } } } })
    expect(first.tools.map((t: any) => t.function.name)).toEqual(expect.arrayContaining(['calculator__evaluate', 'datetime__now', 'text__stats']))
    expect(first.tool_choice).toBe('auto')
    const call = second.messages.find((m: any) => m.role === 'assistant')
    expect(call.tool_calls[0].function.name).toBe('calculator__evaluate')
    const result = second.messages.find((m: any) => m.role === 'tool')
    expect(result.tool_call_id).toBe(call.tool_calls[0].id)
    expect(JSON.parse(result.content)).toEqual({ result: { value: 84 } })
  })

  test('a model that keeps calling tools is stopped after a bounded number of calls and must answer', async () => {
    const server = serverOn(always.url)
    const { accessToken: token } = await server.login()
    const res = await server.call('POST', '/agents/execute', { token, body: { task: 'What is 12 * (3 + 4)?', agents: ['analyst'] } })
    expect(res.status).toBe(200)
    const [analyst] = res.json.results
    expect(analyst.toolCalls.length).toBeGreaterThan(1)
    expect(analyst.toolCalls.length).toBeLessThanOrEqual(8)
    expect(analyst.response).toBe('The total is 84.')
    const toAnalyst = always.requests.filter((r) => r.tools)
    expect(toAnalyst.at(-1).tool_choice).toBe('none')
  })

  test("an agent is offered only its role's tools: the planner gets datetime, not the calculator", async () => {
    once.requests.length = 0
    const server = serverOn(once.url)
    const { accessToken: token } = await server.login()
    const res = await server.call('POST', '/agents/execute', { token, body: { task: 'What is 12 * (3 + 4)?', agents: ['planner'] } })
    expect(res.status).toBe(200)
    expect(res.json.results[0].toolCalls).toEqual([])
    const names = once.requests[0].tools.map((t: any) => t.function.name)
    expect(names).toContain('datetime__now')
    expect(names.every((n: string) => n.startsWith('datetime__'))).toBe(true)
  })

  test('a disabled plugin is not offered', async () => {
    once.requests.length = 0
    const server = serverOn(once.url)
    const { accessToken: token } = await server.login()
    expect((await server.call('POST', '/plugins/calculator/disable', { token })).status).toBe(200)
    const res = await server.call('POST', '/agents/execute', { token, body: { task: 'What is 12 * (3 + 4)?', agents: ['analyst'] } })
    expect(res.json.results[0].toolCalls).toEqual([])
    expect(once.requests[0].tools.map((t: any) => t.function.name)).not.toContain('calculator__evaluate')
  })

  test('on the built-in engine the analyst finds the arithmetic in the task and runs it through the calculator', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    const res = await server.call('POST', '/agents/execute', { token, body: { task: 'Our budget is 12 * (3 + 4) thousand and 15% of 240 goes to travel.', agents: ['analyst'] } })
    const [analyst] = res.json.results
    expect(analyst.toolCalls).toEqual([
      { tool: 'calculator__evaluate', arguments: { expression: '15 / 100 * 240' }, result: { value: 36 } },
      { tool: 'calculator__evaluate', arguments: { expression: '12 * (3 + 4)' }, result: { value: 84 } },
    ])
    expect(analyst.response).toContain('12 * (3 + 4) = 84 (calculator)')
    expect(analyst.response).toContain('15 / 100 * 240 = 36 (calculator)')
  })
})
