import { afterAll, describe, expect, test } from 'bun:test'
import { makeServer, makeServerWith, ScriptedGenerator } from '../helpers'
import { optimizePrompt } from '../../src/modules/chat/prompt'
import { readEventData } from '../../src/core/sse-reader'

describe('POST /chat', () => {
  test('a round trip returns the seed fields and stores both messages', async () => {
    const { call, login } = makeServer()
    const { accessToken } = await login()
    const res = await call('POST', '/chat', { token: accessToken, body: { message: 'Hello there', context: 'The office opens at nine.' } })
    expect(res.status).toBe(200)
    expect(typeof res.json.response).toBe('string')
    expect(res.json.response.length).toBeGreaterThan(0)
    expect(res.json.metadata).toMatchObject({ model: 'builtin/extractive', optimized: false })
    expect(res.json.metadata.tokens).toBe(res.json.metadata.promptTokens + res.json.metadata.completionTokens)
    expect(Number.isInteger(res.json.metadata.responseTime)).toBe(true)
    const stored = await call('GET', `/conversations/${res.json.metadata.conversationId}`, { token: accessToken })
    expect(stored.status).toBe(200)
    expect(stored.json.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ['user', 'Hello there'],
      ['assistant', res.json.response],
    ])
  })

  test('continuing a conversation sends the earlier turns to the model', async () => {
    const generator = new ScriptedGenerator('Noted.')
    const { call, login } = makeServerWith(generator)
    const { accessToken } = await login()
    const first = await call('POST', '/chat', { token: accessToken, body: { message: 'My name is Ada.' } })
    const second = await call('POST', '/chat', {
      token: accessToken,
      body: { message: 'What is my name?', conversationId: first.json.metadata.conversationId },
    })
    expect(second.json.metadata.conversationId).toBe(first.json.metadata.conversationId)
    const prompt = generator.prompts.at(-1)!
    expect(prompt.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user'])
    expect(prompt[1]!.content).toBe('My name is Ada.')
    expect(prompt[2]!.content).toBe('Noted.')
    const stored = await call('GET', `/conversations/${first.json.metadata.conversationId}`, { token: accessToken })
    expect(stored.json.messages).toHaveLength(4)
  })

  test("a small model's context is respected: history trimmed, the reply budget shrinks, an oversized message is 400", async () => {
    const generator = new ScriptedGenerator('Noted.')
    generator.contextLength = 160 // 40 tokens kept for the reply, 120 for the prompt (a token is a word here)
    const { call, login } = makeServerWith(generator)
    const { accessToken: token } = await login()
    const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ')
    let conversationId: string | undefined
    for (let turn = 0; turn < 4; turn++) {
      const res = await call('POST', '/chat', { token, body: { message: `turn${turn} ${words(25)}`, conversationId } })
      expect(res.status).toBe(200)
      conversationId = res.json.metadata.conversationId
    }
    expect(generator.options.at(-1)!.maxTokens).toBe(40)
    const prompt = generator.prompts.at(-1)!
    const used = (await Promise.all(prompt.map((m) => generator.countTokens(m.content)))).reduce((a, b) => a + b, 0)
    expect(used).toBeLessThanOrEqual(120)
    expect(prompt.at(-1)!.content).toStartWith('turn3')
    expect(prompt.some((m) => m.content.startsWith('turn2'))).toBe(true)
    expect(prompt.some((m) => m.content.startsWith('turn0'))).toBe(false)

    const tooLong = await call('POST', '/chat', { token, body: { message: words(200), conversationId } })
    expect(tooLong.status).toBe(400)
    expect(tooLong.json.code).toBe('VALIDATION_ERROR')
    expect(tooLong.json.message).toBe('The prompt for this message takes 229 tokens, but test/scripted reads 160 with 40 kept for the reply: shorten it')
    const streamed = await call('GET', `/stream?message=${encodeURIComponent(words(200))}&conversationId=${conversationId}`, { token })
    expect(streamed.status).toBe(400)
    const stored = await call('GET', `/conversations/${conversationId}`, { token })
    expect(stored.json.messages).toHaveLength(8)
  })

  test('optimizePrompt rewrites the message and says so', async () => {
    const generator = new ScriptedGenerator('ok')
    const { call, login } = makeServerWith(generator)
    const res = await call('POST', '/chat', { token: (await login()).accessToken, body: { message: '  um   rust lifetimes ', optimizePrompt: true } })
    expect(res.json.metadata.optimized).toBe(true)
    expect(res.json.metadata.optimizedPrompt).toBe('Explain rust lifetimes.')
    expect(generator.prompts[0]!.at(-1)!.content).toBe('Explain rust lifetimes.')
  })

  test('the rewrite step cleans shorthand, case and punctuation', () => {
    expect(optimizePrompt('hey so how do u reset ur password')).toBe('How do you reset your password?')
    expect(optimizePrompt('pls summarize the report!!!')).toBe('Please summarize the report!')
    expect(optimizePrompt('What is 2+2?')).toBe('What is 2+2?')
  })

  test('empty, blank, oversized and missing messages are 400 VALIDATION_ERROR; nothing is stored', async () => {
    const { call, login, services } = makeServer()
    const { accessToken } = await login()
    for (const body of [{ message: '' }, { message: ' \n\t ' }, { message: 'x'.repeat(32_001) }, {}]) {
      const res = await call('POST', '/chat', { token: accessToken, body })
      expect(res.status).toBe(400)
      expect(res.json.code).toBe('VALIDATION_ERROR')
      expect(res.json.message).toContain('message')
    }
    expect((services.db.query('SELECT count(*) AS n FROM conversations').get() as { n: number }).n).toBe(0)
    expect((await call('POST', '/chat', { token: accessToken, body: { message: 'x'.repeat(32_000) } })).status).toBe(200)
  })

  test("another user's conversation is 404; another userId is admin-only", async () => {
    const { call, login, userSession } = makeServer()
    const admin = await login()
    const mine = await call('POST', '/chat', { token: admin.accessToken, body: { message: 'secret plans' } })
    const other = await userSession('eve@example.com')
    const id = mine.json.metadata.conversationId
    expect((await call('GET', `/conversations/${id}`, { token: other.accessToken })).status).toBe(404)
    expect((await call('DELETE', `/conversations/${id}`, { token: other.accessToken })).status).toBe(404)
    const hijack = await call('POST', '/chat', { token: other.accessToken, body: { message: 'continue', conversationId: id } })
    expect(hijack.status).toBe(404)
    expect(hijack.text).not.toContain('secret plans')
    const forbidden = await call('POST', '/chat', { token: other.accessToken, body: { message: 'hi', userId: admin.user.id } })
    expect(forbidden.status).toBe(403)
    // An admin may chat on a user's behalf; the conversation is theirs.
    const onBehalf = await call('POST', '/chat', { token: admin.accessToken, body: { message: 'for eve', userId: other.user.id } })
    expect(onBehalf.status).toBe(200)
    const eves = await call('GET', '/conversations', { token: other.accessToken })
    expect(eves.json.conversations.map((c: { id: string }) => c.id)).toEqual([onBehalf.json.metadata.conversationId])
  })

  test('a model that cannot load is 503 MODEL_UNAVAILABLE', async () => {
    const { call, login } = makeServer({ chatModel: 'acme/not-installed', modelsDir: '/tmp/no-models' })
    const res = await call('POST', '/chat', { token: (await login()).accessToken, body: { message: 'hi' } })
    expect(res.status).toBe(503)
    expect(res.json.code).toBe('MODEL_UNAVAILABLE')
  })
})

/** Reads an SSE body as a real client does, returning the parsed events. */
async function readEvents(response: Response) {
  const events: any[] = []
  for await (const data of readEventData(response.body!)) events.push(JSON.parse(data))
  return events
}

describe('GET /stream', () => {
  const servers: { stop(): void }[] = []
  afterAll(() => servers.forEach((s) => s.stop()))

  function listen(server: ReturnType<typeof makeServer>) {
    const app = server.app.listen({ port: 0 })
    servers.push(app)
    return `http://127.0.0.1:${app.server!.port}`
  }

  test('start, chunks and end over a real connection; chunks concatenate to the stored reply', async () => {
    const server = makeServer()
    const base = listen(server)
    const { accessToken } = await server.login()
    const response = await fetch(`${base}/stream?message=${encodeURIComponent('Hello, who are you?')}`, { headers: { authorization: `Bearer ${accessToken}` } })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toStartWith('text/event-stream')
    expect(response.headers.get('cache-control')).toBe('no-cache')
    expect(response.headers.get('x-accel-buffering')).toBe('no')
    expect(response.headers.get('x-request-id')).toBeTruthy()
    const events = await readEvents(response)
    expect(events[0]).toMatchObject({ type: 'start', model: 'builtin/extractive' })
    const chunks = events.filter((e) => e.type === 'chunk')
    expect(chunks.length).toBeGreaterThan(1)
    const end = events.at(-1)
    expect(end).toMatchObject({ type: 'end', conversationId: events[0].conversationId })
    expect(end.tokens).toBeGreaterThan(0)
    const stored = await server.call('GET', `/conversations/${end.conversationId}`, { token: accessToken })
    expect(stored.json.messages[1].content).toBe(chunks.map((c) => c.content).join(''))
  })

  test('a client that disconnects stops generation; the partial reply is stored, marked cancelled', async () => {
    const generator = new ScriptedGenerator(Array.from({ length: 200 }, (_, i) => `word${i}`).join(' '), 5)
    const server = makeServerWith(generator)
    const base = listen(server)
    const { accessToken } = await server.login()
    const controller = new AbortController()
    const response = await fetch(`${base}/stream?message=go`, { headers: { authorization: `Bearer ${accessToken}` }, signal: controller.signal })
    const reader = response.body!.getReader()
    let text = ''
    while (!text.includes('"chunk"')) text += new TextDecoder().decode((await reader.read()).value)
    controller.abort()
    for (let i = 0; i < 100 && !generator.cancelled; i++) await Bun.sleep(10)
    expect(generator.cancelled).toBe(true)
    expect(generator.piecesSent).toBeLessThan(200)
    let stored: any
    for (let i = 0; i < 100; i++) {
      stored = await server.call('GET', '/conversations', { token: accessToken })
      if (stored.json.total === 1) break
      await Bun.sleep(10)
    }
    const reply = stored.json.conversations[0].messages[1]
    expect(reply.metadata.cancelled).toBe(true)
    expect(reply.content).toStartWith('word0')
    expect(reply.content.split(' ').length).toBeLessThan(200)
  })

  test('validation failures are ErrorResponses before any stream starts', async () => {
    const { call, login } = makeServer()
    const { accessToken } = await login()
    const missing = await call('GET', '/stream', { token: accessToken })
    expect(missing.status).toBe(400)
    expect(missing.json.code).toBe('VALIDATION_ERROR')
    const blank = await call('GET', `/stream?message=${encodeURIComponent('  \n ')}`, { token: accessToken })
    expect(blank.status).toBe(400)
    expect(blank.json.message).toBe('query.message: must be a string from 1 to 32000 characters, not blank')
    expect((await call('GET', '/stream?message=hi')).status).toBe(401)
  })

  test('a generator failure after start is an error event', async () => {
    const failing = new ScriptedGenerator('a b c')
    failing.stream = async function* () {
      yield 'partial'
      const { AppError } = await import('../../src/core/errors')
      throw new AppError('MODEL_UNAVAILABLE', 'upstream went away')
    }
    const server = makeServerWith(failing)
    const base = listen(server)
    const { accessToken } = await server.login()
    const events = await readEvents(await fetch(`${base}/stream?message=hi`, { headers: { authorization: `Bearer ${accessToken}` } }))
    expect(events.map((e) => e.type)).toEqual(['start', 'chunk', 'error'])
    expect(events[2]).toMatchObject({ code: 'MODEL_UNAVAILABLE', message: 'upstream went away' })
  })

  test('a conversation deleted while its reply is generated: 409 on /chat, an error event on /stream; nothing is re-created', async () => {
    const server = makeServerWith(new ScriptedGenerator('one two three four five six seven eight', 15))
    const base = listen(server)
    const { accessToken: token } = await server.login()
    const conversations = () => (server.services.db.query('SELECT count(*) AS n FROM conversations').get() as { n: number }).n
    const start = async () => (await server.call('POST', '/chat', { token, body: { message: 'first' } })).json.metadata.conversationId as string

    let id = await start()
    const chat = server.call('POST', '/chat', { token, body: { message: 'again', conversationId: id } })
    await Bun.sleep(30)
    expect((await server.call('DELETE', `/conversations/${id}`, { token })).status).toBe(200)
    const answered = await chat
    expect(answered.status).toBe(409)
    expect(answered.json.message).toContain('was deleted while this reply was being generated')
    expect(conversations()).toBe(0)

    id = await start()
    const response = await fetch(`${base}/stream?message=again&conversationId=${id}`, { headers: { authorization: `Bearer ${token}` } })
    await Bun.sleep(30)
    await server.call('DELETE', `/conversations/${id}`, { token })
    const events = await readEvents(response)
    expect(events[0]!.type).toBe('start')
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'CONFLICT' })
    expect(conversations()).toBe(0)
  })
})
