import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { shutdown } from '../../../src/shutdown'
import { makeServer } from '../../helpers'
import { freshPostgres, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../../postgres'
import { REDIS_SERVER, REDIS_SKIPPED, startRedis, stopRedisServers } from '../../redis'
import { twoServers } from '../../two-servers'
import { echoModel } from './echo'
import { ANSWERS, hrTeam, leaks, probeAssistant, QUESTION } from './probes'

setDefaultTimeout(240_000)

const model = echoModel()
const stops: (() => Promise<void> | void)[] = []
afterAll(async () => {
  for (const stop of stops.splice(0)) await stop()
  await stopRedisServers()
  model.stop()
})

const answered = (seen: Awaited<ReturnType<typeof probeAssistant>>) =>
  seen.filter((s) => s.status !== 200 || (ANSWERS.has(s.surface) && !(s.instructions && s.passages))).map((s) => `${s.surface} ${s.status} ${s.text.slice(0, 200)}`)

describe.skipIf(!TEST_DATABASE_URL)(`assistants on PostgreSQL${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('every surface answers as the assistant for a group member, by name, id and owner/name; 0 leaks to an outsider; one shared without its collection gives none of it', async () => {
    const postgres = await freshPostgres()
    const server = makeServer({ postgres, llmUrl: model.url, llmModel: 'echo-model' })
    stops.push(() => shutdown(server.app, server.services, 1000))
    const { bob, carol, assistant, alice } = await hrTeam(server)
    for (const ref of ['HR helper', assistant.id, 'alice@example.com/HR helper']) {
      expect(answered(await probeAssistant(server, bob.accessToken, ref))).toEqual([])
      expect(leaks(await probeAssistant(server, carol.accessToken, ref)).map((s) => `${s.surface} ${s.status}`)).toEqual([])
    }
    const models = await server.call('GET', '/v1/models', { token: bob.accessToken })
    expect(models.json.data.map((m: { id: string }) => m.id)).toContain('assistant:alice@example.com/HR helper')
    expect((await server.call('GET', '/v1/models', { token: carol.accessToken })).text).not.toContain('HR helper')
    // Shared with Carol alone, its collection not: her replies hold none of it.
    await server.call('PUT', '/assistants/HR%20helper/access', { token: alice.accessToken, body: { shares: [{ type: 'user', email: 'carol@example.com', role: 'viewer' }] } })
    const seen = await probeAssistant(server, carol.accessToken, 'HR helper')
    expect(seen.filter((s) => s.status !== 200 || s.passages).map((s) => s.surface)).toEqual([])
    const chat = await server.call('POST', '/chat', { token: carol.accessToken, body: { message: QUESTION, assistant: 'HR helper' } })
    expect(chat.json.metadata.collectionsSkipped).toBe(1)
    // Bob lost it with the share list replaced.
    expect((await server.call('POST', '/chat', { token: bob.accessToken, body: { message: QUESTION, assistant: 'HR helper' } })).status).toBe(404)
    // Two of one name reach Carol: 409 naming both; Dave's own name is his.
    const dave = await server.userSession('dave@example.com')
    await server.call('POST', '/assistants', { token: dave.accessToken, body: { name: 'HR helper', instructions: 'Dave’s own.' } })
    await server.call('PUT', '/assistants/HR%20helper/access', { token: dave.accessToken, body: { shares: [{ type: 'everyone', role: 'viewer' }] } })
    const ambiguous = await server.call('POST', '/chat', { token: carol.accessToken, body: { message: QUESTION, assistant: 'HR helper' } })
    expect(ambiguous.status).toBe(409)
    expect(ambiguous.json.code).toBe('AMBIGUOUS_ASSISTANT')
    expect(ambiguous.json.message).toContain('alice@example.com/HR helper')
    expect(ambiguous.json.message).toContain('dave@example.com/HR helper')
    expect((await server.call('GET', '/assistants/HR%20helper', { token: dave.accessToken })).json.owner.email).toBe('dave@example.com')
  })
})

const replicasSkipped = !TEST_DATABASE_URL ? POSTGRES_SKIPPED : !REDIS_SERVER ? REDIS_SKIPPED : null
describe.skipIf(replicasSkipped !== null)(`assistants across two replicas${replicasSkipped ? ` (${replicasSkipped})` : ''}`, () => {
  test('made and shared on one replica, used on the other; a share or a member removed on one stops the next request on the other', async () => {
    const redis = await startRedis()
    stops.push(() => redis.stop())
    const { a, b, close } = await twoServers({ redisUrl: redis.url, llmUrl: model.url, llmModel: 'echo-model' })
    stops.unshift(close)
    for (const server of [a, b]) await server.services.redis!.start()
    const made = await hrTeam(a)
    expect(answered(await probeAssistant(b, made.bob.accessToken, 'HR helper'))).toEqual([])
    expect(leaks(await probeAssistant(b, made.carol.accessToken, 'HR helper')).map((s) => `${s.surface} ${s.status}`)).toEqual([])
    const use = () => b.call('POST', '/chat', { token: made.bob.accessToken, body: { message: QUESTION, assistant: 'HR helper' } })
    expect((await use()).status).toBe(200)
    expect((await a.call('DELETE', `/groups/${made.group.id}/members/${made.bob.user.id}`, { token: made.admin })).status).toBe(200)
    expect((await use()).status).toBe(404)
    await a.call('POST', `/groups/${made.group.id}/members`, { token: made.admin, body: { userId: made.bob.user.id } })
    expect((await use()).status).toBe(200)
    await a.call('PUT', '/assistants/HR%20helper/access', { token: made.alice.accessToken, body: { shares: [] } })
    const after = await use()
    expect(after.status).toBe(404)
    expect(after.text).not.toContain('marigold')
    // Shared again on B, without its collection: A answers with the instructions and skips the collection.
    await b.call('PUT', '/assistants/HR%20helper/access', { token: made.alice.accessToken, body: { shares: [{ type: 'user', email: 'carol@example.com', role: 'viewer' }] } })
    const carols = await a.call('POST', '/chat', { token: made.carol.accessToken, body: { message: QUESTION, assistant: 'alice@example.com/HR helper' } })
    expect(carols.status).toBe(200)
    expect(carols.json.response).toContain('marigold')
    expect(carols.json.response).not.toContain('periwinkle')
    expect(carols.json.metadata.collectionsSkipped).toBe(1)
  })
})
