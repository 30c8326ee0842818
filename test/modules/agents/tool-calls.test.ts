import { afterAll, describe, expect, test } from 'bun:test'
import { AppError } from '../../../src/core/errors'
import { AgentService } from '../../../src/modules/agents/service'
import type { PluginToolbox } from '../../../src/modules/agents/tools'
import { makeServer } from '../../helpers'

/** A calculator that really computes: + - * / ^ and parentheses, by recursive descent. */
function evaluate(expression: string): number {
  const tokens = expression.match(/\d+(?:\.\d+)?|[-+*/^()]/g) ?? []
  let at = 0
  const peek = () => tokens[at]
  const next = () => tokens[at++]
  const primary = (): number => {
    const token = next()
    if (token === '(') {
      const value = sum()
      if (next() !== ')') throw new Error('expected )')
      return value
    }
    if (token === '-') return -primary()
    if (token === undefined || !/^\d/.test(token)) throw new Error(`unexpected ${token ?? 'end'}`)
    return Number(token)
  }
  const power = (): number => {
    const base = primary()
    return peek() === '^' ? (next(), base ** power()) : base
  }
  const product = (): number => {
    let value = power()
    while (peek() === '*' || peek() === '/') value = next() === '*' ? value * power() : value / power()
    return value
  }
  const sum = (): number => {
    let value = product()
    while (peek() === '+' || peek() === '-') value = next() === '+' ? value + product() : value - product()
    return value
  }
  const value = sum()
  if (at !== tokens.length) throw new Error(`unexpected ${tokens[at]}`)
  return value
}

const toolbox: PluginToolbox = {
  list: () => [
    {
      name: 'calculator__evaluate',
      plugin: 'calculator',
      action: 'evaluate',
      description: 'Evaluate an arithmetic expression',
      parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
    },
  ],
  async call(name, args) {
    if (name !== 'calculator__evaluate') throw new AppError('NOT_FOUND', `Plugin ${name} not found`)
    const expression = (args as { expression?: unknown })?.expression
    if (typeof expression !== 'string') throw new AppError('VALIDATION_ERROR', 'parameters.expression: must be a string')
    try {
      return { value: evaluate(expression) }
    } catch (error) {
      throw new AppError('PLUGIN_ERROR', (error as Error).message)
    }
  },
}

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

function serverOn(url: string) {
  return makeServer({ llmUrl: url, llmModel: 'fake-tools' }, (services) => {
    services.agents.close()
    services.agents = new AgentService({ db: services.db, rag: services.rag, generator: services.models.generator, tools: toolbox, log: () => {} })
  })
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
    expect(first.tools).toEqual([{ type: 'function', function: { name: 'calculator__evaluate', description: 'Evaluate an arithmetic expression', parameters: expect.objectContaining({ type: 'object' }) } }])
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

  test('agents whose role has no use for the calculator are not offered it', async () => {
    once.requests.length = 0
    const server = serverOn(once.url)
    const { accessToken: token } = await server.login()
    const res = await server.call('POST', '/agents/execute', { token, body: { task: 'What is 12 * (3 + 4)?', agents: ['planner'] } })
    expect(res.status).toBe(200)
    expect(res.json.results[0].toolCalls).toEqual([])
    expect(once.requests.every((r) => !r.tools)).toBe(true)
  })

  test('on the built-in engine the analyst finds the arithmetic in the task and runs it through the calculator', async () => {
    const server = makeServer({}, (services) => {
      services.agents.close()
      services.agents = new AgentService({ db: services.db, rag: services.rag, generator: services.models.generator, tools: toolbox, log: () => {} })
    })
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
