import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { shutdown } from '../../../src/shutdown'
import { makeServer } from '../../helpers'
import { freshPostgres, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../../postgres'
import { REDIS_SERVER, REDIS_SKIPPED, startRedis, stopRedisServers } from '../../redis'
import { twoServers } from '../../two-servers'
import { leaks, misses, probeAll, QUESTION, shareHandbook, type ProbeResult } from './probes'
import { aliceConversation, probeReads as probeConversationReads, probeWrites as probeConversationWrites } from '../conversations/probes'
import type { TestServer } from '../conversations/servers'
import { echoModel } from '../assistants/echo'
import { hrTeam, leaks as assistantLeaks, probeAssistant, type Seen } from '../assistants/probes'

setDefaultTimeout(240_000)

const stops: (() => Promise<void> | void)[] = []
afterAll(async () => {
  for (const stop of stops.splice(0)) await stop()
  await stopRedisServers()
})

/** Bob (staff, viewer) through every surface by each reference, Carol (no group) too: the leaks and the misses. */
async function probeTeam(server: Parameters<typeof probeAll>[0], made: Awaited<ReturnType<typeof shareHandbook>>) {
  const found: { bob: ProbeResult[]; carol: ProbeResult[] } = { bob: [], carol: [] }
  for (const ref of ['handbook', made.id, 'alice@example.com/handbook']) {
    found.bob.push(...(await probeAll(server, made.bob.accessToken, ref, made.target)))
    found.carol.push(...(await probeAll(server, made.carol.accessToken, ref, made.target)))
  }
  return found
}

describe.skipIf(!TEST_DATABASE_URL)(`shares on PostgreSQL${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('0 leaks in 51 probes by an outsider; every probe answered for the group member; removing the member stops the next request', async () => {
    const postgres = await freshPostgres()
    const server = makeServer({ postgres })
    stops.push(() => shutdown(server.app, server.services, 1000))
    const made = await shareHandbook(server)
    const { bob, carol } = await probeTeam(server, made)
    expect(carol).toHaveLength(51)
    expect(leaks(carol)).toEqual([])
    expect(misses(bob)).toEqual([])
    expect((await server.call('DELETE', `/groups/${made.group.id}/members/${made.bob.user.id}`, { token: made.admin })).status).toBe(200)
    const after = await server.call('POST', '/rag/search', { token: made.bob.accessToken, body: { collection: 'handbook', query: QUESTION } })
    expect(after.status).toBe(404)
    expect(leaks(await probeAll(server, made.bob.accessToken, made.id, made.target))).toEqual([])
  })
})

const replicasSkipped = !TEST_DATABASE_URL ? POSTGRES_SKIPPED : !REDIS_SERVER ? REDIS_SKIPPED : null
describe.skipIf(replicasSkipped !== null)(`shares across two replicas${replicasSkipped ? ` (${replicasSkipped})` : ''}`, () => {
  test('shared on one replica, read on the other; 0 leaks there; a member, a share and a group removed on one stop the next request on the other', async () => {
    const redis = await startRedis()
    // Stopped by this file, whatever happens: the servers first, then their Redis.
    stops.push(() => redis.stop())
    const { a, b, close } = await twoServers({ redisUrl: redis.url })
    stops.unshift(close)
    for (const server of [a, b]) await server.services.redis!.start()
    const made = await shareHandbook(a)
    const { bob, carol } = await probeTeam(b, made)
    expect(carol).toHaveLength(51)
    expect(leaks(carol)).toEqual([])
    expect(misses(bob)).toEqual([])
    const search = () => b.call('POST', '/rag/search', { token: made.bob.accessToken, body: { collection: 'handbook', query: QUESTION } })
    // Each removal on A: B's very next request is refused (well within the contract's 1 s).
    expect((await a.call('DELETE', `/groups/${made.group.id}/members/${made.bob.user.id}`, { token: made.admin })).status).toBe(200)
    expect((await search()).status).toBe(404)
    await a.call('POST', `/groups/${made.group.id}/members`, { token: made.admin, body: { userId: made.bob.user.id } })
    expect((await search()).status).toBe(200)
    await a.call('PUT', '/rag/collections/handbook/access', { token: made.alice.accessToken, body: { shares: [] } })
    expect((await search()).status).toBe(404)
    await a.call('PUT', '/rag/collections/handbook/access', { token: made.alice.accessToken, body: { shares: [{ type: 'group', groupId: made.group.id, role: 'viewer' }] } })
    expect((await search()).status).toBe(200)
    expect((await a.call('DELETE', `/groups/${made.group.id}`, { token: made.admin })).status).toBe(200)
    expect((await search()).status).toBe(404)
    expect(leaks(await probeAll(b, made.bob.accessToken, made.id, made.target))).toEqual([])
  })
})

describe.skipIf(replicasSkipped !== null)(`shared conversations across two replicas${replicasSkipped ? ` (${replicasSkipped})` : ''}`, () => {
  test('shared on one replica, read on the other; an edit on one is never served stale by the other; revoked on one, refused at the next request on the other; 0 leaks to an outsider there', async () => {
    const redis = await startRedis()
    stops.push(() => redis.stop())
    const { a, b, close } = await twoServers({ redisUrl: redis.url })
    stops.unshift(close)
    for (const server of [a, b]) await server.services.redis!.start()
    const alice = await a.userSession('alice@example.com')
    const bob = await a.userSession('bob@example.com')
    const carol = await a.userSession('carol@example.com')
    const c = await aliceConversation(a as unknown as TestServer, alice.accessToken, 'bob@example.com')
    const onB = () => b.call('GET', `/conversations/${c.id}`, { token: bob.accessToken })
    expect((await onB()).json).toMatchObject({ access: 'viewer', messages: [{ id: c.messageId }, { id: c.replyId }] })
    // Edited on A (B has the conversation cached): B serves the new messages at once.
    const edited = await a.call('PATCH', `/conversations/${c.id}/messages/${c.messageId}`, { token: alice.accessToken, body: { content: 'What is the Zanzibar ferry schedule?' } })
    expect(edited.status).toBe(200)
    const read = (await onB()).json
    expect(read.messages.map((m: { content: string }) => m.content)[0]).toBe('What is the Zanzibar ferry schedule?')
    expect(read.messages.map((m: { id: string }) => m.id)).toEqual([c.messageId, edited.json.metadata.replyId])
    // An outsider on B: nothing.
    const outsider = [...(await probeConversationReads(b as unknown as TestServer, carol.accessToken, c)), ...(await probeConversationWrites(b as unknown as TestServer, carol.accessToken, { ...c, replyId: edited.json.metadata.replyId }))]
    expect(outsider.filter((r) => r.leaked)).toEqual([])
    // Revoked on A: B's very next request is refused.
    expect((await a.call('PUT', `/conversations/${c.id}/access`, { token: alice.accessToken, body: { shares: [] } })).status).toBe(200)
    expect((await onB()).status).toBe(404)
  })
})

// Assistants (issue 55): another user's assistant, its instructions and its collections' text
// reach nobody without access, through any surface; a shared assistant whose collection is not
// shared gives its instructions and none of the collection.
describe('assistants: isolation', () => {
  test("0 leaks of another user's assistant, instructions or collection text through any surface and listing", async () => {
    const model = echoModel()
    stops.push(() => model.stop())
    const server = makeServer({ llmUrl: model.url, llmModel: 'echo-model' })
    const made = await hrTeam(server, false)
    const app = server.app.listen({ port: 0 })
    stops.push(() => {
      app.stop()
    })
    const port = app.server!.port!
    // Carol (no group, no share): every surface, every form of reference.
    const probed: Seen[] = []
    for (const ref of ['HR helper', made.assistant.id, 'alice@example.com/HR helper', 'builtin:../HR helper']) probed.push(...(await probeAssistant(server, made.carol.accessToken, ref, port)))
    expect(probed).toHaveLength(36)
    expect(assistantLeaks(probed).map((s) => `${s.surface} ${s.status}`)).toEqual([])
    // Listings name nothing of it.
    for (const path of ['/assistants', '/v1/models', '/rag/collections', '/conversations']) {
      const listed = await server.call('GET', path, { token: made.carol.accessToken })
      expect(listed.status).toBe(200)
      for (const word of ['HR helper', made.assistant.id, 'marigold', 'periwinkle', 'handbook']) expect(listed.text).not.toContain(word)
    }
    // Her own assistant cannot take Alice's collection in, by any reference.
    const listed = await server.call('GET', '/rag/collections', { token: made.alice.accessToken })
    for (const ref of ['handbook', listed.json.collections[0].id, 'alice@example.com/handbook']) {
      const res = await server.call('POST', '/assistants', { token: made.carol.accessToken, body: { name: 'mine', collections: [ref] } })
      expect(res.status).toBe(404)
      expect(res.text).not.toContain('periwinkle')
    }
    // Bob (staff) may use it, but its collection is not shared with him: instructions yes, passages never.
    const bobs = await probeAssistant(server, made.bob.accessToken, 'HR helper', port)
    expect(bobs.filter((s) => s.status !== 200 || s.passages).map((s) => `${s.surface} ${s.status}`)).toEqual([])
    expect(bobs.filter((s) => s.surface === 'chat' && s.instructions)).toHaveLength(1)
    // As an editor he cannot see, drop or read the collection he was not given.
    await server.call('PUT', '/assistants/HR%20helper/access', { token: made.alice.accessToken, body: { shares: [{ type: 'user', email: 'bob@example.com', role: 'editor' }] } })
    const edited = await server.call('PATCH', '/assistants/alice%40example.com%2FHR%20helper', { token: made.bob.accessToken, body: { collections: [] } })
    expect(edited.json).toMatchObject({ collections: [], collectionsHidden: 1 })
    expect(edited.text).not.toContain('handbook')
    const alices = await server.call('GET', '/assistants/HR%20helper', { token: made.alice.accessToken })
    expect(alices.json.collections.map((c: { name: string }) => c.name)).toEqual(['handbook'])
  })
})
