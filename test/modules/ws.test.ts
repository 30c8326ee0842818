import { afterAll, describe, expect, test } from 'bun:test'
import { makeServer, makeServerWith, ScriptedGenerator } from '../helpers'

/** A real WebSocket client that queues every message it receives. */
async function connect(port: number) {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/ws`)
  const inbox: any[] = []
  const waiters: (() => void)[] = []
  socket.onmessage = (event) => {
    inbox.push(JSON.parse(String(event.data)))
    waiters.splice(0).forEach((wake) => wake())
  }
  await new Promise((resolve, reject) => {
    socket.onopen = resolve
    socket.onerror = reject
  })
  async function next(predicate: (m: any) => boolean = () => true) {
    for (let attempt = 0; attempt < 500; attempt++) {
      const index = inbox.findIndex(predicate)
      if (index >= 0) return inbox.splice(index, 1)[0]
      await new Promise<void>((resolve) => {
        waiters.push(resolve)
        setTimeout(resolve, 20)
      })
    }
    throw new Error('no matching message')
  }
  return { socket, inbox, next, send: (message: unknown) => socket.send(typeof message === 'string' ? message : JSON.stringify(message)) }
}

const servers: { stop(): void }[] = []
afterAll(() => servers.forEach((s) => s.stop()))

function listen(server: ReturnType<typeof makeServer>) {
  const app = server.app.listen({ port: 0 })
  servers.push(app)
  return app.server!.port!
}

describe('WebSocket /ws', () => {
  test('messages before auth get UNAUTHORIZED; a bad token too; the socket stays open', async () => {
    const server = makeServer()
    const client = await connect(listen(server))
    client.send({ type: 'stream_chat', message: 'hi', id: 7 })
    expect(await client.next()).toMatchObject({ type: 'error', code: 'UNAUTHORIZED', id: 7 })
    client.send({ type: 'auth', token: 'not-a-token', id: 'x' })
    expect(await client.next()).toMatchObject({ type: 'error', code: 'UNAUTHORIZED', id: 'x' })
    expect(client.socket.readyState).toBe(WebSocket.OPEN)
    const { accessToken, user, sessionId } = await server.login()
    client.send({ type: 'auth', token: accessToken, id: 1 })
    expect(await client.next()).toEqual({ type: 'auth_success', userId: user.id, sessionId, id: 1 })
    client.socket.close()
  })

  test('bad JSON, bad shapes and unknown types are VALIDATION_ERROR and keep the socket open', async () => {
    const server = makeServer()
    const client = await connect(listen(server))
    client.send('{not json')
    expect(await client.next()).toMatchObject({ type: 'error', code: 'VALIDATION_ERROR' })
    client.send('[1,2]')
    expect(await client.next()).toMatchObject({ type: 'error', code: 'VALIDATION_ERROR' })
    client.send({ token: 'no type' })
    expect(await client.next()).toMatchObject({ type: 'error', code: 'VALIDATION_ERROR' })
    client.send({ type: 'auth', token: (await server.login()).accessToken })
    expect(await client.next()).toMatchObject({ type: 'auth_success' })
    client.send({ type: 'teleport', id: 3 })
    expect(await client.next()).toMatchObject({ type: 'error', code: 'VALIDATION_ERROR', id: 3 })
    client.send({ type: 'stream_chat', message: '', id: 4 })
    expect(await client.next()).toMatchObject({ type: 'error', code: 'VALIDATION_ERROR', id: 4 })
    client.send({ type: 'stream_chat', message: '  \n', id: 5 })
    expect(await client.next()).toMatchObject({ type: 'error', code: 'VALIDATION_ERROR', id: 5 })
    expect(client.socket.readyState).toBe(WebSocket.OPEN)
    client.socket.close()
  })

  test('a message nesting arrays or objects 100,000 levels deep is a VALIDATION_ERROR; the socket stays open', async () => {
    const server = makeServer()
    const client = await connect(listen(server))
    client.send({ type: 'auth', token: (await server.login()).accessToken })
    expect(await client.next()).toMatchObject({ type: 'auth_success' })
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`
    client.send(`{"type":"stream_chat","message":${deep}}`)
    expect(await client.next()).toEqual({ type: 'error', code: 'VALIDATION_ERROR', message: 'message: arrays and objects nest more than 100 levels deep' })
    client.send(`{"type":"plugin_execute","plugin":"calculator","action":"evaluate","parameters":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}`)
    expect(await client.next()).toEqual({ type: 'error', code: 'VALIDATION_ERROR', message: 'parameters: arrays and objects nest more than 100 levels deep' })
    client.send({ type: 'plugin_execute', plugin: 'calculator', action: 'evaluate', parameters: { expression: '6*7' }, id: 2 })
    expect(await client.next()).toMatchObject({ type: 'chat_response', id: 2, data: { result: { value: 42 } } })
    client.socket.close()
  })

  test('any id is echoed, on shape errors too; a JSON string wrapping an object is not a message', async () => {
    const server = makeServer()
    const client = await connect(listen(server))
    client.send('{"type":5,"id":"n"}')
    expect(await client.next()).toEqual({ type: 'error', code: 'VALIDATION_ERROR', message: 'Message needs a string "type"', id: 'n' })
    client.send({ type: '', id: { request: 1 } })
    expect(await client.next()).toMatchObject({ type: 'error', code: 'VALIDATION_ERROR', id: { request: 1 } })
    const { accessToken } = await server.login()
    client.send(JSON.stringify(JSON.stringify({ type: 'auth', token: accessToken, id: 'wrapped' })))
    expect(await client.next()).toMatchObject({ type: 'error', code: 'VALIDATION_ERROR' })
    client.send(`  ${JSON.stringify({ type: 'auth', token: accessToken, id: 'spaced' })}`) // JSON may start with white space
    expect(await client.next()).toMatchObject({ type: 'auth_success', id: 'spaced' })
    client.send({ type: 'stream_chat', message: 'hello', id: true })
    expect(await client.next((m) => m.type === 'chat_response')).toMatchObject({ id: true })
    client.send({ type: 'stream_chat', message: 'hello', id: null })
    expect(await client.next((m) => m.type === 'chat_response')).toMatchObject({ id: null })
    client.socket.close()
  })

  test('a frame over the request size limit closes the socket with 1009; smaller ones are read', async () => {
    const server = makeServer({ maxRequestSize: '64kb', maxRequestBytes: 64 * 1024 })
    const client = await connect(listen(server))
    client.send({ type: 'auth', token: 'x'.repeat(60 * 1024) })
    expect(await client.next()).toMatchObject({ type: 'error', code: 'UNAUTHORIZED' })
    const closed = new Promise<number>((resolve) => (client.socket.onclose = (event) => resolve(event.code)))
    client.send({ type: 'auth', token: 'x'.repeat(80 * 1024) })
    expect(await closed).toBe(1009)
  })

  test('lone surrogates in a message or context: the streamed reply is the stored reply', async () => {
    const server = makeServer()
    const client = await connect(listen(server))
    client.send({ type: 'auth', token: (await server.login()).accessToken })
    await client.next((m) => m.type === 'auth_success')
    client.send({ type: 'stream_chat', message: 'What is the capital of Freedonia?', context: 'The capital of Freedonia is Fred\ud800ville.', id: 's' })
    const response = await client.next((m) => m.type === 'chat_response')
    const chunks = client.inbox.filter((m) => m.type === 'stream_chunk').map((m) => m.content).join('')
    expect(chunks).toBe(response.data.response)
    const stored = await server.call('GET', `/conversations/${response.data.metadata.conversationId}`, { token: (await server.login()).accessToken })
    expect(stored.json.messages[1].content).toBe(response.data.response)
    client.socket.close()
  })

  test('an unexpected failure is INTERNAL_ERROR with a request id, logged with it, and its text is stored nowhere', async () => {
    const failing = new ScriptedGenerator('a b c')
    failing.stream = async function* () {
      yield 'partial'
      throw new Error('internal detail /srv/secret.py')
    }
    const lines: string[] = []
    const server = makeServerWith(failing, { log: (line) => lines.push(line) })
    const client = await connect(listen(server))
    const { accessToken: token } = await server.login()
    client.send({ type: 'auth', token })
    await client.next((m) => m.type === 'auth_success')
    client.send({ type: 'stream_chat', message: 'hello', id: 9 })
    const error = await client.next((m) => m.type === 'error')
    expect(error).toMatchObject({ code: 'INTERNAL_ERROR', id: 9 })
    const requestId = /request id ([\w-]+)/.exec(error.message)![1]!
    expect(lines.some((line) => line.includes(requestId) && line.includes('internal detail'))).toBe(true)
    const listed = await server.call('GET', '/conversations', { token })
    const stored = JSON.stringify(listed.json.conversations[0].messages)
    expect(stored).toContain('partial')
    expect(stored).not.toContain('secret')
    client.socket.close()
  })

  test('stream_chat end to end: stream_chunk pieces then chat_response, each with the id; stored', async () => {
    const server = makeServer()
    const client = await connect(listen(server))
    const { accessToken } = await server.login()
    client.send({ type: 'auth', token: accessToken })
    await client.next((m) => m.type === 'auth_success')
    client.send({ type: 'stream_chat', message: 'Hello over the socket', id: 'q1' })
    const final = await client.next((m) => m.type === 'chat_response')
    const chunks = client.inbox.filter((m) => m.type === 'stream_chunk')
    expect(chunks.length).toBeGreaterThan(1)
    expect(chunks.every((m) => m.id === 'q1')).toBe(true)
    expect(final.id).toBe('q1')
    expect(final.data.response).toBe(chunks.map((m) => m.content).join(''))
    expect(final.data.metadata).toMatchObject({ model: 'builtin/extractive', optimized: false })
    const stored = await server.call('GET', `/conversations/${final.data.metadata.conversationId}`, { token: accessToken })
    expect(stored.json.messages[1].content).toBe(final.data.response)
    client.socket.close()
  })

  test('closing the socket cancels its generation', async () => {
    const generator = new ScriptedGenerator(Array.from({ length: 300 }, (_, i) => `w${i}`).join(' '), 5)
    const server = makeServerWith(generator)
    const client = await connect(listen(server))
    client.send({ type: 'auth', token: (await server.login()).accessToken })
    await client.next((m) => m.type === 'auth_success')
    client.send({ type: 'stream_chat', message: 'go on' })
    await client.next((m) => m.type === 'stream_chunk')
    client.socket.close()
    for (let i = 0; i < 100 && !generator.cancelled; i++) await Bun.sleep(10)
    expect(generator.cancelled).toBe(true)
    expect(generator.piecesSent).toBeLessThan(300)
  })

  test('a revoked session stops working on an open socket', async () => {
    const server = makeServer()
    const client = await connect(listen(server))
    const session = await server.login()
    client.send({ type: 'auth', token: session.accessToken })
    await client.next((m) => m.type === 'auth_success')
    await server.call('POST', '/auth/logout', { token: session.accessToken })
    client.send({ type: 'stream_chat', message: 'still there?' })
    expect(await client.next()).toMatchObject({ type: 'error', code: 'UNAUTHORIZED' })
    client.socket.close()
  })
})
