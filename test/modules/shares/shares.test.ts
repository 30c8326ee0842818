import { afterAll, describe, expect, test, setDefaultTimeout } from 'bun:test'
import { makeServer } from '../../helpers'
import { leaks, misses, probeAll, QUESTION, SECRET, shareHandbook, socketChat } from './probes'

// argon2 logins, grounded chat and a researcher's run per probe: seconds on a busy machine.
setDefaultTimeout(120_000)

const listening: { stop(): void }[] = []
afterAll(() => listening.forEach((app) => app.stop()))

async function team() {
  const server = makeServer()
  const made = await shareHandbook(server)
  const app = server.app.listen({ port: 0 })
  listening.push(app)
  return { server, ...made, port: app.server!.port! }
}

describe('collections shared with a group', () => {
  test('a viewer finds, answers from and grounds on the handbook through every surface, by name, id and owner/name; a user in no group gets 404 everywhere', async () => {
    const { server, bob, carol, id, port, target } = await team()
    for (const ref of ['handbook', id, 'alice@example.com/handbook']) {
      const seen = await probeAll(server, bob.accessToken, ref, target, ref === 'handbook' ? port : undefined)
      expect(seen).toHaveLength(ref === 'handbook' ? 18 : 17)
      expect(misses(seen)).toEqual([])
      const probed = await probeAll(server, carol.accessToken, ref, target, ref === 'handbook' ? port : undefined)
      expect(leaks(probed)).toEqual([])
    }
    const listed = await server.call('GET', '/rag/collections', { token: bob.accessToken })
    expect(listed.json.collections).toEqual([
      {
        id,
        name: 'handbook',
        owner: { id: expect.any(String), email: 'alice@example.com' },
        access: 'viewer',
        documents: 2,
        chunks: 2,
        embedder: 'builtin/hash-embed-384',
        dimensions: 384,
        createdAt: expect.any(String),
      },
    ])
    expect((await server.call('GET', '/rag/collections', { token: carol.accessToken })).json.collections).toEqual([])
    const models = await server.call('GET', '/v1/models', { token: bob.accessToken })
    expect(models.json.data.map((m: { id: string }) => m.id)).toContain('rag:alice@example.com/handbook')
  })

  test('viewers cannot write: ingest, upload, delete a document or the collection, and the access list are 403; nothing changes', async () => {
    const { server, alice, bob } = await team()
    const token = bob.accessToken
    const ingest = await server.call('POST', '/rag/ingest', { token, body: { collection: 'handbook', documents: [{ id: 'x', content: 'written by a viewer' }] } })
    expect(ingest.status).toBe(403)
    expect(ingest.json.code).toBe('FORBIDDEN')
    const form = new FormData()
    form.append('file', new File(['uploaded by a viewer'], 'note.txt', { type: 'text/plain' }))
    const upload = await server.app.handle(new Request('http://localhost/rag/collections/handbook/files', { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form }))
    expect(upload.status).toBe(403)
    expect((await server.call('DELETE', '/rag/collections/handbook/documents/vault', { token })).status).toBe(403)
    expect((await server.call('DELETE', '/rag/collections/handbook', { token })).status).toBe(403)
    expect((await server.call('GET', '/rag/collections/handbook/access', { token })).status).toBe(403)
    const put = await server.call('PUT', '/rag/collections/handbook/access', { token, body: { shares: [] } })
    expect(put.status).toBe(403)
    const own = await server.call('GET', '/rag/collections', { token: alice.accessToken })
    expect(own.json.collections[0].documents).toBe(2)
    expect((await server.call('GET', '/rag/collections/handbook/access', { token: alice.accessToken })).json.shares).toEqual([
      { type: 'group', id: expect.any(String), name: 'staff', role: 'viewer' },
    ])
  })

  test('a bare-name write that resolves to a shared collection says which one and how to make your own; once made, the name is yours', async () => {
    const { server, bob, id } = await team()
    const token = bob.accessToken
    const ingest = await server.call('POST', '/rag/ingest', { token, body: { collection: 'handbook', documents: [{ id: 'mine', content: 'my own handbook page' }] } })
    expect(ingest.status).toBe(403)
    expect(ingest.json.message).toContain('alice@example.com/handbook (viewer)')
    expect(ingest.json.message).toContain('it needs editor')
    expect(ingest.json.message).toContain('POST /rag/collections')
    expect(ingest.json.message).toContain('uagent rag create handbook')
    // Named fully (or by id), the write is plainly refused: nothing to make of one's own there.
    for (const ref of ['alice@example.com/handbook', id]) {
      const named = await server.call('POST', '/rag/ingest', { token, body: { collection: ref, documents: [{ id: 'mine', content: 'my own handbook page' }] } })
      expect(named.status).toBe(403)
      expect(named.json.message).toContain('alice@example.com/handbook (viewer)')
      expect(named.json.message).not.toContain('POST /rag/collections')
    }
    expect((await server.call('POST', '/rag/collections', { token, body: { name: 'handbook' } })).status).toBe(200)
    const mine = await server.call('POST', '/rag/ingest', { token, body: { collection: 'handbook', documents: [{ id: 'mine', content: 'my own handbook page' }] } })
    expect(mine.status).toBe(200)
    const listed = (await server.call('GET', '/rag/collections', { token })).json.collections
    expect(listed.map((c: { owner: { email: string }; access: string; documents: number }) => [c.owner.email, c.access, c.documents]).sort()).toEqual([
      ['alice@example.com', 'viewer', 2],
      ['bob@example.com', 'owner', 1],
    ])
  })

  test("an editor's ingest and upload land in the owner's collection; a manager changes access and deletes it", async () => {
    const { server, alice, bob, carol } = await team()
    const raised = await server.call('PUT', '/rag/collections/handbook/access', { token: alice.accessToken, body: { shares: [{ type: 'user', email: 'bob@example.com', role: 'editor' }] } })
    expect(raised.json).toEqual({ owner: { id: alice.user.id, email: 'alice@example.com' }, shares: [{ type: 'user', id: bob.user.id, email: 'bob@example.com', role: 'editor' }] })
    const ingest = await server.call('POST', '/rag/ingest', { token: bob.accessToken, body: { collection: 'handbook', documents: [{ id: 'canteen', content: 'The canteen serves marzipan cake on Fridays.' }] } })
    expect(ingest.status).toBe(200)
    const form = new FormData()
    form.append('file', new File(['The bicycle shed opens at seven with a turquoise key.'], 'shed.txt', { type: 'text/plain' }))
    const upload = await server.app.handle(new Request('http://localhost/rag/collections/alice%40example.com%2Fhandbook/files', { method: 'POST', headers: { authorization: `Bearer ${bob.accessToken}` }, body: form }))
    expect(upload.status).toBe(200)
    // Written into Alice's collection: she finds both; Bob has no collection of his own.
    const found = await server.call('POST', '/rag/search', { token: alice.accessToken, body: { collection: 'handbook', query: 'marzipan cake', limit: 1 } })
    expect(found.json.results[0].id).toBe('canteen')
    const shed = await server.call('POST', '/rag/search', { token: alice.accessToken, body: { collection: 'handbook', query: 'turquoise key bicycle shed', limit: 1 } })
    expect(shed.json.results[0].content).toContain('turquoise')
    expect((await server.call('GET', '/rag/collections', { token: bob.accessToken })).json.collections.map((c: { access: string }) => c.access)).toEqual(['editor'])
    expect((server.services.db.query('SELECT count(*) AS n FROM rag_collections').get() as { n: number }).n).toBe(1)
    // An editor deletes documents, not the collection nor its access list.
    expect((await server.call('DELETE', '/rag/collections/handbook/documents/canteen', { token: bob.accessToken })).status).toBe(200)
    expect((await server.call('DELETE', '/rag/collections/handbook', { token: bob.accessToken })).status).toBe(403)
    // A manager does both.
    await server.call('PUT', '/rag/collections/handbook/access', { token: alice.accessToken, body: { shares: [{ type: 'user', userId: bob.user.id, role: 'manager' }] } })
    const managed = await server.call('PUT', '/rag/collections/handbook/access', {
      token: bob.accessToken,
      body: { shares: [{ type: 'user', userId: bob.user.id, role: 'manager' }, { type: 'user', email: 'carol@example.com', role: 'viewer' }] },
    })
    expect(managed.status).toBe(200)
    expect((await server.call('POST', '/rag/search', { token: carol.accessToken, body: { collection: 'handbook', query: QUESTION } })).status).toBe(200)
    expect((await server.call('DELETE', '/rag/collections/handbook', { token: bob.accessToken })).status).toBe(200)
    expect((await server.call('GET', '/rag/collections', { token: alice.accessToken })).json.collections).toEqual([])
  })

  test('removing the member, the share or the group stops the very next request', async () => {
    const { server, admin, bob, alice, group } = await team()
    const search = () => server.call('POST', '/rag/search', { token: bob.accessToken, body: { collection: 'handbook', query: QUESTION } })
    expect((await search()).status).toBe(200)
    expect((await server.call('DELETE', `/groups/${group.id}/members/${bob.user.id}`, { token: admin })).status).toBe(200)
    const after = await search()
    expect(after.status).toBe(404)
    expect(after.text).not.toContain(SECRET)
    // Back in; then the share goes.
    await server.call('POST', `/groups/${group.id}/members`, { token: admin, body: { userId: bob.user.id } })
    expect((await search()).status).toBe(200)
    await server.call('PUT', '/rag/collections/handbook/access', { token: alice.accessToken, body: { shares: [] } })
    expect((await search()).status).toBe(404)
    // Shared again; then the group goes.
    await server.call('PUT', '/rag/collections/handbook/access', { token: alice.accessToken, body: { shares: [{ type: 'group', groupId: group.id, role: 'viewer' }] } })
    expect((await search()).status).toBe(200)
    expect((await server.call('DELETE', `/groups/${group.id}`, { token: admin })).status).toBe(200)
    expect((await search()).status).toBe(404)
    // The entry of a deleted group is no longer listed.
    expect((await server.call('GET', '/rag/collections/handbook/access', { token: alice.accessToken })).json.shares).toEqual([])
  })

  test('references: your own name first, then id, then owner/name, then the one shared name; two shared of a name are 409 naming both', async () => {
    const { server, bob, carol, id } = await team()
    const dave = await server.userSession('dave@example.com')
    await server.call('POST', '/rag/ingest', { token: dave.accessToken, body: { collection: 'handbook', documents: [{ id: 'dave', content: 'Dave keeps the spare lantern in the attic.' }] } })
    await server.call('PUT', '/rag/collections/handbook/access', { token: dave.accessToken, body: { shares: [{ type: 'everyone', role: 'viewer' }] } })
    const ambiguous = await server.call('POST', '/rag/search', { token: bob.accessToken, body: { collection: 'handbook', query: 'lantern' } })
    expect(ambiguous.status).toBe(409)
    expect(ambiguous.json.code).toBe('AMBIGUOUS_COLLECTION')
    expect(ambiguous.json.message).toContain('alice@example.com/handbook')
    expect(ambiguous.json.message).toContain('dave@example.com/handbook')
    // Carol reaches Dave's only (everyone), so the name is not ambiguous for her.
    const carols = await server.call('POST', '/rag/search', { token: carol.accessToken, body: { collection: 'handbook', query: 'lantern', limit: 1 } })
    expect(carols.json.results[0].id).toBe('dave')
    const byOwner = await server.call('POST', '/rag/search', { token: bob.accessToken, body: { collection: 'dave@example.com/handbook', query: 'lantern', limit: 1 } })
    expect(byOwner.json.results[0].id).toBe('dave')
    const byId = await server.call('POST', '/rag/search', { token: bob.accessToken, body: { collection: id, query: QUESTION, limit: 1 } })
    expect(byId.json.results[0].id).toBe('vault')
    // Bob's own collection of the name comes first. An ingest names a collection by reference (here
    // still ambiguous), so he makes his own explicitly.
    expect((await server.call('POST', '/rag/ingest', { token: bob.accessToken, body: { collection: 'handbook', documents: [{ id: 'bob', content: 'x' }] } })).status).toBe(409)
    expect((await server.call('POST', '/rag/collections', { token: bob.accessToken, body: { name: 'handbook' } })).status).toBe(200)
    await server.call('POST', '/rag/ingest', { token: bob.accessToken, body: { collection: 'handbook', documents: [{ id: 'bob', content: 'Bob waters the office ferns on Mondays.' }] } })
    const own = await server.call('POST', '/rag/search', { token: bob.accessToken, body: { collection: 'handbook', query: 'ferns', limit: 5 } })
    expect(own.json.results.map((r: { id: string }) => r.id)).toEqual(['bob'])
    const listed = (await server.call('GET', '/rag/collections', { token: bob.accessToken })).json.collections
    expect(listed.map((c: any) => [c.owner.email, c.access])).toEqual([
      ['alice@example.com', 'viewer'],
      ['bob@example.com', 'owner'],
      ['dave@example.com', 'viewer'],
    ])
  })

  test('admins manage any collection by id or owner/name; the access list is validated field by field', async () => {
    const { server, admin, id, alice } = await team()
    // An admin's bare name is their own: Alice's handbook is not shared with them by it.
    expect((await server.call('GET', '/rag/collections/handbook/access', { token: admin })).status).toBe(404)
    expect((await server.call('GET', `/rag/collections/${id}/access`, { token: admin })).status).toBe(200)
    const put = await server.call('PUT', '/rag/collections/alice%40example.com%2Fhandbook/access', { token: admin, body: { shares: [{ type: 'everyone', role: 'editor' }] } })
    expect(put.json.shares).toEqual([{ type: 'everyone', role: 'editor' }])
    // Now shared with everyone: the admin reaches it by name too.
    expect((await server.call('GET', '/rag/collections/handbook/access', { token: admin })).status).toBe(200)
    const token = alice.accessToken
    const cases: [unknown, string][] = [
      [[{ type: 'user', email: 'nobody@example.com', role: 'viewer' }], 'body.shares[0].email'],
      [[{ type: 'user', role: 'viewer' }], 'body.shares[0]'],
      [[{ type: 'group', name: 'no-such-group', role: 'viewer' }], 'body.shares[0].name'],
      [[{ type: 'everyone', role: 'viewer' }, { type: 'everyone', role: 'editor' }], 'body.shares[1]'],
      [[{ type: 'user', email: 'alice@example.com', role: 'viewer' }], 'body.shares[0]'],
      [[{ type: 'everyone', role: 'owner' }], 'role'],
      [[{ type: 'robot', role: 'viewer' }], 'type'],
    ]
    for (const [shares, field] of cases) {
      const res = await server.call('PUT', '/rag/collections/handbook/access', { token, body: { shares } })
      expect(res.status).toBe(400)
      expect(res.json.code).toBe('VALIDATION_ERROR')
      expect(res.json.message).toContain(field)
    }
    expect((await server.call('GET', '/rag/collections/handbook/access', { token })).json.shares).toEqual([{ type: 'everyone', role: 'editor' }])
  })

  test('the audit log records collection.created, access_changed, document.deleted and collection.deleted', async () => {
    const { server, admin, alice, id } = await team()
    await server.call('DELETE', '/rag/collections/handbook/documents/parking', { token: alice.accessToken })
    await server.call('DELETE', '/rag/collections/handbook', { token: alice.accessToken })
    await server.services.audit.flush()
    const events = await server.call('GET', `/admin/audit?target=${id}`, { token: admin })
    expect(events.status).toBe(200)
    const actions = events.json.events.map((e: { action: string }) => e.action).reverse()
    expect(actions).toEqual(['collection.created', 'collection.access_changed', 'document.deleted', 'collection.deleted'])
    expect(events.json.events.every((e: any) => e.actor?.email === 'alice@example.com')).toBe(true)
  })

  test('WebSocket grounding by the shared name', async () => {
    const { bob, carol, port } = await team()
    const reply = await socketChat(port, bob.accessToken, 'handbook')
    expect(reply.type).toBe('chat_response')
    expect(reply.data.metadata.sources.map((s: { id: string }) => s.id)).toContain('vault')
    expect(await socketChat(port, carol.accessToken, 'handbook')).toMatchObject({ type: 'error', code: 'NOT_FOUND' })
  })
})
