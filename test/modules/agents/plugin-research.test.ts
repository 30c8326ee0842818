// Issue 37, point 3, "and plugins": without a model the researcher gathers from the caller's enabled,
// read-only plugin tools that fit the task, records each call as the model path does, and its
// results reach the writer's draft and the synthesis with their attribution.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gatherFromPlugins, planPluginCalls, zonesIn } from '../../../src/modules/agents/plugin-work'
import type { AgentInput } from '../../../src/modules/agents/types'
import type { PluginToolbox, ToolDefinition } from '../../../src/modules/agents/tools'
import { makeServer } from '../../helpers'
import { TokenGenerator, agentServer } from './fakes'
import { describeWithPluginTools, gitRepo, type PluginFiles } from '../plugins/fixtures'

// Logins hash passwords and installed plugins start Node processes: generous limits on a shared machine.
setDefaultTimeout(60_000)

const execute = (server: ReturnType<typeof makeServer>, token: string, body: Record<string, unknown>) => server.call('POST', '/agents/execute', { token, body })
const agent = (res: { json: any }, name: string) => res.json.results.find((r: { agent: string }) => r.agent === name)

describe('the researcher without a model: built-in plugins', () => {
  test('an arithmetic task: the calculator is called, recorded, quoted with attribution in the draft and the synthesis; confidence > 0 with no collection', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    const res = await execute(server, token, { task: 'What is 17*23?', agents: ['researcher', 'writer'] })
    expect(res.status).toBe(200)
    const researcher = agent(res, 'researcher')
    expect(researcher.toolCalls).toEqual([{ tool: 'calculator__evaluate', arguments: { expression: '17*23' }, result: { value: 391 } }])
    expect(researcher.response).toContain('You have no collections to search')
    expect(researcher.response).toContain('- 17*23 = 391 (from plugin calculator, tool evaluate).')
    expect(agent(res, 'writer').response).toBe('What is 17*23:\n17*23 = 391 (from plugin calculator, tool evaluate).')
    expect(res.json.finalSynthesis).toStartWith('From the researcher: 17*23 = 391 (from plugin calculator, tool evaluate).')
    expect(res.json.finalSynthesis).not.toContain('found no material')
    expect(res.json.confidence).toBeGreaterThan(0)
  })

  test('a time question fills the zone from the city it names; the critic does not call the research unbacked', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    const res = await execute(server, token, { task: 'What time is it in Tokyo?', agents: ['researcher', 'critic'] })
    const [call] = agent(res, 'researcher').toolCalls
    expect(call).toMatchObject({ tool: 'datetime__now', arguments: { timezone: 'Asia/Tokyo' }, result: { timezone: 'Asia/Tokyo', offset: '+09:00' } })
    expect(res.json.finalSynthesis).toContain(`iso ${call.result.iso}`)
    expect(res.json.finalSynthesis).toContain('(from plugin datetime, tool now).')
    expect(agent(res, 'critic').objections).toEqual([])
    expect(res.json.confidence).toBe(1)
  })

  test('with a collection too: passages and plugin results side by side, sources listed after the plugin material', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    await server.call('POST', '/rag/ingest', {
      token,
      body: { collection: 'handbook', documents: [{ id: 'travel', metadata: { title: 'Travel' }, content: 'Each team member gets a travel budget of 23 euros a day for meals.' }] },
    })
    const res = await execute(server, token, { task: 'What is the daily travel budget for meals, and what is 17*23?', agents: ['researcher'] })
    const researcher = agent(res, 'researcher')
    expect(researcher.sources.map((s: { id: string }) => s.id)).toEqual(['travel'])
    expect(researcher.toolCalls).toEqual([{ tool: 'calculator__evaluate', arguments: { expression: '17*23' }, result: { value: 391 } }])
    expect(researcher.response).toMatch(/\[1\][\s\S]*From your plugins:\n- 17\*23 = 391 \(from plugin calculator, tool evaluate\)\.\n\nSources \(searched: handbook\):\n\[1\] Travel/)
    expect(res.json.finalSynthesis).toContain('17*23 = 391 (from plugin calculator, tool evaluate).')
    expect(res.json.finalSynthesis).toContain('Sources: [1] Travel.')
  })

  test('a failing tool is recorded with its error and the task completes', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    const res = await execute(server, token, { task: 'What is 10 / 0?', agents: ['researcher', 'writer'] })
    expect(res.status).toBe(200)
    const researcher = agent(res, 'researcher')
    expect(researcher.toolCalls).toEqual([{ tool: 'calculator__evaluate', arguments: { expression: '10 / 0' }, error: 'Division by zero' }])
    expect(researcher.response).toContain('- Tool failed: plugin calculator, tool evaluate: Division by zero')
    // A failure is a note, not material: nothing was found, and the synthesis says so.
    expect(res.json.finalSynthesis).toStartWith('You have no collections to draw on')
    expect(res.json.confidence).toBe(0)
  })

  test('a disabled plugin is not called; an agent not allowed the plugin does not call it', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    // The writer may use the text plugin only: researching for itself, it leaves the calculator alone.
    const writer = await execute(server, token, { task: 'What is 17*23?', agents: ['writer'] })
    expect(agent(writer, 'writer').toolCalls).toEqual([])
    expect(writer.json.finalSynthesis).not.toContain('391')
    expect(writer.json.confidence).toBe(0)
    const enabled = await execute(server, token, { task: 'What is 17*23?', agents: ['researcher', 'writer'] })
    expect(agent(enabled, 'researcher').toolCalls.map((c: { tool: string }) => c.tool)).toEqual(['calculator__evaluate'])
    expect((await server.call('POST', '/plugins/calculator/disable', { token })).status).toBe(200)
    const res = await execute(server, token, { task: 'What is 17*23?', agents: ['researcher', 'writer'] })
    expect(agent(res, 'researcher').toolCalls).toEqual([])
    expect(res.json.finalSynthesis).not.toContain('391')
    expect(res.json.confidence).toBe(0)
  })

  test('dates written in words are read for a date tool the step fits', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    const res = await execute(server, token, { task: 'How many days are there between March 3, 2025 and June 1, 2025?', agents: ['researcher'] })
    const [call] = agent(res, 'researcher').toolCalls
    expect(call).toMatchObject({ tool: 'datetime__difference', arguments: { from: '2025-03-03', to: '2025-06-01' }, result: { days: 90 } })
    expect(res.json.finalSynthesis).toContain('days 90')
  })

  test('a model that cannot call tools gets the plugin results in its context; the calls are recorded', async () => {
    const generator = new TokenGenerator()
    const server = agentServer(generator)
    const { accessToken: token } = await server.login()
    const res = await execute(server, token, { task: 'What is 17*23?', agents: ['researcher'] })
    expect(res.status).toBe(200)
    expect(agent(res, 'researcher').toolCalls).toEqual([{ tool: 'calculator__evaluate', arguments: { expression: '17*23' }, result: { value: 391 } }])
    const system = generator.prompts.find((messages) => messages[0]!.content.startsWith('You are the researcher'))![0]!.content
    expect(system).toContain('From your plugins:\n- 17*23 = 391 (from plugin calculator, tool evaluate).')
  })

  test('a text tool gets a passage the task quotes, never the task itself', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    const res = await execute(server, token, { task: 'How many words and sentences are in "The quick brown fox jumps. It lands."?', agents: ['researcher'] })
    const researcher = agent(res, 'researcher')
    expect(researcher.toolCalls).toContainEqual({ tool: 'text__stats', arguments: { text: 'The quick brown fox jumps. It lands.' }, result: expect.objectContaining({ words: 7, sentences: 2 }) })
    expect(researcher.response).toContain('words 7, sentences 2')
    // text__summarize fits too ("sentences") and is called on the quote; it only gives the quote back, so it is not material.
    expect(researcher.toolCalls.map((c: { tool: string }) => c.tool).sort()).toEqual(['text__stats', 'text__summarize'])
    expect(researcher.response).not.toContain('tool summarize')
    const unquoted = await execute(server, token, { task: "How many words and sentences are in the team's handbook?", agents: ['researcher'] })
    expect(agent(unquoted, 'researcher').toolCalls).toEqual([])
  })

  test('a task no tool fits calls none', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    const res = await execute(server, token, { task: 'Write a short plan for a team offsite in Lisbon', agents: ['planner', 'researcher', 'writer'] })
    for (const result of res.json.results) expect(result.toolCalls).toEqual([])
  })
})

describe('choosing and calling tools', () => {
  const tool = (plugin: string, action: string, description: string, parameters: Record<string, unknown>, readOnly?: boolean): ToolDefinition => ({
    name: `${plugin}__${action}`,
    plugin,
    action,
    description,
    parameters: { type: 'object', additionalProperties: false, ...parameters },
    ...(readOnly === undefined ? {} : { readOnly }),
  })
  const term = { properties: { term: { type: 'string', minLength: 1 } }, required: ['term'] }
  const glossary = [
    tool('glossary', 'lookup', 'Look up a term in the team glossary and return its definition', term, true),
    tool('glossary', 'record', 'Record a term in the team glossary', term, false),
    tool('glossary', 'forget', 'Remove a term from the team glossary', term),
    tool('knowledge', 'search', 'Search one of your collections', { properties: { collection: { type: 'string' }, query: { type: 'string' } }, required: ['collection', 'query'] }, true),
  ]

  test('only read-only tools the agent may use, with every required parameter filled from the task', async () => {
    const steps = ['Look up idempotency in the team glossary']
    const planned = await planPluginCalls(glossary, '*', steps)
    expect(planned.map((p) => [p.tool.name, p.args])).toEqual([['glossary__lookup', { term: 'idempotency' }]])
    expect(await planPluginCalls(glossary, ['text'], steps)).toEqual([])
    // A parameter the task cannot fill (no arithmetic here) leaves the tool out.
    const calc = tool('calculator', 'evaluate', 'Evaluate an arithmetic expression', { properties: { expression: { type: 'string' } }, required: ['expression'] }, true)
    expect(await planPluginCalls([calc], '*', steps)).toEqual([])
    expect((await planPluginCalls([calc], '*', ['Compare 12 * 40 with 500'])).map((p) => p.args)).toEqual([{ expression: '12 * 40' }])
    // One call per expression the step writes.
    expect((await planPluginCalls([calc], '*', ['Compare 12 * 40 with 15% of 3000'])).map((p) => p.args)).toEqual([{ expression: '15 / 100 * 3000' }, { expression: '12 * 40' }])
  })

  test('the planner\'s steps drive the choice; steps that review or summarize are not researched; at most three calls', async () => {
    const many = Array.from({ length: 5 }, (_, i) => tool(`lookup${i}`, 'find', `Find a term in glossary number ${i}`, term, true))
    const planned = await planPluginCalls(many, '*', ['Find idempotency in the glossary', 'Summarize the glossary'])
    expect(planned.map((p) => p.tool.plugin)).toEqual(['lookup0', 'lookup1', 'lookup2'])
    expect(await planPluginCalls(many, '*', ['Summarize the glossary entry on idempotency'])).toEqual([])
  })

  test('zones by name or city', () => {
    expect(zonesIn('Convert 9:30 in Europe/Paris to New York time')).toEqual(['Europe/Paris', 'America/New_York'])
    expect(zonesIn('A plan for Lisbon')).toEqual(['Europe/Lisbon'])
    expect(zonesIn('nothing here')).toEqual([])
  })

  const input = (tools: PluginToolbox, signal = new AbortController().signal) =>
    ({ task: 'Look up idempotency in the team glossary', earlier: [], objections: [], caller: { userId: 'u1', roles: ['user'] }, tools, signal }) as unknown as AgentInput

  test('each call runs with the caller and a time limit: a call that hangs is recorded as an error; a cancelled task stops', async () => {
    const calls: unknown[] = []
    const hanging: PluginToolbox = {
      list: () => glossary,
      call: (name, args, caller) => {
        calls.push({ name, args, caller })
        return new Promise(() => {})
      },
    }
    const started = Date.now()
    const material = await gatherFromPlugins(input(hanging), '*', ['Look up idempotency in the team glossary'], 100)
    expect(Date.now() - started).toBeLessThan(2000)
    expect(calls).toEqual([{ name: 'glossary__lookup', args: { term: 'idempotency' }, caller: { userId: 'u1', roles: ['user'] } }])
    expect(material.toolCalls).toEqual([{ tool: 'glossary__lookup', arguments: { term: 'idempotency' }, error: 'The call took longer than 0.1 s' }])
    expect(material.lines).toEqual([])
    const cancel = new AbortController()
    setTimeout(() => cancel.abort(new Error('cancelled')), 50)
    await expect(gatherFromPlugins(input(hanging, cancel.signal), '*', ['Look up idempotency in the team glossary'], 10_000)).rejects.toThrow('cancelled')
  })

  test('a result that only echoes the task is recorded but is not material', async () => {
    const echo: PluginToolbox = { list: () => glossary, call: async (_name, args) => ({ definition: (args as { term: string }).term }) }
    const material = await gatherFromPlugins(input(echo), '*', ['Look up idempotency in the team glossary'])
    expect(material.toolCalls).toEqual([{ tool: 'glossary__lookup', arguments: { term: 'idempotency' }, result: { definition: 'idempotency' } }])
    expect(material.lines).toEqual([])
  })
})

/** An installed plugin: a glossary with a read-only lookup, a failing read-only check and a tool that writes. */
function glossaryPlugin(): PluginFiles {
  const term = { type: 'object', properties: { term: { type: 'string', minLength: 1, maxLength: 200 } }, required: ['term'], additionalProperties: false }
  const manifest = {
    name: 'glossary',
    version: '1.0.0',
    description: 'The team glossary',
    category: 'knowledge',
    permissions: [],
    main: 'index.js',
    actions: {
      lookup: { description: 'Look up a term in the team glossary and return its definition', parameters: term, readOnly: true },
      status: {
        description: 'Check the glossary service for a question',
        parameters: { type: 'object', properties: { query: { type: 'string', minLength: 1 } }, required: ['query'], additionalProperties: false },
        readOnly: true,
      },
      record: { description: 'Record a new term in the team glossary', parameters: term },
    },
  }
  const index = `
const ENTRIES = { idempotency: 'An idempotent request can be repeated safely: the second call changes nothing. Retries rely on it.' }
exports.lookup = ({ term }) => {
  const key = Object.keys(ENTRIES).find((k) => term.toLowerCase().includes(k))
  if (!key) throw new Error('No glossary entry for ' + term)
  return { term: key, definition: ENTRIES[key] }
}
exports.status = () => { throw new Error('the glossary service is down') }
exports.record = ({ term }) => ({ recorded: term })
`
  return { manifest, files: { 'plugin.json': JSON.stringify(manifest, null, 2), 'index.js': index } }
}

describeWithPluginTools('the researcher without a model: an installed plugin', () => {
  const root = mkdtempSync(join(tmpdir(), 'uagent-agents-plugins-'))
  const server = makeServer({ pluginsDir: join(root, 'plugins'), pluginTimeoutMs: 5000 })
  let admin = ''
  let user = ''
  beforeAll(async () => {
    admin = (await server.login()).accessToken
    const repo = join(root, 'glossary')
    gitRepo(repo, glossaryPlugin(), 'v1')
    const res = await server.call('POST', '/plugins/install', { token: admin, body: { source: 'git', package: repo, version: 'v1' } })
    if (res.status !== 200) throw new Error(`install: ${res.text}`)
    user = (await server.userSession('reader@example.com')).accessToken
  })
  afterAll(() => {
    server.services.plugins.close()
    rmSync(root, { recursive: true, force: true })
  })

  test('GET /plugins/{name} shows which actions are read-only', async () => {
    const res = await server.call('GET', '/plugins/glossary', { token: user })
    expect(res.json.actions.lookup.readOnly).toBe(true)
    expect(res.json.actions.record.readOnly).toBeUndefined()
  })

  test('POST /agents/execute: the lookup is called for the user and quoted; the failing tool is recorded; the tool that writes is never called', async () => {
    const res = await execute(server, user, { task: 'Look up idempotency in the team glossary', agents: ['planner', 'researcher', 'writer', 'critic'], maxIterations: 1 })
    expect(res.status).toBe(200)
    const researcher = agent(res, 'researcher')
    expect(researcher.toolCalls).toEqual([
      {
        tool: 'glossary__lookup',
        arguments: { term: 'idempotency' },
        result: { term: 'idempotency', definition: 'An idempotent request can be repeated safely: the second call changes nothing. Retries rely on it.' },
      },
      { tool: 'glossary__status', arguments: { query: 'Look up idempotency in the team glossary' }, error: 'the glossary service is down' },
    ])
    const quoted = 'An idempotent request can be repeated safely: the second call changes nothing (from plugin glossary, tool lookup).'
    expect(researcher.response).toContain(`- ${quoted}`)
    expect(researcher.response).toContain('- Tool failed: plugin glossary, tool status: the glossary service is down')
    expect(agent(res, 'writer').response).toContain(quoted)
    expect(res.json.finalSynthesis).toContain(quoted)
    expect(res.json.finalSynthesis).toContain('Retries rely on it (from plugin glossary, tool lookup).')
    expect(res.json.results.flatMap((r: { toolCalls: { tool: string }[] }) => r.toolCalls.map((c) => c.tool))).not.toContain('glossary__record')
    expect(res.json.confidence).toBeGreaterThan(0)
  })

  test('disabled by an admin: not called', async () => {
    const enabled = await execute(server, user, { task: 'Look up idempotency in the team glossary', agents: ['researcher'] })
    expect(agent(enabled, 'researcher').toolCalls.map((c: { tool: string }) => c.tool)).toContain('glossary__lookup')
    expect((await server.call('POST', '/plugins/glossary/disable', { token: admin })).status).toBe(200)
    try {
      const res = await execute(server, user, { task: 'Look up idempotency in the team glossary', agents: ['researcher'] })
      expect(agent(res, 'researcher').toolCalls).toEqual([])
      expect(res.json.finalSynthesis).not.toContain('idempotent request')
      expect(res.json.confidence).toBe(0)
    } finally {
      await server.call('POST', '/plugins/glossary/enable', { token: admin })
    }
  })
})
