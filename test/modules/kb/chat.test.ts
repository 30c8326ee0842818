import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import set from '../../fixtures/kb-labelled.json'
import { readEventData } from '../../../src/core/sse-reader'
import { makeServer, makeServerWith, ScriptedGenerator } from '../../helpers'

const servers: { stop(): void }[] = []
// Uploads stream to a temporary folder in the data dir: a throwaway one here.
const dataDir = mkdtempSync(join(tmpdir(), 'uagent-kb-chat-'))
afterAll(() => {
  servers.forEach((s) => s.stop())
  rmSync(dataDir, { recursive: true, force: true })
})

async function harbor(server = makeServer({ dataDir })) {
  const session = await server.login()
  const token = session.accessToken
  const ingest = await server.call('POST', '/rag/ingest', { token, body: { collection: 'harbor', documents: set.documents } })
  expect(ingest.json.ingested).toBe(set.documents.length)
  const listening = server.app.listen({ port: 0 })
  servers.push(listening as unknown as { stop(): void })
  return { ...server, token, port: listening.server!.port!, userId: session.user.id }
}

async function readEvents(response: Response) {
  const events: any[] = []
  for await (const data of readEventData(response.body!)) events.push(JSON.parse(data))
  return events
}

describe('chat grounded in a collection', () => {
  test('POST /chat with collection answers from it and lists its sources; a follow-up retrieves from the document the conversation is about', async () => {
    const server = await harbor()
    const first = await server.call('POST', '/chat', { token: server.token, body: { message: 'How do I enable two-factor authentication?', collection: 'harbor' } })
    expect(first.status).toBe(200)
    expect(first.json.metadata.sources[0]).toEqual({ id: 'two-factor.md', title: 'Two-factor authentication', chunk: 0, score: expect.any(Number), collection: 'harbor' })
    expect(first.json.response).toContain('scan the QR code')
    expect(first.json.response).toContain('[1]')

    const followUp = await server.call('POST', '/chat', {
      token: server.token,
      body: { message: 'and how do I disable it?', collection: 'harbor', conversationId: first.json.metadata.conversationId },
    })
    expect(followUp.status).toBe(200)
    expect(followUp.json.metadata.sources[0].id).toBe('two-factor.md')
    expect(followUp.json.response).toContain('Disable two-factor')
    const stored = await server.call('GET', `/conversations/${first.json.metadata.conversationId}`, { token: server.token })
    expect(stored.json.messages).toHaveLength(4)
    expect(stored.json.messages[3].metadata.sources[0].id).toBe('two-factor.md')

    // On its own, "and how do I disable it?" finds two-factor authentication; after a question on public links, it means those.
    const alone = await server.call('POST', '/rag/search', { token: server.token, body: { collection: 'harbor', query: 'and how do I disable it?', limit: 1 } })
    expect(alone.json.results[0].id).toBe('two-factor.md')
    const links = await server.call('POST', '/chat', { token: server.token, body: { message: 'Can I share a file with a public link?', collection: 'harbor' } })
    expect(links.json.metadata.sources[0].id).toBe('sharing.md')
    const disable = await server.call('POST', '/chat', {
      token: server.token,
      body: { message: 'and how do I disable it?', collection: 'harbor', conversationId: links.json.metadata.conversationId },
    })
    expect(disable.json.metadata.sources[0].id).toBe('sharing.md')
    expect(disable.json.response).toContain('disable public links')
  }, 60_000)

  test('an off-topic question in a grounded chat says nothing relevant was found, with no sources', async () => {
    const server = await harbor()
    const res = await server.call('POST', '/chat', { token: server.token, body: { message: 'What is the capital of France?', collections: ['harbor'] } })
    expect(res.status).toBe(200)
    expect(res.json.response).toContain('could not find anything relevant')
    expect(res.json.metadata.sources).toEqual([])
  }, 60_000)

  test('a real model is given the numbered passages and the instruction to cite them', async () => {
    const generator = new ScriptedGenerator('Open Settings, then Security [1].')
    const server = await harbor(makeServerWith(generator))
    const res = await server.call('POST', '/chat', { token: server.token, body: { message: 'How do I enable two-factor authentication?', collection: 'harbor' } })
    expect(res.json.response).toBe('Open Settings, then Security [1].')
    const system = generator.prompts.at(-1)!.filter((m) => m.role === 'system').map((m) => m.content).join('\n')
    expect(system).toContain('Cite the sources you use as [1]')
    expect(system).toContain('[1] # Two-factor authentication')
    expect(res.json.metadata.sources[0].id).toBe('two-factor.md')
  }, 60_000)

  test('GET /stream and POST /chat/stream accept a collection: sources in start and end, chunks make the cited reply', async () => {
    const server = await harbor()
    const base = `http://127.0.0.1:${server.port}`
    const headers = { authorization: `Bearer ${server.token}` }
    const get = await fetch(`${base}/stream?message=${encodeURIComponent('How long are deleted files kept in the trash?')}&collection=harbor`, { headers })
    const events = await readEvents(get)
    expect(events[0].type).toBe('start')
    expect(events[0].sources[0]).toMatchObject({ id: 'trash.md', collection: 'harbor' })
    const reply = events.filter((e) => e.type === 'chunk').map((e) => e.content).join('')
    expect(reply).toContain('kept for 30 days')
    expect(reply).toContain('[1]')
    expect(events.at(-1)).toMatchObject({ type: 'end', sources: events[0].sources })

    const post = await fetch(`${base}/chat/stream`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'What port does Harbor listen on by default?', collections: ['harbor'] }),
    })
    expect(post.headers.get('content-type')).toStartWith('text/event-stream')
    const posted = await readEvents(post)
    expect(posted[0].sources[0].id).toBe('install.md')
    expect(posted.filter((e) => e.type === 'chunk').map((e) => e.content).join('')).toContain('8443')
  }, 60_000)

  test('WebSocket stream_chat accepts a collection and returns the sources', async () => {
    const server = await harbor()
    const socket = new WebSocket(`ws://127.0.0.1:${server.port}/ws`)
    const inbox: any[] = []
    socket.onmessage = (event) => inbox.push(JSON.parse(String(event.data)))
    await new Promise((resolve) => (socket.onopen = resolve))
    const next = async (type: string) => {
      for (let i = 0; i < 300; i++) {
        const at = inbox.findIndex((m) => m.type === type || m.type === 'error')
        if (at >= 0) return inbox.splice(at, 1)[0]
        await Bun.sleep(10)
      }
      throw new Error(`no ${type}`)
    }
    socket.send(JSON.stringify({ type: 'auth', token: server.token }))
    expect((await next('auth_success')).type).toBe('auth_success')
    socket.send(JSON.stringify({ type: 'stream_chat', message: 'How many versions of a file does Harbor keep?', collection: 'harbor', id: 1 }))
    const response = await next('chat_response')
    expect(response.data.metadata.sources[0]).toMatchObject({ id: 'versions.md', title: 'File versions', chunk: 0 })
    expect(response.data.response).toContain('last 20 versions')
    socket.send(JSON.stringify({ type: 'stream_chat', message: 'hello', collection: 'nobody-has-this', id: 2 }))
    expect(await next('chat_response')).toMatchObject({ type: 'error', code: 'NOT_FOUND', id: 2 })
    socket.close()
  }, 60_000)

  test("another user's collection is 404 in chat, both streams and the documents routes", async () => {
    const server = await harbor()
    const other = await server.userSession('other@example.com')
    const token = other.accessToken
    const chat = await server.call('POST', '/chat', { token, body: { message: 'How do I enable two-factor authentication?', collection: 'harbor' } })
    expect(chat.status).toBe(404)
    expect(chat.json.code).toBe('NOT_FOUND')
    expect((await server.call('GET', `/stream?message=hi&collection=harbor`, { token })).status).toBe(404)
    expect((await server.call('POST', '/chat/stream', { token, body: { message: 'hi', collections: ['harbor'] } })).status).toBe(404)
    expect((await server.call('GET', '/rag/collections/harbor/documents', { token })).status).toBe(404)
    expect((await server.call('GET', '/rag/collections/harbor/documents/install.md', { token })).status).toBe(404)
    expect((await server.call('GET', '/rag/collections/harbor/documents?view=hashes', { token })).status).toBe(404)
    // Their upload to a collection of that name makes their own, leaving the owner's untouched.
    const form = new FormData()
    form.append('files', new File(['Their own notes about harbors and boats.'], 'boats.txt'))
    const upload = await server.app.handle(new Request('http://localhost/rag/collections/harbor/files', { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form }))
    expect(upload.status).toBe(200)
    const owners = await server.call('GET', '/rag/collections/harbor/documents', { token: server.token })
    expect(owners.json.total).toBe(set.documents.length)
    expect(owners.json.documents.map((d: { id: string }) => d.id)).not.toContain('boats.txt')
  }, 60_000)
})
