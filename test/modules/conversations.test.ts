import { describe, expect, test } from 'bun:test'
import { makeServer } from '../helpers'

describe('GET /conversations', () => {
  test('pagination over 120 conversations: limit, offset, total, hasMore, newest first', async () => {
    const { call, login, services } = makeServer()
    const session = await login()
    const userId = session.user.id
    for (let i = 0; i < 120; i++) {
      const conversation = await services.conversations.create(userId, `conversation ${i}`)
      await services.conversations.append(conversation.id, [
        { role: 'user', content: `question ${i}` },
        { role: 'assistant', content: `answer ${i}` },
      ])
      // Distinct, increasing activity times.
      services.db.run('UPDATE conversations SET updated_at = ? WHERE id = ?', [new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(), conversation.id])
    }
    const seen: string[] = []
    for (const [offset, expected, hasMore] of [[0, 50, true], [50, 50, true], [100, 20, false]] as const) {
      const page = await call('GET', `/conversations?limit=50&offset=${offset}`, { token: session.accessToken })
      expect(page.status).toBe(200)
      expect(page.json.total).toBe(120)
      expect(page.json.conversations).toHaveLength(expected)
      expect(page.json.hasMore).toBe(hasMore)
      seen.push(...page.json.conversations.map((c: { title: string }) => c.title))
    }
    expect(seen[0]).toBe('conversation 119')
    expect(seen.at(-1)).toBe('conversation 0')
    expect(new Set(seen).size).toBe(120)

    const defaults = await call('GET', '/conversations', { token: session.accessToken })
    expect(defaults.json.conversations).toHaveLength(50)
    const first = defaults.json.conversations[0]
    expect(first).toMatchObject({ userId, messages: [{ role: 'user', content: 'question 119' }, { role: 'assistant', content: 'answer 119' }] })
    expect(new Date(first.createdAt).toString()).not.toBe('Invalid Date')
    const past = await call('GET', '/conversations?offset=500', { token: session.accessToken })
    expect(past.json).toMatchObject({ conversations: [], total: 120, hasMore: false })
  })

  test('limit 0 and 101 and a negative offset are 400 naming the parameter', async () => {
    const { call, login } = makeServer()
    const { accessToken } = await login()
    for (const query of ['limit=0', 'limit=101', 'offset=-1', 'limit=abc']) {
      const res = await call('GET', `/conversations?${query}`, { token: accessToken })
      expect(res.status).toBe(400)
      expect(res.json.code).toBe('VALIDATION_ERROR')
      expect(res.json.message).toContain(query.split('=')[0]!)
    }
    expect((await call('GET', '/conversations?limit=100', { token: accessToken })).status).toBe(200)
  })

  test('only the caller’s own; another userId is admin-only; delete removes', async () => {
    const { call, login, userSession } = makeServer()
    const admin = await login()
    const bob = await userSession('bob@example.com')
    const chat = await call('POST', '/chat', { token: bob.accessToken, body: { message: 'bob speaking' } })
    expect((await call('GET', '/conversations', { token: admin.accessToken })).json.total).toBe(0)
    expect((await call('GET', `/conversations?userId=${admin.user.id}`, { token: bob.accessToken })).status).toBe(403)
    const asAdmin = await call('GET', `/conversations?userId=${bob.user.id}`, { token: admin.accessToken })
    expect(asAdmin.json.total).toBe(1)
    const id = chat.json.metadata.conversationId
    // Without userId, even an admin does not see another user's conversation; with it, an admin does.
    expect((await call('GET', `/conversations/${id}`, { token: admin.accessToken })).status).toBe(404)
    const shown = await call('GET', `/conversations/${id}?userId=${bob.user.id}`, { token: admin.accessToken })
    expect(shown.json).toMatchObject({ id, userId: bob.user.id })
    expect((await call('GET', `/conversations/${id}?userId=${admin.user.id}`, { token: bob.accessToken })).status).toBe(403)
    expect((await call('DELETE', `/conversations/${id}?userId=${admin.user.id}`, { token: bob.accessToken })).status).toBe(403)
    expect((await call('DELETE', `/conversations/${id}`, { token: admin.accessToken })).status).toBe(404)
    expect((await call('DELETE', `/conversations/${id}`, { token: bob.accessToken })).json).toEqual({ success: true, id })
    expect((await call('GET', `/conversations/${id}`, { token: bob.accessToken })).status).toBe(404)
    expect((await call('GET', '/conversations', { token: bob.accessToken })).json.total).toBe(0)
  })
})

describe('responses never change what the server keeps', () => {
  test('listing and reading conversations leaves the signed-in user as it was: /auth/me and an API key still work', async () => {
    // A conversation's `owner` is cleaned to its schema ({ id, email }) in place; it once was the
    // cached user object itself, which lost its roles for every later request of that session.
    const { call, login } = makeServer()
    const { accessToken } = await login()
    const key = (await call('POST', '/auth/api-keys', { token: accessToken, body: { name: 'scripts' } })).json.key
    const chat = await call('POST', '/chat', { token: accessToken, body: { message: 'Hello there' } })
    for (const token of [accessToken, key]) {
      expect((await call('GET', '/conversations', { token })).status).toBe(200)
      expect((await call('GET', `/conversations/${chat.json.metadata.conversationId}`, { token })).status).toBe(200)
      const me = await call('GET', '/auth/me', { token })
      expect(me.status).toBe(200)
      expect(me.json.roles).toEqual(['admin'])
      expect((await call('GET', '/analytics/dashboard', { token })).status).toBe(200)
    }
  })
})
