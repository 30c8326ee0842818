import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { openDatabase } from '../../src/db'
import type { Postgres } from '../../src/db/postgres'
import { MessageCache } from '../../src/modules/conversations/message-cache'
import type { Message } from '../../src/modules/conversations/store'
import { PostgresConversationStore } from '../../src/modules/conversations/store.postgres'
import { freshPostgres, insertTestUser, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../postgres'

const said = (conversation: { messages: readonly { content: string }[] }) => conversation.messages.map((message) => message.content)
const message = (content: string): Message => ({ id: randomUUID(), role: 'user', content, timestamp: '2026-11-28T00:00:00.000Z', tokens: 0 })

describe('the message cache', () => {
  test('keeps the least recently used out once it holds more than its limit; a conversation larger than the limit is not kept', () => {
    const cache = new MessageCache(1000)
    cache.keep('a', 'u', 0, 1, 2, undefined, [message('x'.repeat(300)), message('y')])
    cache.keep('b', 'u', 0, 3, 3, undefined, [message('z'.repeat(300))])
    expect(cache.get('a', 'u')?.messages).toHaveLength(2)
    // a was used last: b goes first.
    cache.keep('c', 'u', 0, 4, 4, undefined, [message('w'.repeat(300))])
    expect(cache.get('b', 'u')).toBeUndefined()
    expect(cache.get('a', 'u')).toBeDefined()
    expect(cache.size).toBeLessThanOrEqual(1000)
    cache.keep('huge', 'u', 0, 5, 5, undefined, [message('h'.repeat(2000))])
    expect(cache.get('huge', 'u')).toBeUndefined()
    expect(cache.size).toBeLessThanOrEqual(1000)
    // Another user's conversation is never handed out.
    expect(cache.get('a', 'someone else')).toBeUndefined()
    expect(cache.ofUser('u', 10).map(([id]) => id)).toEqual(['a', 'c'])
    expect(cache.ofUser('u', 1).map(([id]) => id)).toEqual(['a'])
  })
})

describe.skipIf(!TEST_DATABASE_URL)(`conversations read again on PostgreSQL${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  let sql: Postgres
  const db = openDatabase(':memory:')
  const user = () => insertTestUser({ kind: 'postgres', sql, db })
  beforeAll(async () => {
    sql = await freshPostgres()
  })
  afterAll(async () => {
    db.close()
    await sql?.close()
  })

  test('two replicas: what one appends, the other reads, in order, on get and list', async () => {
    const here = new PostgresConversationStore(sql)
    const there = new PostgresConversationStore(sql)
    const owner = await user()
    const id = randomUUID()
    await here.append(id, [{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1', metadata: { model: 'm' } }], { userId: owner, title: 't' })
    expect(said(await here.get(id, owner))).toEqual(['q1', 'a1'])
    expect(said((await here.list(owner, 10, 0)).conversations[0]!)).toEqual(['q1', 'a1'])
    for (let i = 2; i <= 4; i++) {
      await there.append(id, [{ role: 'user', content: `q${i}` }, { role: 'assistant', content: `a${i}` }])
      const expected = Array.from({ length: i }, (_, n) => [`q${n + 1}`, `a${n + 1}`]).flat()
      expect(said(await here.get(id, owner))).toEqual(expected)
      expect(said((await here.list(owner, 10, 0)).conversations[0]!)).toEqual(expected)
      // What a store that read nothing before reads.
      expect(await here.get(id, owner)).toEqual(await new PostgresConversationStore(sql).get(id, owner))
    }
    expect((await here.get(id, owner)).messages[1]).toMatchObject({ role: 'assistant', content: 'a1', metadata: { model: 'm' } })
    expect(await here.list(owner, 10, 0)).toEqual(await new PostgresConversationStore(sql).list(owner, 10, 0))
  })

  test('messages read before are not read again: only those written since come from the database', async () => {
    const store = new PostgresConversationStore(sql)
    const owner = await user()
    const id = randomUUID()
    await store.append(id, [{ role: 'user', content: 'first' }], { userId: owner, title: 't' })
    await store.get(id, owner)
    // Messages are never changed in place; changing one behind the store's back shows which rows are read.
    await sql`UPDATE messages SET content = 'changed' WHERE conversation_id = ${id}`
    await store.append(id, [{ role: 'assistant', content: 'second' }])
    expect(said(await store.get(id, owner))).toEqual(['first', 'second'])
    expect(said((await store.list(owner, 10, 0)).conversations[0]!)).toEqual(['first', 'second'])
    expect(said(await new PostgresConversationStore(sql).get(id, owner))).toEqual(['changed', 'second'])
  })

  test('a conversation deleted elsewhere and made again under the same id, or one that lost messages, is read whole again', async () => {
    const here = new PostgresConversationStore(sql)
    const there = new PostgresConversationStore(sql)
    const owner = await user()
    const id = randomUUID()
    await here.append(id, [{ role: 'user', content: 'old 1' }, { role: 'assistant', content: 'old 2' }], { userId: owner, title: 'old' })
    expect(said((await here.list(owner, 10, 0)).conversations[0]!)).toEqual(['old 1', 'old 2'])
    await there.delete(id, owner)
    await there.append(id, [{ role: 'user', content: 'new 1' }], { userId: owner, title: 'new' })
    expect(said(await here.get(id, owner))).toEqual(['new 1'])
    await there.delete(id, owner)
    await there.create(owner, 'empty', id)
    expect((await here.list(owner, 10, 0)).conversations[0]).toMatchObject({ id, title: 'empty', messages: [] })
    expect((await here.get(id, owner)).messages).toEqual([])

    // The last messages gone (a database restored from an earlier backup): the rest is read again.
    await here.append(id, [{ role: 'user', content: 'r1' }, { role: 'assistant', content: 'r2' }, { role: 'user', content: 'r3' }])
    expect(said(await here.get(id, owner))).toEqual(['r1', 'r2', 'r3'])
    await sql`DELETE FROM messages WHERE id = (SELECT max(id) FROM messages WHERE conversation_id = ${id})`
    expect(said(await here.get(id, owner))).toEqual(['r1', 'r2'])
    expect(said((await here.list(owner, 10, 0)).conversations[0]!)).toEqual(['r1', 'r2'])
  })

  test('an edit or a regeneration on one replica: the other never serves the replaced messages, on get, list or search', async () => {
    const here = new PostgresConversationStore(sql)
    const there = new PostgresConversationStore(sql)
    const owner = await user()
    const id = randomUUID()
    const [q1, a1, q2, a2] = await here.append(
      id,
      [{ role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }, { role: 'user', content: 'q2 typo' }, { role: 'assistant', content: 'a2 old' }],
      { userId: owner, title: 't' },
    )
    // Both replicas have the conversation cached.
    expect(said(await here.get(id, owner))).toEqual(['q1', 'a1', 'q2 typo', 'a2 old'])
    expect(said(await there.get(id, owner))).toEqual(['q1', 'a1', 'q2 typo', 'a2 old'])
    // Regenerated on the other replica: the last reply replaced (a new, larger row id: the cached run still looks like a prefix).
    const [a2b] = await there.replaceFrom(id, a2!, [{ role: 'assistant', content: 'a2 new' }])
    expect(said(await here.get(id, owner))).toEqual(['q1', 'a1', 'q2 typo', 'a2 new'])
    expect((await here.get(id, owner)).messages.map((m) => m.id)).toEqual([q1!, a1!, q2!, a2b!])
    // Edited there: the user message keeps its id, what followed goes, a new reply comes.
    await there.get(id, owner)
    await here.get(id, owner)
    await there.replaceFrom(id, q2!, [{ id: q2, role: 'user', content: 'q2 fixed' }, { role: 'assistant', content: 'a2 again' }])
    expect(said((await here.list(owner, 10, 0)).conversations[0]!)).toEqual(['q1', 'a1', 'q2 fixed', 'a2 again'])
    expect(said(await here.get(id, owner))).toEqual(['q1', 'a1', 'q2 fixed', 'a2 again'])
    expect(said((await here.search(owner, ['fixed'], 10, 0)).conversations[0]!)).toEqual(['q2 fixed'])
    expect((await here.search(owner, ['typo'], 10, 0)).total).toBe(0)
    // Dropped back to the first exchange (an edit of the first question) and appended to: still no stale message.
    await here.get(id, owner)
    await there.replaceFrom(id, q1!, [{ id: q1, role: 'user', content: 'only' }])
    await there.append(id, [{ role: 'assistant', content: 'reply' }, { role: 'user', content: 'more' }, { role: 'assistant', content: 'and more' }, { role: 'user', content: 'five' }])
    expect(said(await here.get(id, owner))).toEqual(['only', 'reply', 'more', 'and more', 'five'])
    expect(await here.get(id, owner)).toEqual(await new PostgresConversationStore(sql).get(id, owner))
    // A message id that is no longer there (replaced meanwhile): 409, nothing written.
    expect(await here.replaceFrom(id, a2!, [{ role: 'assistant', content: 'x' }]).then(() => 'ok', (error) => error.code)).toBe('CONFLICT')
    expect(said(await here.get(id, owner))).toEqual(['only', 'reply', 'more', 'and more', 'five'])
  })

  test('another user never gets a conversation through the cache', async () => {
    const store = new PostgresConversationStore(sql)
    const owner = await user()
    const other = await user()
    const id = randomUUID()
    await store.append(id, [{ role: 'user', content: 'private' }], { userId: owner, title: 't' })
    await store.get(id, owner)
    await store.list(owner, 10, 0)
    expect(await store.get(id, other).then(() => 'ok', (error) => error.code)).toBe('NOT_FOUND')
    expect(await store.list(other, 10, 0)).toEqual({ conversations: [], total: 0 })
  })

  test("a page's total is the owner's count, kept by the database through concurrent creates and deletes and an account's deletion", async () => {
    const store = new PostgresConversationStore(sql)
    const owner = await user()
    const other = await user()
    const count = async (id: string) => Number((await sql`SELECT count(*) AS n FROM conversations WHERE user_id = ${id}`)[0].n)
    const made = await Promise.all(Array.from({ length: 24 }, (_, i) => (i % 2 ? store.create(owner, `c${i}`) : store.append(randomUUID(), [{ role: 'user', content: `q${i}` }], { userId: owner, title: `a${i}` }).then(() => null))))
    await store.create(other, 'theirs')
    expect((await store.list(owner, 5, 0)).total).toBe(24)
    await Promise.all(made.filter((c) => c !== null).slice(0, 5).map((c) => store.delete(c!.id, owner)))
    expect((await store.list(owner, 5, 0)).total).toBe(19)
    expect(await count(owner)).toBe(19)
    expect((await store.list(other, 5, 0)).total).toBe(1)
    // A conversation given to another user (nothing does that today) moves its count.
    await sql`UPDATE conversations SET user_id = ${other} WHERE id = (SELECT id FROM conversations WHERE user_id = ${owner} LIMIT 1)`
    expect([(await store.list(owner, 5, 0)).total, (await store.list(other, 5, 0)).total]).toEqual([18, 2])
    await sql`DELETE FROM users WHERE id = ${owner}`
    expect((await store.list(owner, 5, 0)).total).toBe(0)
    expect((await sql`SELECT count(*) AS n FROM conversation_counts WHERE user_id = ${owner}`)[0].n).toBe('0')
    expect((await store.list(other, 5, 0)).total).toBe(2)
  })
})
