import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { makeServer } from '../helpers'
import { liveServer } from './live-server'
import { HANDBOOK, QUESTION } from '../modules/shares/probes'

setDefaultTimeout(60_000)

const server = makeServer()
const live = liveServer(server.app, { login: true })

describe('uagent rag share | unshare | access | collections', () => {
  test('the owner shares with a group, a user and everyone, reads the list, and unshares; the member sees it in collections with owner and access', async () => {
    const bob = await server.userSession('bob@example.com')
    expect((await live.request('POST', '/rag/ingest', { collection: 'handbook', documents: HANDBOOK })).status).toBe(200)
    const group = await live.api('POST', '/groups', { name: 'staff' })
    await live.api('POST', `/groups/${group.id}/members`, { email: 'bob@example.com' })

    const shared = await live.run(['rag', 'share', 'handbook', '--group', 'staff', '--role', 'viewer'])
    expect(shared.code).toBe(0)
    expect(shared.stdout).toContain('Shared handbook with group staff as viewer.')
    // Bob, a member, finds it now.
    expect((await live.request('POST', '/rag/search', { collection: 'handbook', query: QUESTION }, bob.accessToken)).status).toBe(200)

    expect((await live.run(['rag', 'share', 'handbook', '--user', 'bob@example.com', '--role', 'editor'])).code).toBe(0)
    // Sharing the group again changes its role, it adds no second entry.
    expect((await live.run(['rag', 'share', 'handbook', '--group', 'staff', '--role', 'manager'])).code).toBe(0)
    expect((await live.run(['rag', 'share', 'handbook', '--everyone', '--role', 'viewer'])).code).toBe(0)
    const listed = await live.run(['--json', 'rag', 'access', 'handbook'])
    expect(JSON.parse(listed.stdout)).toEqual(await live.api('GET', '/rag/collections/handbook/access'))
    expect(JSON.parse(listed.stdout).shares).toEqual([
      { type: 'everyone', role: 'viewer' },
      { type: 'group', id: group.id, name: 'staff', role: 'manager' },
      { type: 'user', id: bob.user.id, email: 'bob@example.com', role: 'editor' },
    ])
    const human = await live.run(['rag', 'access', 'handbook'])
    expect(human.stdout).toContain('Owner: admin@example.com')
    expect(human.stdout).toMatch(/group\s+staff\s+manager/)

    // Bob's CLI: the shared collection, named by its owner, with his access (the highest entry: manager).
    const bobs = await live.run(['--json', 'rag', 'collections'], { UAGENT_TOKEN: bob.accessToken })
    expect(bobs.code).toBe(0)
    expect(JSON.parse(bobs.stdout).collections.map((c: any) => [c.name, c.owner.email, c.access])).toEqual([['handbook', 'admin@example.com', 'manager']])
    const table = await live.run(['rag', 'collections'], { UAGENT_TOKEN: bob.accessToken })
    expect(table.stdout).toMatch(/admin@example\.com\/handbook\s+admin@example\.com\s+manager/)

    expect((await live.run(['rag', 'unshare', 'handbook', '--group', 'staff'])).stdout).toContain('no longer has access')
    expect((await live.run(['rag', 'unshare', 'handbook', '--user', 'bob@example.com'])).code).toBe(0)
    expect((await live.run(['rag', 'unshare', 'handbook', '--everyone'])).code).toBe(0)
    expect((await live.run(['rag', 'unshare', 'handbook', '--everyone'])).stdout).toContain('nothing changed')
    expect((await live.api('GET', '/rag/collections/handbook/access')).shares).toEqual([])
    const gone = await live.request('POST', '/rag/search', { collection: 'handbook', query: QUESTION }, bob.accessToken)
    expect(gone.status).toBe(404)
  })

  test('usage errors: no principal, two of them, a wrong role; an unknown group is the API 400', async () => {
    const none = await live.run(['rag', 'share', 'handbook', '--role', 'viewer'])
    expect(none.code).toBe(2)
    expect(none.stderr).toContain('exactly one of --group')
    expect((await live.run(['rag', 'share', 'handbook', '--everyone', '--group', 'x', '--role', 'viewer'])).code).toBe(2)
    expect((await live.run(['rag', 'share', 'handbook', '--everyone', '--role', 'owner'])).code).toBe(2)
    const unknown = await live.run(['rag', 'share', 'handbook', '--group', 'no-such-group', '--role', 'viewer'])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain('VALIDATION_ERROR')
  })
})
