import { expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openSocket } from '../../helpers'
import { aliceConversation, probeReads, probeWrites } from './probes'
import { onBothBackends } from './servers'

const dataDir = mkdtempSync(join(tmpdir(), 'uagent-conv-shares-'))
const email = () => `${randomUUID().slice(0, 8)}@example.com`

onBothBackends('conversation isolation and sharing', (make) => {
  test('an outsider: 0 leaks of the conversation, its files, exports or feedback, on every route (404 each)', async () => {
    const server = make({ dataDir })
    const alice = await server.userSession(email())
    const carol = await server.userSession(email())
    const c = await aliceConversation(server, alice.accessToken)
    const reads = await probeReads(server, carol.accessToken, c)
    const writes = await probeWrites(server, carol.accessToken, c)
    expect(reads.filter((r) => r.leaked)).toEqual([])
    expect(writes.filter((r) => r.leaked)).toEqual([])
    // Every probe of the conversation itself is a 404; the listings answer 200 without it.
    expect([...reads, ...writes].filter((r) => !r.probe.startsWith('GET /conversations') && !r.probe.startsWith('search') && r.status !== 404)).toEqual([])
    expect(reads.length + writes.length).toBe(21)
    // Nothing changed: Alice's conversation, file and rating are as they were.
    const mine = await server.call('GET', `/conversations/${c.id}`, { token: alice.accessToken })
    expect(mine.json).toMatchObject({ title: 'Zanzibar budget', messages: [{ id: c.messageId }, { id: c.replyId }] })
    expect((await server.call('GET', `/conversations/${c.id}/feedback`, { token: alice.accessToken })).json.ratings[c.replyId]).toEqual({ rating: 'up', note: 'tangerine-note' })
    // The same probes by Alice find her secrets: the leak check sees them when they are there.
    expect((await probeReads(server, alice.accessToken, c)).filter((r) => r.leaked).length).toBeGreaterThanOrEqual(6)
  })

  test('a viewer reads, finds, exports and rates the shared conversation (listed with access and owner); cannot post, regenerate, edit or attach (403); revoked at the next request; audited', async () => {
    const server = make({ dataDir })
    const admin = await server.login()
    const aliceEmail = email()
    const bobEmail = email()
    const alice = await server.userSession(aliceEmail)
    const bob = await server.userSession(bobEmail)
    const c = await aliceConversation(server, alice.accessToken, bobEmail)

    const access = await server.call('GET', `/conversations/${c.id}/access`, { token: alice.accessToken })
    expect(access.json).toEqual({ owner: { id: alice.user.id, email: aliceEmail }, shares: [{ type: 'user', id: bob.user.id, email: bobEmail, role: 'viewer' }] })
    // One role only.
    const editor = await server.call('PUT', `/conversations/${c.id}/access`, { token: alice.accessToken, body: { shares: [{ type: 'user', email: bobEmail, role: 'editor' }] } })
    expect(editor.status).toBe(400)
    expect(editor.json).toMatchObject({ error: true, code: 'VALIDATION_ERROR' })

    // Bob's reads: all answered.
    const reads = await probeReads(server, bob.accessToken, c)
    expect(reads.map((r) => [r.probe, r.status])).toEqual(reads.map((r) => [r.probe, 200]))
    const listed = await server.call('GET', '/conversations', { token: bob.accessToken })
    expect(listed.json).toMatchObject({ total: 1, conversations: [{ id: c.id, access: 'viewer', owner: { id: alice.user.id, email: aliceEmail } }] })
    const found = await server.call('GET', '/conversations?q=marmalade', { token: bob.accessToken })
    expect(found.json).toMatchObject({ total: 1, conversations: [{ id: c.id, access: 'viewer', owner: { email: aliceEmail } }] })
    expect(found.json.conversations[0].match).toContain('marmalade')
    expect((await server.call('GET', `/conversations/${c.id}/export`, { token: bob.accessToken })).text).toContain('# Zanzibar budget')
    // His rating is his own: Alice's note is not shown to him, and hers is kept.
    expect((await server.call('GET', `/conversations/${c.id}/feedback`, { token: bob.accessToken })).json).toEqual({ ratings: { [c.replyId]: { rating: 'down', note: null } } })
    expect((await server.call('GET', `/conversations/${c.id}/feedback`, { token: alice.accessToken })).json.ratings[c.replyId]).toEqual({ rating: 'up', note: 'tangerine-note' })

    // Bob's writes: 403 each, nothing changed.
    const writes = await probeWrites(server, bob.accessToken, c)
    expect(writes.map((r) => [r.probe, r.status])).toEqual(writes.map((r) => [r.probe, 403]))
    const after = await server.call('GET', `/conversations/${c.id}`, { token: alice.accessToken })
    expect(after.json.messages.map((m: { id: string }) => m.id)).toEqual([c.messageId, c.replyId])
    expect(after.json.title).toBe('Zanzibar budget')
    expect((await server.call('GET', `/conversations/${c.id}/files`, { token: alice.accessToken })).json.files.map((f: { id: string }) => f.id)).toEqual(['quokka-ledger.md'])

    // Revoked: Bob's very next request is a 404, and the list no longer holds it.
    expect((await server.call('PUT', `/conversations/${c.id}/access`, { token: alice.accessToken, body: { shares: [] } })).json.shares).toEqual([])
    expect((await server.call('GET', `/conversations/${c.id}`, { token: bob.accessToken })).status).toBe(404)
    expect((await server.call('GET', '/conversations', { token: bob.accessToken })).json.total).toBe(0)

    // Shared through a group and with everyone work the same way.
    const group = await server.call('POST', '/groups', { token: admin.accessToken, body: { name: `g-${randomUUID().slice(0, 6)}` } })
    await server.call('POST', `/groups/${group.json.id}/members`, { token: admin.accessToken, body: { userId: bob.user.id } })
    await server.call('PUT', `/conversations/${c.id}/access`, { token: alice.accessToken, body: { shares: [{ type: 'group', groupId: group.json.id, role: 'viewer' }] } })
    expect((await server.call('GET', `/conversations/${c.id}`, { token: bob.accessToken })).status).toBe(200)
    await server.call('DELETE', `/groups/${group.json.id}/members/${bob.user.id}`, { token: admin.accessToken })
    expect((await server.call('GET', `/conversations/${c.id}`, { token: bob.accessToken })).status).toBe(404)
    await server.call('PUT', `/conversations/${c.id}/access`, { token: alice.accessToken, body: { shares: [{ type: 'everyone', role: 'viewer' }] } })
    expect((await server.call('GET', `/conversations/${c.id}`, { token: bob.accessToken })).status).toBe(200)

    // The admin sees the changes in the audit log.
    await server.services.audit.flush()
    const events = await server.call('GET', '/admin/audit?action=conversation.access_changed', { token: admin.accessToken })
    expect(events.json.events.length).toBeGreaterThanOrEqual(4)
    expect(events.json.events[0]).toMatchObject({ action: 'conversation.access_changed', target: c.id, actor: { email: aliceEmail }, details: { conversation: 'Zanzibar budget', after: ['everyone=viewer'] } })

    // Deleting the conversation deletes its access list with it.
    expect((await server.call('DELETE', `/conversations/${c.id}`, { token: alice.accessToken })).status).toBe(200)
    expect((await server.call('GET', `/conversations/${c.id}`, { token: bob.accessToken })).status).toBe(404)
  })

  test('over the WebSocket too: a viewer streaming into the shared conversation gets FORBIDDEN, an outsider NOT_FOUND; nothing is stored', async () => {
    const server = make({ dataDir })
    const bobEmail = email()
    const alice = await server.userSession(email())
    const bob = await server.userSession(bobEmail)
    const carol = await server.userSession(email())
    const c = await aliceConversation(server, alice.accessToken, bobEmail)
    const app = server.app.listen({ port: 0 })
    try {
      for (const [who, code] of [[bob, 'FORBIDDEN'], [carol, 'NOT_FOUND']] as const) {
        const client = await openSocket(`ws://127.0.0.1:${app.server!.port}/ws`)
        client.socket.send(JSON.stringify({ type: 'auth', token: who.accessToken, id: 1 }))
        expect((await client.next('auth_success')).type).toBe('auth_success')
        client.socket.send(JSON.stringify({ type: 'stream_chat', message: 'let me in', conversationId: c.id, id: 2 }))
        const answer = await client.next('chat_response')
        expect(answer).toMatchObject({ type: 'error', code, id: 2 })
        client.socket.close()
      }
      expect((await server.call('GET', `/conversations/${c.id}`, { token: alice.accessToken })).json.messages).toHaveLength(2)
    } finally {
      app.stop(true)
    }
  })
})
