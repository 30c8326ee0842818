import { describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import type { ConversationStore } from '../../src/modules/conversations/store'
import { PostgresConversationStore } from '../../src/modules/conversations/store.postgres'
import { SqliteConversationStore } from '../../src/modules/conversations/store.sqlite'
import { makeServer } from '../helpers'
import { describeBackends, freshPostgres, deleteTestUser, insertTestUser, POSTGRES_SKIPPED, type TestBackend, TEST_DATABASE_URL } from '../postgres'

/** The store of a backend, and a user it may hold conversations of (SQLite's users table has a foreign key). */
function storeOf(backend: TestBackend): { store: ConversationStore; user(): Promise<string> } {
  const user = () => insertTestUser(backend)
  return { store: backend.kind === 'postgres' ? new PostgresConversationStore(backend.sql) : new SqliteConversationStore(backend.db), user }
}

async function status(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
    return 'ok'
  } catch (error) {
    return (error as { code?: string }).code ?? String(error)
  }
}

describeBackends('conversation store', (backend) => {
  test('messages come back in order with their tokens and metadata; another user gets 404, not the content', async () => {
    const { store, user } = storeOf(backend())
    const alice = await user()
    const bob = await user()
    const conversation = await store.create(alice, 'Zürich trip ✈')
    await store.append(conversation.id, [
      { role: 'user', content: 'Where to eat? ½ price 🍕', tokens: 7 },
      { role: 'assistant', content: 'Try the old town.', tokens: 5, metadata: { model: 'builtin', sources: [{ id: 1 }] } },
    ])
    const read = await store.get(conversation.id, alice)
    expect(read).toMatchObject({ id: conversation.id, userId: alice, title: 'Zürich trip ✈' })
    expect(read.messages).toEqual([
      { id: expect.any(String), role: 'user', content: 'Where to eat? ½ price 🍕', tokens: 7, timestamp: expect.any(String) },
      { id: expect.any(String), role: 'assistant', content: 'Try the old town.', tokens: 5, metadata: { model: 'builtin', sources: [{ id: 1 }] }, timestamp: expect.any(String) },
    ])
    expect(read.updatedAt >= read.createdAt).toBe(true)
    expect(await status(store.get(conversation.id, bob))).toBe('NOT_FOUND')
    expect(await status(store.get(randomUUID(), alice))).toBe('NOT_FOUND')
  })

  test('search follows titles and messages as they are renamed, replaced and deleted', async () => {
    const { store, user } = storeOf(backend())
    const owner = await user()
    const other = await user()
    const a = await store.create(owner, 'alpha budget')
    const b = await store.create(owner, 'beta budget')
    const c = await store.create(owner, 'gamma plan')
    await store.create(other, 'budget of someone else')
    const [q] = await store.append(c.id, [{ role: 'user', content: 'ferry timetable' }, { role: 'assistant', content: 'at nine' }])
    await store.delete(a.id, owner)
    await store.rename(c.id, owner, 'gamma budget')
    const titles = async (word: string) => (await store.search(owner, [word], 10, 0)).conversations.map((x) => x.title).sort()
    expect(await titles('budget')).toEqual(['beta budget', 'gamma budget'])
    expect(await titles('alpha')).toEqual([])
    expect(await titles('plan')).toEqual([])
    expect(await titles('ferry')).toEqual(['gamma budget'])
    await store.replaceFrom(c.id, q!, [{ id: q, role: 'user', content: 'bus timetable' }])
    expect(await titles('ferry')).toEqual([])
    expect(await titles('bus')).toEqual(['gamma budget'])
    expect((await store.search(owner, ['bus'], 10, 0)).conversations[0]).toMatchObject({ id: c.id, match: 'bus timetable', messages: [{ id: q, content: 'bus timetable' }] })
    expect((await store.search(other, ['gamma'], 10, 0)).total).toBe(0)
    expect((await store.search(owner, ['budget'], 1, 1)).conversations).toHaveLength(1)
    expect((await store.search(owner, ['budget'], 10, 5))).toEqual({ total: 2, conversations: [] })
    void b
  })

  test('list: newest activity first, paged, with the total and each conversation’s messages', async () => {
    const { store, user } = storeOf(backend())
    const owner = await user()
    const other = await user()
    await store.create(other, 'not yours')
    const ids: string[] = []
    for (let i = 0; i < 5; i++) {
      const conversation = await store.create(owner, `c${i}`)
      await store.append(conversation.id, [{ role: 'user', content: `q${i}` }])
      ids.push(conversation.id)
      await Bun.sleep(2)
    }
    // Activity on the oldest moves it to the front.
    await Bun.sleep(2)
    await store.append(ids[0]!, [{ role: 'assistant', content: 'late answer' }])
    const first = await store.list(owner, 2, 0)
    expect(first.total).toBe(5)
    expect(first.conversations.map((c) => c.title)).toEqual(['c0', 'c4'])
    expect(first.conversations[0]!.messages.map((m) => m.content)).toEqual(['q0', 'late answer'])
    const rest = await store.list(owner, 10, 2)
    expect(rest.conversations.map((c) => c.title)).toEqual(['c3', 'c2', 'c1'])
    // A page past the end still has the total.
    expect(await store.list(owner, 10, 50)).toEqual({ conversations: [], total: 5 })
    expect((await store.list(await user(), 10, 0)).total).toBe(0)
  })

  test('rename moves updatedAt; delete removes; both are 404 for another user', async () => {
    const { store, user } = storeOf(backend())
    const owner = await user()
    const other = await user()
    const conversation = await store.create(owner, 'old')
    await Bun.sleep(2)
    expect(await status(store.rename(conversation.id, other, 'stolen'))).toBe('NOT_FOUND')
    const renamed = await store.rename(conversation.id, owner, 'new')
    expect(renamed.title).toBe('new')
    expect(renamed.updatedAt > conversation.updatedAt).toBe(true)
    expect(await status(store.delete(conversation.id, other))).toBe('NOT_FOUND')
    await store.delete(conversation.id, owner)
    expect(await status(store.get(conversation.id, owner))).toBe('NOT_FOUND')
    expect(await status(store.delete(conversation.id, owner))).toBe('NOT_FOUND')
  })

  test('an exchange is stored whole or not at all; a conversation deleted meanwhile stays deleted (409)', async () => {
    const { store, user } = storeOf(backend())
    const owner = await user()
    const id = randomUUID()
    // The second message breaks a constraint: neither it, the first, nor the new conversation is kept.
    const broken = store.append(id, [{ role: 'user', content: 'hello' }, { role: 'robot' as 'user', content: 'no' }], { userId: owner, title: 'hello' })
    expect(await status(broken)).not.toBe('ok')
    expect(await status(store.get(id, owner))).toBe('NOT_FOUND')
    expect((await store.list(owner, 10, 0)).total).toBe(0)

    await store.append(id, [{ role: 'user', content: 'hello' }], { userId: owner, title: 'hello' })
    expect((await store.get(id, owner)).messages).toHaveLength(1)
    await store.delete(id, owner)
    expect(await status(store.append(id, [{ role: 'assistant', content: 'too late' }]))).toBe('CONFLICT')
    expect(await status(store.get(id, owner))).toBe('NOT_FOUND')
  })

  test('text holding U+0000 (and text that looks like the stored form of such text) comes back exactly as sent', async () => {
    const { store, user } = storeOf(backend())
    const owner = await user()
    const texts = ['a\u0000b', '\u0000', 'ends with nul \u0000', '\uFFFF"not encoded"', '\uFFFF', 'plain text, a \\u0000 escape written out', '\u0000 and 🙂 and \u0000']
    const conversation = await store.create(owner, 'title \u0000 with nul')
    await store.append(conversation.id, texts.map((content) => ({ role: 'user' as const, content, metadata: { note: 'x\u0000y' } })))
    const read = await store.get(conversation.id, owner)
    expect(read.title).toBe('title \u0000 with nul')
    expect(read.messages.map((message) => message.content)).toEqual(texts)
    expect(read.messages[0]!.metadata).toEqual({ note: 'x\u0000y' })
    expect((await store.list(owner, 10, 0)).conversations[0]!.messages.map((message) => message.content)).toEqual(texts)
    expect((await store.rename(conversation.id, owner, '\uFFFF\u0000')).title).toBe('\uFFFF\u0000')
  })

  test('deleting a user removes their conversations and no one else’s', async () => {
    const { store, user } = storeOf(backend())
    const gone = await user()
    const kept = await user()
    for (const owner of [gone, gone, kept]) await store.append(randomUUID(), [{ role: 'user', content: 'x' }], { userId: owner, title: 'x' })
    await deleteTestUser(backend(), gone)
    expect((await store.list(gone, 10, 0)).total).toBe(0)
    expect((await store.list(kept, 10, 0)).total).toBe(1)
  })
})

describe.skipIf(!TEST_DATABASE_URL)(`conversations over HTTP on PostgreSQL${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('a chat is stored in PostgreSQL, listed, renamed and deleted; a deleted user’s conversations go too', async () => {
    const postgres = await freshPostgres()
    const { call, login, userSession, services } = makeServer({ postgres })
    const admin = await login()
    const bob = await userSession('bob@example.com')
    const chat = await call('POST', '/chat', { token: bob.accessToken, body: { message: 'hello from bob' } })
    expect(chat.status).toBe(200)
    const id = chat.json.metadata.conversationId
    const rows: { title: string }[] = await postgres`SELECT title FROM conversations WHERE id = ${id}`
    expect(rows).toEqual([{ title: 'hello from bob' }])
    expect(services.db.query('SELECT count(*) AS n FROM conversations').get()).toEqual({ n: 0 })
    const listed = await call('GET', '/conversations', { token: bob.accessToken })
    expect(listed.json).toMatchObject({ total: 1, conversations: [{ id, messages: [{ role: 'user', content: 'hello from bob' }, { role: 'assistant' }] }] })
    expect((await call('GET', `/conversations/${id}`, { token: admin.accessToken })).status).toBe(404)
    expect((await call('PATCH', `/conversations/${id}`, { token: bob.accessToken, body: { title: 'renamed' } })).json.title).toBe('renamed')
    const again = await call('POST', '/chat', { token: bob.accessToken, body: { message: 'and again', conversationId: id } })
    expect(again.json.metadata.conversationId).toBe(id)
    expect((await call('GET', `/conversations/${id}`, { token: bob.accessToken })).json.messages).toHaveLength(4)

    await call('POST', '/chat', { token: bob.accessToken, body: { message: 'second conversation' } })
    expect((await call('DELETE', `/conversations/${id}`, { token: bob.accessToken })).json).toEqual({ success: true, id })
    expect((await call('GET', `/conversations/${id}`, { token: bob.accessToken })).status).toBe(404)

    // A message holding U+0000 is kept as sent, as on SQLite (PostgreSQL's text refuses that character as it is).
    const nul = await call('POST', '/chat', { token: bob.accessToken, body: { message: 'a\u0000b' } })
    expect(nul.status).toBe(200)
    const kept = await call('GET', `/conversations/${nul.json.metadata.conversationId}`, { token: bob.accessToken })
    expect(kept.json.title).toBe('a\u0000b')
    expect(kept.json.messages[0]).toMatchObject({ role: 'user', content: 'a\u0000b' })
    expect((await call('GET', '/conversations', { token: bob.accessToken })).json.total).toBe(2)

    const deleted = await call('DELETE', `/auth/users/${bob.user.id}`, { token: admin.accessToken })
    expect(deleted.status).toBe(200)
    let left = 1
    for (let i = 0; i < 50 && left; i++) {
      left = Number((await postgres`SELECT count(*) AS n FROM conversations WHERE user_id = ${bob.user.id}`)[0].n)
      if (left) await Bun.sleep(20)
    }
    expect(left).toBe(0)
  })
})

describe('a chat message holding U+0000 over HTTP', () => {
  test('SQLite: stored and shown as sent (as on PostgreSQL)', async () => {
    const { call, login } = makeServer()
    const { accessToken: token } = await login()
    const chat = await call('POST', '/chat', { token, body: { message: 'a\u0000b' } })
    expect(chat.status).toBe(200)
    const kept = await call('GET', `/conversations/${chat.json.metadata.conversationId}`, { token })
    expect(kept.json.title).toBe('a\u0000b')
    expect(kept.json.messages[0]).toMatchObject({ role: 'user', content: 'a\u0000b' })
  })
})
