import { describe, expect, test } from 'bun:test'
import { makeServer } from '../helpers'

// People embedding the app test it with app.handle(new Request('http://x/…')): whatever the
// host, the request reaches the route it names, as over HTTP.
describe('in-process requests with any host', () => {
  for (const host of ['x', 'ab', 'abc', 'localhost', 'x:8080', '127.0.0.1:3000']) {
    test(`http://${host}/health answers 200 healthy`, async () => {
      const { app } = makeServer()
      const response = await app.handle(new Request(`http://${host}/health`))
      expect(response.status).toBe(200)
      expect(((await response.json()) as { status: string }).status).toBe('healthy')
    })
  }

  test('a short host reaches routes with params, a query and a body', async () => {
    const { app, login } = makeServer()
    const { accessToken } = await login()
    const auth = { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' }
    const chat = await app.handle(new Request('http://x/chat', { method: 'POST', headers: auth, body: JSON.stringify({ message: 'Hello there' }) }))
    expect(chat.status).toBe(200)
    const id = ((await chat.json()) as { metadata: { conversationId: string } }).metadata.conversationId
    const one = await app.handle(new Request(`http://x/conversations/${id}`, { headers: auth }))
    expect(one.status).toBe(200)
    expect(((await one.json()) as { id: string }).id).toBe(id)
    const list = await app.handle(new Request('http://x/conversations?limit=1', { headers: auth }))
    expect(list.status).toBe(200)
    expect(((await list.json()) as { conversations: unknown[] }).conversations).toHaveLength(1)
    const bad = await app.handle(new Request('http://x/conversations?limit=500', { headers: auth }))
    expect(bad.status).toBe(400)
    const unknown = await app.handle(new Request('http://x/no/such/route'))
    expect(unknown.status).toBe(404)
  })
})
