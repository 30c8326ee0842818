import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { makeServer } from '../../helpers'

// Real processes (Node workers, git, npm, the CLI) on a shared machine: generous per-test limits.
setDefaultTimeout(30_000)

const server = makeServer()
const app = server.app.listen({ port: 0 })
afterAll(() => app.stop(true))

async function connect() {
  const socket = new WebSocket(`ws://127.0.0.1:${app.server!.port}/ws`)
  const inbox: any[] = []
  socket.onmessage = (event) => inbox.push(JSON.parse(String(event.data)))
  await new Promise((resolve, reject) => {
    socket.onopen = resolve
    socket.onerror = reject
  })
  async function next() {
    for (let attempt = 0; attempt < 250 && inbox.length === 0; attempt++) await Bun.sleep(20)
    if (!inbox.length) throw new Error('no message')
    return inbox.shift()
  }
  return { socket, next, send: (message: unknown) => socket.send(JSON.stringify(message)) }
}

describe('WebSocket plugin_execute', () => {
  test('answers chat_response with the PluginExecuteResponse; errors come as error messages and the socket stays open', async () => {
    const client = await connect()
    client.send({ type: 'plugin_execute', plugin: 'calculator', action: 'evaluate', parameters: { expression: '1+1' }, id: 0 })
    expect(await client.next()).toMatchObject({ type: 'error', code: 'UNAUTHORIZED', id: 0 })
    const { accessToken } = await server.login()
    client.send({ type: 'auth', token: accessToken })
    expect((await client.next()).type).toBe('auth_success')

    client.send({ type: 'plugin_execute', plugin: 'calculator', action: 'evaluate', parameters: { expression: '(2+3)*4' }, id: 1 })
    const reply = await client.next()
    expect(reply).toMatchObject({ type: 'chat_response', id: 1, data: { success: true, plugin: 'calculator', action: 'evaluate', result: { value: 20 } } })
    expect(Number.isInteger(reply.data.executionTime)).toBe(true)

    const cases: [Record<string, unknown>, string][] = [
      [{ plugin: 'nope', action: 'x', parameters: {} }, 'NOT_FOUND'],
      [{ plugin: 'calculator', action: 'integrate', parameters: {} }, 'UNKNOWN_ACTION'],
      [{ plugin: 'calculator', action: 'evaluate', parameters: {} }, 'VALIDATION_ERROR'],
      [{ plugin: 'calculator', action: 'evaluate', parameters: { expression: 'process.exit()' } }, 'PLUGIN_ERROR'],
      [{ plugin: 'calculator', action: 'evaluate', parameters: 'x' }, 'VALIDATION_ERROR'],
      [{ action: 'evaluate', parameters: {} }, 'VALIDATION_ERROR'],
    ]
    for (const [index, [message, code]] of cases.entries()) {
      client.send({ type: 'plugin_execute', ...message, id: `e${index}` })
      const error = await client.next()
      expect(error).toMatchObject({ type: 'error', code, id: `e${index}` })
      expect(error.message).toBeString()
    }
    expect(client.socket.readyState).toBe(WebSocket.OPEN)
    client.send({ type: 'plugin_execute', plugin: 'text', action: 'stats', parameters: { text: 'One. Two.' }, id: 2 })
    expect(await client.next()).toMatchObject({ type: 'chat_response', id: 2, data: { result: { sentences: 2, words: 2 } } })
    client.socket.close()
  })
})
