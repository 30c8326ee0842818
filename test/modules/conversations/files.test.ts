import { afterAll, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { formOf, makePdf } from '../kb/files'
import { until } from '../../helpers'
import { onBothBackends, type TestServer } from './servers'

const dataDir = mkdtempSync(join(tmpdir(), 'uagent-conv-files-'))
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))
const email = () => `${randomUUID().slice(0, 8)}@example.com`

const VPN = `# Reaching internal sites

Connect to the office VPN with the client called Tunnelblick before opening any internal site.
The VPN gateway is vpn.example.internal and it asks for your badge number.
`

async function attach(server: TestServer, id: string, token: string, files: [string, Uint8Array | string][]) {
  const response = await server.app.handle(new Request(`http://localhost/conversations/${id}/files`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: formOf(files) }))
  return { status: response.status, json: (await response.json()) as any }
}

onBothBackends('files in a conversation', (make) => {
  test('attached files ground the later replies, cited by name; listed, removed; gone with the conversation; never another user’s', async () => {
    const server = make({ dataDir })
    const { accessToken: token } = await server.userSession(email())
    const other = await server.userSession(email())
    const made = await server.call('POST', '/conversations', { token, body: {} })
    expect(made.json).toMatchObject({ title: 'New chat', messages: [] })
    const id = made.json.id

    const attached = await attach(server, id, token, [['vpn-guide.md', VPN], ['manual.pdf', await makePdf([['The printer on floor three takes A4 paper only.']])]])
    expect(attached.status).toBe(200)
    expect(attached.json.files).toEqual([
      expect.objectContaining({ id: 'vpn-guide.md', name: 'vpn-guide.md', status: 'ready', type: 'markdown' }),
      expect.objectContaining({ id: 'manual.pdf', name: 'manual.pdf', status: 'ready', type: 'pdf', pages: 1 }),
    ])
    const listed = await server.call('GET', `/conversations/${id}/files`, { token })
    expect(listed.json.files.map((f: { id: string; status: string }) => [f.id, f.status])).toEqual([['manual.pdf', 'ready'], ['vpn-guide.md', 'ready']])
    // The files' collection is the conversation's, not one to list (nor one anyone may name).
    expect((await server.call('GET', '/rag/collections', { token })).json.collections).toEqual([])
    const reserved = await server.call('POST', '/rag/collections', { token, body: { name: `__conversation-${randomUUID()}` } })
    expect(reserved.status).toBe(400)

    const reply = await server.call('POST', '/chat', { token, body: { message: 'Which VPN client do I need for internal sites?', conversationId: id } })
    expect(reply.status).toBe(200)
    expect(reply.json.metadata.sources?.length).toBeGreaterThan(0)
    expect(reply.json.metadata.sources[0]).toMatchObject({ title: 'vpn-guide.md', id: 'vpn-guide.md', collection: 'conversation', file: true })
    expect(reply.json.response).toContain('Tunnelblick')
    // The empty conversation was named by its first message.
    expect((await server.call('GET', `/conversations/${id}`, { token })).json.title).toBe('Which VPN client do I need for internal sites?')
    // Exported with the file as a footnote.
    const markdown = (await server.call('GET', `/conversations/${id}/export`, { token })).text
    expect(markdown).toContain('[^1]: vpn-guide.md, a file of this conversation')

    // Another user: 404 for every files route, and nothing of the file in the answer.
    for (const [method, path] of [['GET', `/conversations/${id}/files`], ['DELETE', `/conversations/${id}/files/vpn-guide.md`]] as const) {
      const res = await server.call(method, path, { token: other.accessToken })
      expect(res.status).toBe(404)
      expect(res.text).not.toContain('vpn-guide')
    }
    expect((await attach(server, id, other.accessToken, [['evil.md', 'x']])).status).toBe(404)
    // Their own chat naming the conversation gets 404 too, never a grounded reply.
    expect((await server.call('POST', '/chat', { token: other.accessToken, body: { message: 'Which VPN client?', conversationId: id } })).status).toBe(404)

    // Removing a file: it no longer grounds anything.
    expect((await server.call('DELETE', `/conversations/${id}/files/vpn-guide.md`, { token })).json).toEqual({ success: true, id: 'vpn-guide.md' })
    expect((await server.call('DELETE', `/conversations/${id}/files/vpn-guide.md`, { token })).status).toBe(404)
    const after = await server.call('POST', '/chat', { token, body: { message: 'Which VPN client do I need for internal sites?', conversationId: id } })
    expect(JSON.stringify(after.json.metadata.sources ?? [])).not.toContain('vpn-guide.md')

    // Deleting the conversation deletes its files' collection.
    expect((await server.call('DELETE', `/conversations/${id}`, { token })).status).toBe(200)
    const collections = await server.services.rag.ownCollections((await server.call('GET', '/auth/me', { token })).json.id)
    expect(collections.filter((c: { name: string }) => c.name.includes(id))).toEqual([])
  })

  test('a file that cannot be read is failed with its reason; a conversation without files answers as before', async () => {
    const server = make({ dataDir })
    const { accessToken: token } = await server.userSession(email())
    const first = await server.call('POST', '/chat', { token, body: { message: 'hello there' } })
    const id = first.json.metadata.conversationId
    const bad = await attach(server, id, token, [['empty.md', '']])
    expect(bad.status).toBe(200)
    expect(bad.json.files).toEqual([expect.objectContaining({ name: 'empty.md', status: 'failed', reason: expect.any(String) })])
    const none = await server.app.handle(new Request(`http://localhost/conversations/${id}/files`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{}' }))
    expect(none.status).toBe(400)
    const next = await server.call('POST', '/chat', { token, body: { message: 'and again', conversationId: id } })
    expect(next.status).toBe(200)
    expect(next.json.metadata.sources).toBeUndefined()
  })

  test('slow files are a 202 ingestion job: listed queued or running, then ready; the reply is grounded once they are', async () => {
    const server = make({ dataDir, env: { UAGENT_INGEST_JOB_AFTER_MS: '0' } })
    const { accessToken: token } = await server.userSession(email())
    const id = (await server.call('POST', '/conversations', { token, body: { title: 'Jobs' } })).json.id
    const attached = await attach(server, id, token, [['vpn-guide.md', VPN]])
    expect(attached.status).toBe(202)
    const jobId: string = attached.json.jobId
    expect(attached.json).toMatchObject({ jobId: expect.any(String), status: 'queued', files: [{ id: 'vpn-guide.md', name: 'vpn-guide.md', status: expect.stringMatching(/^(queued|running|ready)$/), jobId }] })
    const ready = await until(
      () => server.call('GET', `/conversations/${id}/files`, { token }),
      (res) => res.json.files[0]?.status === 'ready',
    )
    expect(ready.json.files).toEqual([expect.objectContaining({ id: 'vpn-guide.md', status: 'ready' })])
    const job = await until(() => server.call('GET', `/rag/jobs/${jobId}`, { token }), (res) => res.json?.status === 'completed')
    expect(job.json).toMatchObject({ status: 'completed', files: [{ name: 'vpn-guide.md', status: 'ingested' }] })
    const reply = await server.call('POST', '/chat', { token, body: { message: 'Which VPN client do I need?', conversationId: id } })
    expect(reply.json.metadata.sources[0]).toMatchObject({ title: 'vpn-guide.md', file: true })
  })
})
