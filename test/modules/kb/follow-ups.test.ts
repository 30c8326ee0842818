// Follow-up questions in a grounded conversation (issue 37, point 2): "and which command applies
// it afterwards?" is searched and answered with the turns before it, over HTTP chat, the WebSocket
// and the OpenAI-compatible rag:<collection> models.
import { afterAll, describe, expect, test } from 'bun:test'
import set from '../../fixtures/kb-labelled.json'
import labelled from '../../fixtures/answers-labelled.json'
import { makeServer } from '../../helpers'

const RETENTION = {
  id: 'retention.md',
  metadata: { title: 'Retention policy' },
  content:
    '# Retention policy\n\nBackups are kept according to the retention policy of each repository. ' +
    'Change this with keep-daily, keep-weekly and keep-monthly in harbor.conf.\n\n' +
    'The new values take effect once you run harbor prune, which deletes the snapshots that fall outside them.\n\n' +
    'By default seven daily snapshots are kept, and four weekly ones.',
}

const servers: { stop(): void }[] = []
afterAll(() => servers.forEach((s) => s.stop()))

async function handbook() {
  const server = makeServer()
  const session = await server.login()
  const token = session.accessToken
  const ingest = await server.call('POST', '/rag/ingest', { token, body: { collection: 'handbook', documents: [...set.documents, RETENTION] } })
  expect(ingest.json.ingested).toBe(set.documents.length + 1)
  return { ...server, token }
}

const FIRST = 'How do I change the retention policy?'
const FOLLOW_UP = 'and which command applies it afterwards?'
const WEEKLY = 'what about weekly ones?'

describe('follow-ups use the conversation', () => {
  test('POST /chat: an elliptical follow-up is answered from the document the conversation is about', async () => {
    const server = await handbook()
    const first = await server.call('POST', '/chat', { token: server.token, body: { message: FIRST, collection: 'handbook' } })
    expect(first.json.metadata.sources[0].id).toBe('retention.md')
    expect(first.json.response).toContain('keep-daily, keep-weekly and keep-monthly')
    const conversationId = first.json.metadata.conversationId
    const next = await server.call('POST', '/chat', { token: server.token, body: { message: FOLLOW_UP, collection: 'handbook', conversationId } })
    expect(next.status).toBe(200)
    expect(next.json.metadata.sources[0].id).toBe('retention.md')
    expect(next.json.response).toContain('run harbor prune')
    const weekly = await server.call('POST', '/chat', { token: server.token, body: { message: WEEKLY, collection: 'handbook', conversationId } })
    expect(weekly.json.metadata.sources[0].id).toBe('retention.md')
    expect(weekly.json.response).toContain('four weekly ones')
    // Without the conversation, the follow-up is not about retention at all.
    const alone = await server.call('POST', '/chat', { token: server.token, body: { message: FOLLOW_UP, collection: 'handbook' } })
    expect(alone.json.response).not.toContain('harbor prune')
  }, 60_000)

  test('POST /chat: the follow-up is answered when the handbook sits beside long unrelated texts (the coverage rule applies), and "which command" is not a word the answer must hold', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    const handbook = {
      id: 'harbor.md',
      content:
        '# Harbor backup handbook\n\n## Retention policy\n\nRetention policy. Harbor keeps daily snapshots for a week by default. ' +
        'Change this with keep-daily, keep-weekly and keep-monthly in harbor.conf, then run harbor prune. Weekly snapshots are kept for a month.',
    }
    const licences = labelled.documents.filter((d) => d.id === 'GPL-3' || d.id === 'Apache-2.0')
    expect((await server.call('POST', '/rag/ingest', { token, body: { collection: 'mixed', documents: [handbook, ...licences] } })).json.ingested).toBe(3)
    expect((await server.call('GET', '/rag/collections', { token })).json.collections[0].chunks).toBeGreaterThanOrEqual(50)
    const first = await server.call('POST', '/chat', { token, body: { message: FIRST, collection: 'mixed' } })
    expect(first.json.response).toContain('then run harbor prune')
    const next = await server.call('POST', '/chat', { token, body: { message: FOLLOW_UP, collection: 'mixed', conversationId: first.json.metadata.conversationId } })
    expect(next.json.metadata.sources[0]?.id).toBe('harbor.md')
    expect(next.json.response).toContain('run harbor prune')
    // A second follow-up carries both earlier questions' words; those count for less than its own.
    const weekly = await server.call('POST', '/chat', { token, body: { message: WEEKLY, collection: 'mixed', conversationId: first.json.metadata.conversationId } })
    expect(weekly.json.metadata.sources[0]?.id).toBe('harbor.md')
    expect(weekly.json.response).toContain('Weekly snapshots are kept for a month.')
    const world = await server.call('POST', '/chat', { token, body: { message: 'and who painted the Mona Lisa?', collection: 'mixed', conversationId: first.json.metadata.conversationId } })
    expect(world.json.metadata.sources ?? []).toEqual([])
  }, 60_000)

  test('WebSocket stream_chat: the follow-up in the same conversation retrieves with the earlier question', async () => {
    const server = await handbook()
    const app = server.app.listen({ port: 0 })
    servers.push(app)
    const socket = new WebSocket(`ws://127.0.0.1:${app.server!.port}/ws`)
    const inbox: any[] = []
    socket.onmessage = (event) => inbox.push(JSON.parse(String(event.data)))
    await new Promise((resolve, reject) => {
      socket.onopen = resolve
      socket.onerror = reject
    })
    const reply = async (id: number) => {
      for (let i = 0; i < 500; i++) {
        const found = inbox.find((m) => m.id === id && (m.type === 'chat_response' || m.type === 'error'))
        if (found) return found
        await Bun.sleep(20)
      }
      throw new Error('no reply')
    }
    socket.send(JSON.stringify({ type: 'auth', token: server.token, id: 1 }))
    socket.send(JSON.stringify({ type: 'stream_chat', message: FIRST, collection: 'handbook', id: 2 }))
    const first = await reply(2)
    expect(first.data.metadata.sources[0].id).toBe('retention.md')
    socket.send(JSON.stringify({ type: 'stream_chat', message: FOLLOW_UP, collection: 'handbook', conversationId: first.data.metadata.conversationId, id: 3 }))
    const next = await reply(3)
    expect(next.data.metadata.sources[0].id).toBe('retention.md')
    expect(next.data.response).toContain('run harbor prune')
    socket.close()
  }, 60_000)

  test('/v1/chat/completions with a rag: model answers the last question with the earlier ones', async () => {
    const server = await handbook()
    const ask = (messages: { role: string; content: string }[]) =>
      server.call('POST', '/v1/chat/completions', { token: server.token, body: { model: 'rag:handbook', messages } })
    const first = await ask([{ role: 'user', content: FIRST }])
    expect(first.status).toBe(200)
    const firstReply = first.json.choices[0].message.content
    expect(firstReply).toContain('keep-daily')
    const next = await ask([
      { role: 'user', content: FIRST },
      { role: 'assistant', content: firstReply },
      { role: 'user', content: FOLLOW_UP },
    ])
    expect(next.status).toBe(200)
    expect(next.json.sources[0].id).toBe('retention.md')
    expect(next.json.choices[0].message.content).toContain('run harbor prune')
    const weekly = await ask([
      { role: 'user', content: FIRST },
      { role: 'assistant', content: firstReply },
      { role: 'user', content: WEEKLY },
    ])
    expect(weekly.json.choices[0].message.content).toContain('four weekly ones')
  }, 60_000)
})
