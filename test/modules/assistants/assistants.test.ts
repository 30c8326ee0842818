import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { makeServer } from '../../helpers'
import { hrTeam, INSTRUCTIONS } from './probes'

setDefaultTimeout(120_000)

describe('assistants: making, naming, sharing', () => {
  test('create, read, list, change, delete; validation; 409 on a taken name; built-in agents listed read-only', async () => {
    const server = makeServer()
    const alice = await server.userSession('alice@example.com')
    const token = alice.accessToken
    await server.call('POST', '/rag/ingest', { token, body: { collection: 'handbook', documents: [{ id: 'a', content: 'Leave is 28 days.' }] } })
    const made = await server.call('POST', '/assistants', { token, body: { name: 'HR helper', instructions: INSTRUCTIONS, collections: ['handbook'], tools: ['calculator__evaluate'], starters: ['Hi'] } })
    expect(made.status).toBe(201)
    expect(made.json).toMatchObject({
      name: 'HR helper',
      instructions: INSTRUCTIONS,
      collections: [{ id: expect.any(String), name: 'handbook', owner: { id: alice.user.id, email: 'alice@example.com' } }],
      collectionsHidden: 0,
      tools: ['calculator__evaluate'],
      model: null,
      temperature: null,
      starters: ['Hi'],
      owner: { id: alice.user.id, email: 'alice@example.com' },
      access: 'owner',
      builtin: false,
    })
    expect((await server.call('POST', '/assistants', { token, body: { name: 'HR helper' } })).status).toBe(409)
    for (const [body, field] of [
      [{ name: '' }, 'name'],
      [{ name: 'a/b' }, 'name'],
      [{ name: 'x', instructions: 'y'.repeat(20_001) }, 'instructions'],
      [{ name: 'x', tools: ['nope__nothing'] }, 'tools'],
      [{ name: 'x', model: 'gpt-17' }, 'model'],
      [{ name: 'x', temperature: 3 }, 'temperature'],
    ] as const) {
      const res = await server.call('POST', '/assistants', { token, body })
      expect(res.status).toBe(400)
      expect(res.json.code).toBe('VALIDATION_ERROR')
      expect(res.json.message).toContain(field)
    }
    // A collection the caller cannot read: 404, nothing made.
    const missing = await server.call('POST', '/assistants', { token, body: { name: 'x', collections: ['nobody@example.com/secret'] } })
    expect(missing.status).toBe(404)
    const listed = await server.call('GET', '/assistants', { token })
    const names = listed.json.assistants.map((a: { name: string }) => a.name)
    expect(names[0]).toBe('HR helper')
    const agents = (await server.call('GET', '/agents', { token })).json.agents.map((a: { name: string }) => a.name)
    expect(listed.json.assistants.filter((a: { builtin: boolean }) => a.builtin).map((a: { name: string }) => a.name)).toEqual(agents)
    expect((await server.call('PATCH', '/assistants/builtin%3Aresearcher', { token, body: { description: 'x' } })).status).toBe(403)
    expect((await server.call('GET', '/assistants/researcher', { token })).json).toMatchObject({ id: 'builtin:researcher', builtin: true, access: 'viewer' })
    const changed = await server.call('PATCH', '/assistants/HR%20helper', { token, body: { name: 'People helper', temperature: 0.5 } })
    expect(changed.status).toBe(200)
    expect(changed.json).toMatchObject({ name: 'People helper', temperature: 0.5, instructions: INSTRUCTIONS })
    expect((await server.call('GET', `/assistants/${made.json.id}`, { token })).json.name).toBe('People helper')
    expect((await server.call('DELETE', '/assistants/People%20helper', { token })).json).toEqual({ success: true, id: made.json.id })
    expect((await server.call('GET', `/assistants/${made.json.id}`, { token })).status).toBe(404)
  })

  test('roles: a viewer uses it, an editor changes it, a manager shares and deletes it; references and AMBIGUOUS_ASSISTANT; the audit log', async () => {
    const server = makeServer()
    const { admin, alice, bob, carol, assistant } = await hrTeam(server)
    // Viewer: reads and uses; cannot change, share or delete.
    expect((await server.call('GET', '/assistants/HR%20helper', { token: bob.accessToken })).json.access).toBe('viewer')
    expect((await server.call('PATCH', '/assistants/HR%20helper', { token: bob.accessToken, body: { description: 'mine now' } })).status).toBe(403)
    expect((await server.call('GET', '/assistants/HR%20helper/access', { token: bob.accessToken })).status).toBe(403)
    expect((await server.call('DELETE', '/assistants/HR%20helper', { token: bob.accessToken })).status).toBe(403)
    // Outsider: 404 on everything, the listing without it.
    for (const [method, path] of [['GET', '/assistants/HR%20helper'], ['PATCH', '/assistants/HR%20helper'], ['DELETE', `/assistants/${assistant.id}`], ['GET', '/assistants/alice%40example.com%2FHR%20helper/access']] as const) {
      const res = await server.call(method, path, { token: carol.accessToken, body: method === 'PATCH' ? { description: 'x' } : undefined })
      expect(res.status).toBe(404)
      expect(res.text).not.toContain('marigold')
    }
    expect((await server.call('GET', '/assistants', { token: carol.accessToken })).json.assistants.filter((a: { builtin: boolean }) => !a.builtin)).toEqual([])
    // Editor changes it; manager changes access and deletes.
    await server.call('PUT', '/assistants/HR%20helper/access', { token: alice.accessToken, body: { shares: [{ type: 'user', email: 'bob@example.com', role: 'editor' }] } })
    expect((await server.call('PATCH', '/assistants/alice%40example.com%2FHR%20helper', { token: bob.accessToken, body: { description: 'by bob' } })).json.description).toBe('by bob')
    expect((await server.call('PUT', '/assistants/HR%20helper/access', { token: bob.accessToken, body: { shares: [] } })).status).toBe(403)
    // An editor cannot give it a collection its owner cannot read (Bob's own): 404, nothing changed.
    await server.call('POST', '/rag/ingest', { token: bob.accessToken, body: { collection: 'bobs', documents: [{ id: 'b', content: 'Bob keeps a private note.' }] } })
    const added = await server.call('PATCH', '/assistants/alice%40example.com%2FHR%20helper', { token: bob.accessToken, body: { collections: ['handbook', 'bobs'] } })
    expect(added.status).toBe(404)
    expect((await server.call('GET', '/assistants/HR%20helper', { token: alice.accessToken })).json.collections.map((c: { name: string }) => c.name)).toEqual(['handbook'])
    // Two shared of one name: 409 naming both; own name first.
    const dave = await server.userSession('dave@example.com')
    await server.call('POST', '/assistants', { token: dave.accessToken, body: { name: 'HR helper', instructions: 'Dave’s.' } })
    await server.call('PUT', '/assistants/HR%20helper/access', { token: dave.accessToken, body: { shares: [{ type: 'everyone', role: 'viewer' }] } })
    const ambiguous = await server.call('GET', '/assistants/HR%20helper', { token: bob.accessToken })
    expect(ambiguous.status).toBe(409)
    expect(ambiguous.json.code).toBe('AMBIGUOUS_ASSISTANT')
    expect(ambiguous.json.message).toContain('alice@example.com/HR helper')
    expect(ambiguous.json.message).toContain('dave@example.com/HR helper')
    expect((await server.call('POST', '/chat', { token: bob.accessToken, body: { message: 'hi', assistant: 'HR helper' } })).json.code).toBe('AMBIGUOUS_ASSISTANT')
    expect((await server.call('GET', '/assistants/HR%20helper', { token: carol.accessToken })).json.owner.email).toBe('dave@example.com')
    expect((await server.call('GET', '/assistants/HR%20helper', { token: alice.accessToken })).json.owner.email).toBe('alice@example.com')
    await server.call('PUT', '/assistants/HR%20helper/access', { token: alice.accessToken, body: { shares: [{ type: 'user', email: 'bob@example.com', role: 'manager' }] } })
    expect((await server.call('DELETE', `/assistants/${assistant.id}`, { token: bob.accessToken })).status).toBe(200)
    await server.services.audit.flush()
    const events = await server.call('GET', '/admin/audit?target=' + assistant.id, { token: admin })
    const actions = events.json.events.map((e: { action: string }) => e.action)
    for (const action of ['assistant.created', 'assistant.access_changed', 'assistant.updated', 'assistant.deleted']) expect(actions).toContain(action)
  })

  test('shareCollections gives the same people viewer on the collections the caller manages; revocation counts at the next request', async () => {
    const server = makeServer()
    const { admin, alice, bob, group } = await hrTeam(server, true)
    const access = await server.call('GET', '/rag/collections/handbook/access', { token: alice.accessToken })
    expect(access.json.shares).toEqual([{ type: 'group', id: group.id, name: 'staff', role: 'viewer' }])
    const use = () => server.call('POST', '/chat', { token: bob.accessToken, body: { message: 'What is the vault code word?', assistant: 'HR helper' } })
    expect((await use()).status).toBe(200)
    expect((await server.call('DELETE', `/groups/${group.id}/members/${bob.user.id}`, { token: admin })).status).toBe(200)
    const after = await use()
    expect(after.status).toBe(404)
    expect(after.text).not.toContain('marigold')
    await server.call('POST', `/groups/${group.id}/members`, { token: admin, body: { userId: bob.user.id } })
    expect((await use()).status).toBe(200)
    await server.call('PUT', '/assistants/HR%20helper/access', { token: alice.accessToken, body: { shares: [] } })
    expect((await use()).status).toBe(404)
    // A conversation with it stops too.
    await server.call('PUT', '/assistants/HR%20helper/access', { token: alice.accessToken, body: { shares: [{ type: 'user', userId: bob.user.id, role: 'viewer' }] } })
    const started = await use()
    await server.call('PUT', '/assistants/HR%20helper/access', { token: alice.accessToken, body: { shares: [] } })
    const more = await server.call('POST', '/chat', { token: bob.accessToken, body: { message: 'and then?', conversationId: started.json.metadata.conversationId } })
    expect(more.status).toBe(404)
  })
})
