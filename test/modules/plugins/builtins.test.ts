import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { openAiTools } from '../../../src/modules/plugins/tools'
import { makeServer } from '../../helpers'

// Real processes (Node workers, git, npm, the CLI) on a shared machine: generous per-test limits.
setDefaultTimeout(30_000)

const server = makeServer()
const admin = await server.login()
const exec = (plugin: string, action: string, parameters: unknown, token = admin.accessToken) =>
  server.call('POST', `/plugins/${plugin}/execute`, { token, body: { action, parameters } })

describe('GET /plugins and /plugins/{name}', () => {
  test('lists the four built-ins with their status and permissions', async () => {
    const res = await server.call('GET', '/plugins', { token: admin.accessToken })
    expect(res.status).toBe(200)
    const names = res.json.plugins.map((p: any) => p.name)
    expect(names).toEqual(expect.arrayContaining(['calculator', 'datetime', 'text', 'knowledge']))
    expect(res.json.total).toBe(res.json.plugins.length)
    const knowledge = res.json.plugins.find((p: any) => p.name === 'knowledge')
    expect(knowledge).toMatchObject({ status: 'enabled', permissions: ['rag:read'], builtin: true, version: '1.0.0' })
    for (const plugin of res.json.plugins) expect(Object.keys(plugin)).toEqual(expect.arrayContaining(['name', 'version', 'description', 'category', 'status', 'permissions']))
  })

  test('shows a manifest with each action and its parameter schema; unknown plugin is 404', async () => {
    const res = await server.call('GET', '/plugins/calculator', { token: admin.accessToken })
    expect(res.status).toBe(200)
    expect(res.json.actions.evaluate.parameters).toMatchObject({ type: 'object', required: ['expression'] })
    expect(res.json.actions.evaluate.description).toContain('sqrt')
    expect((await server.call('GET', '/plugins/no-such-plugin', { token: admin.accessToken })).status).toBe(404)
    expect((await server.call('GET', '/plugins')).status).toBe(401)
  })
})

describe('calculator', () => {
  const value = async (expression: string) => {
    const res = await exec('calculator', 'evaluate', { expression })
    expect(res.status).toBe(200)
    return res.json.result.value
  }

  test('precedence, parentheses, unary minus, right-associative ^, functions and constants', async () => {
    expect(await value('1 + 2 * 3')).toBe(7)
    expect(await value('(1 + 2) * 3')).toBe(9)
    expect(await value('-2 ^ 2')).toBe(-4)
    expect(await value('2 ^ 3 ^ 2')).toBe(512)
    expect(await value('--3 - -4')).toBe(7)
    expect(await value('10 % 4 + 7 / 2')).toBe(5.5)
    expect(await value('sqrt(16) + round(2.567, 2) + abs(-1)')).toBe(7.57)
    expect(await value('max(1, 5, 3) - min(4, 2)')).toBe(3)
    expect(await value('round(pi, 4)')).toBe(3.1416)
    expect(await value('5! / log(100)')).toBe(60)
    expect(await value('1.5e3 + .5')).toBe(1500.5)
  })

  test('the response carries success, plugin, action, result and an integer executionTime', async () => {
    const res = await exec('calculator', 'evaluate', { expression: '6*7' })
    expect(res.json).toMatchObject({ success: true, plugin: 'calculator', action: 'evaluate', result: { value: 42 } })
    expect(Number.isInteger(res.json.executionTime)).toBe(true)
  })

  test('refuses code and absurd nesting with a 400 PLUGIN_ERROR, and the server keeps answering', async () => {
    for (const expression of ['process.exit()', 'constructor.constructor("return process")()', 'require("fs")', '1 +', '2 ** 3', 'sqrt(-1)', '1/0', 'sqrt(1, 2)']) {
      const res = await exec('calculator', 'evaluate', { expression })
      expect(res.status).toBe(400)
      expect(res.json.code).toBe('PLUGIN_ERROR')
      expect(res.json.message.length).toBeGreaterThan(5)
    }
    const deep = await exec('calculator', 'evaluate', { expression: `${'('.repeat(1000)}1${')'.repeat(1000)}` })
    expect(deep.status).toBe(400)
    expect(deep.json).toMatchObject({ code: 'PLUGIN_ERROR', message: 'The expression nests deeper than 100 levels' })
    const minus = await exec('calculator', 'evaluate', { expression: `${'-'.repeat(5000)}1` })
    expect(minus.status).toBe(400)
    expect(await value('(((1)))')).toBe(1)
  })
})

describe('datetime', () => {
  test('now in UTC and in a named zone; an unknown zone is a 400 naming the field', async () => {
    const utc = await exec('datetime', 'now', {})
    expect(utc.status).toBe(200)
    expect(utc.json.result).toMatchObject({ timezone: 'UTC', offset: '+00:00' })
    expect(Math.abs(Date.parse(utc.json.result.iso) - Date.now())).toBeLessThan(60_000)
    const kolkata = await exec('datetime', 'now', { timezone: 'Asia/Kolkata' })
    expect(kolkata.json.result).toMatchObject({ timezone: 'Asia/Kolkata', offset: '+05:30' })
    expect(kolkata.json.result.iso).toEndWith('+05:30')
    const bad = await exec('datetime', 'now', { timezone: 'Mars/Olympus' })
    expect(bad.status).toBe(400)
    expect(bad.json.code).toBe('VALIDATION_ERROR')
    expect(bad.json.message).toContain('parameters.timezone')
  })

  test('difference between dates, in units and as a calendar span', async () => {
    const res = await exec('datetime', 'difference', { from: '2024-01-31', to: '2024-03-01T12:00:00Z' })
    expect(res.status).toBe(200)
    expect(res.json.result).toMatchObject({ hours: 732, days: 30.5, calendar: { years: 0, months: 1, days: 1, hours: 12 } })
    const back = await exec('datetime', 'difference', { from: '2025-01-01T00:00:00+02:00', to: '2024-12-31T22:00:00Z' })
    expect(back.json.result.milliseconds).toBe(0)
    const invalid = await exec('datetime', 'difference', { from: '2024-02-30', to: '2024-03-01' })
    expect(invalid.status).toBe(400)
    expect(invalid.json.message).toContain('parameters.from')
  })

  test('convert shows a moment in another zone, daylight saving included', async () => {
    const summer = await exec('datetime', 'convert', { datetime: '2024-07-01T12:00:00Z', timezone: 'America/New_York' })
    expect(summer.json.result).toMatchObject({ iso: '2024-07-01T08:00:00.000-04:00', offset: '-04:00' })
    const winter = await exec('datetime', 'convert', { datetime: '2024-01-15 09:30', from: 'Europe/Paris', timezone: 'UTC' })
    expect(winter.json.result.iso).toBe('2024-01-15T08:30:00.000+00:00')
  })
})

describe('text', () => {
  test('stats counts characters, words and sentences (decimals do not end one)', async () => {
    const res = await exec('text', 'stats', { text: 'Hello world. Pi is 3.14! Is it?' })
    expect(res.json.result).toMatchObject({ characters: 31, words: 7, sentences: 3 })
    const empty = await exec('text', 'stats', { text: '' })
    expect(empty.json.result).toMatchObject({ characters: 0, words: 0, sentences: 0 })
  })

  test('slugify folds accents and punctuation', async () => {
    const res = await exec('text', 'slugify', { text: '  Crème Brûlée — the BEST! ' })
    expect(res.json.result.slug).toBe('creme-brulee-the-best')
    expect((await exec('text', 'slugify', { text: 'a b', separator: '_' })).json.result.slug).toBe('a_b')
  })

  test('summarize keeps the most representative sentences in their order', async () => {
    const text = 'Cats are small animals. Cats like milk and cats sleep a lot. The weather is nice today. Dogs sometimes chase cats.'
    const res = await exec('text', 'summarize', { text, sentences: 2 })
    expect(res.status).toBe(200)
    const chosen: string[] = res.json.result.sentences
    expect(chosen).toEqual(['Cats like milk and cats sleep a lot.', 'Dogs sometimes chase cats.'])
    expect(res.json.result.summary).toBe(chosen.join(' '))
    expect(res.json.result.originalSentences).toBe(4)
    const one = await exec('text', 'summarize', { text: 'Rust is fast. Rust is safe and Rust is fun. Lunch was good.', sentences: 1 })
    expect(one.json.result.summary).toBe('Rust is safe and Rust is fun.')
  })
})

describe('knowledge', () => {
  test("searches the caller's collection; another user's collection is 404", async () => {
    const ingest = await server.call('POST', '/rag/ingest', {
      token: admin.accessToken,
      body: {
        collection: 'handbook',
        documents: [
          { id: 'vacation', content: 'Employees get 25 days of paid vacation every year.' },
          { id: 'parking', content: 'Parking spaces are assigned by the facilities team.' },
        ],
      },
    })
    expect(ingest.status).toBe(200)
    const res = await exec('knowledge', 'search', { collection: 'handbook', query: 'paid vacation days', limit: 1 })
    expect(res.status).toBe(200)
    expect(res.json.result.results).toHaveLength(1)
    expect(res.json.result.results[0]).toMatchObject({ id: 'vacation' })
    const other = await server.userSession('reader@example.com')
    const denied = await exec('knowledge', 'search', { collection: 'handbook', query: 'vacation' }, other.accessToken)
    expect(denied.status).toBe(404)
    expect(denied.json.code).toBe('NOT_FOUND')
    expect(JSON.stringify(denied.json)).not.toContain('25 days')
  })
})

describe('execute errors', () => {
  test('404 unknown plugin, 400 UNKNOWN_ACTION, 400 VALIDATION_ERROR naming the field', async () => {
    expect((await exec('nope', 'x', {})).status).toBe(404)
    const action = await exec('calculator', 'integrate', {})
    expect(action.status).toBe(400)
    expect(action.json.code).toBe('UNKNOWN_ACTION')
    const missing = await exec('calculator', 'evaluate', {})
    expect(missing.json).toMatchObject({ code: 'VALIDATION_ERROR', message: 'parameters.expression: is required' })
    const wrongType = await exec('calculator', 'evaluate', { expression: 42 })
    expect(wrongType.json.code).toBe('VALIDATION_ERROR')
    expect(wrongType.json.message).toContain('parameters.expression')
    const extra = await exec('text', 'summarize', { text: 'x', sentences: 0 })
    expect(extra.json.message).toContain('parameters.sentences')
    const notObject = await server.call('POST', '/plugins/calculator/execute', { token: admin.accessToken, body: { action: 'evaluate', parameters: 'x' } })
    expect(notObject.status).toBe(400)
  })

  test('disable → 409 PLUGIN_DISABLED and gone from the tools; enable brings it back; non-admins get 403', async () => {
    const user = await server.userSession('plain@example.com')
    for (const path of ['/plugins/text/disable', '/plugins/text/enable']) {
      expect((await server.call('POST', path, { token: user.accessToken })).json.code).toBe('FORBIDDEN')
    }
    expect((await server.call('DELETE', '/plugins/text', { token: user.accessToken })).status).toBe(403)
    const disabled = await server.call('POST', '/plugins/text/disable', { token: admin.accessToken })
    expect(disabled.json).toEqual({ success: true, plugin: 'text', status: 'disabled' })
    const res = await exec('text', 'stats', { text: 'x' }, user.accessToken)
    expect(res.status).toBe(409)
    expect(res.json.code).toBe('PLUGIN_DISABLED')
    expect(server.services.tools.list().some((tool) => tool.plugin === 'text')).toBe(false)
    const listed = await server.call('GET', '/plugins', { token: user.accessToken })
    expect(listed.json.plugins.find((p: any) => p.name === 'text').status).toBe('disabled')
    await server.call('POST', '/plugins/text/enable', { token: admin.accessToken })
    expect((await exec('text', 'stats', { text: 'x' }, user.accessToken)).status).toBe(200)
    const removeBuiltin = await server.call('DELETE', '/plugins/text', { token: admin.accessToken })
    expect(removeBuiltin.status).toBe(409)
  })
})

describe('PluginToolbox', () => {
  test('lists every enabled action as a tool and runs it with the same checks as the route', async () => {
    const tools = server.services.tools
    const evaluate = tools.list().find((tool) => tool.name === 'calculator__evaluate')!
    expect(evaluate).toMatchObject({ plugin: 'calculator', action: 'evaluate', parameters: { type: 'object' } })
    for (const tool of tools.list()) expect(tool.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/)
    const caller = { userId: admin.user.id, roles: ['admin'] }
    expect(await tools.call('calculator__evaluate', { expression: '2+2' }, caller)).toEqual({ value: 4 })
    await expect(tools.call('calculator__evaluate', {}, caller)).rejects.toMatchObject({ code: 'VALIDATION_ERROR' })
    await expect(tools.call('calculator__nope', {}, caller)).rejects.toMatchObject({ code: 'UNKNOWN_ACTION' })
    await expect(tools.call('nothing', {}, caller)).rejects.toMatchObject({ code: 'NOT_FOUND' })
    const openai = openAiTools(tools)
    expect(openai.find((t) => t.function.name === 'datetime__now')).toMatchObject({ type: 'function', function: { parameters: { type: 'object' } } })
  })
})
