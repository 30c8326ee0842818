import { SQL } from 'bun'
import { describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { openDatabase } from '../../../src/db'
import { MIGRATIONS } from '../../../src/db/migrations'
import { PG_MIGRATIONS } from '../../../src/db/migrations/pg'
import { migratePostgres } from '../../../src/db/postgres'
import type { ConversationStore } from '../../../src/modules/conversations/store'
import { PostgresConversationStore } from '../../../src/modules/conversations/store.postgres'
import { SqliteConversationStore } from '../../../src/modules/conversations/store.sqlite'
import { tempDir } from '../../helpers'
import { emptyPostgresDatabase, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../../postgres'
import { type MakeServer, NumberedReplies, onBothBackends, onPostgres, type TestServer } from './servers'

// Conversation search's indexes (migrations 080 and 082): a word found once per conversation
// (conversation_words), counted exactly, and kept in step with every change to the messages,
// however the index is brought up to date (sending a message does no index work).

const email = () => `${randomUUID().slice(0, 8)}@example.com`

/** Makes every word count as common, so that a search takes the path a common word takes at scale (the page's messages read newest first). */
function asIfCommon(server: TestServer) {
  const store = server.services.conversations
  if (store instanceof PostgresConversationStore) (store.commonWordAbove = -1), (store.walkCost = 0)
  if (store instanceof SqliteConversationStore) (store.fewConversations = -1), (store.walkCost = 0)
}

async function chatter(server: TestServer, token: string) {
  const say = async (message: string, conversationId?: string) => {
    const sent = await server.call('POST', '/chat', { token, body: { message, ...(conversationId ? { conversationId } : {}) } })
    expect(sent.status).toBe(200)
    // Activity times apart, so that "newest first" is one order.
    await Bun.sleep(3)
    return sent.json.metadata as { conversationId: string; messageId: string; replyId: string }
  }
  const search = async (q: string, options: { limit?: number; offset?: number; as?: string } = {}) => {
    const found = await server.call('GET', `/conversations?q=${encodeURIComponent(q)}&limit=${options.limit ?? 100}&offset=${options.offset ?? 0}`, { token: options.as ?? token })
    expect(found.status).toBe(200)
    return found.json as { total: number; hasMore: boolean; conversations: { id: string; match: string; messages: { id: string; content: string }[] }[] }
  }
  return { say, search }
}

/** A server of the backend (every word on the common word's path when `common`) with a user, Alice, chatting on it. */
async function aliceChatting(make: MakeServer, common: boolean) {
  const server = make({}, new NumberedReplies())
  if (common) asIfCommon(server)
  const alice = await server.userSession(email())
  return { server, alice, ...(await chatter(server, alice.accessToken)) }
}

onBothBackends('conversation search index', (make) => {
  for (const common of [false, true]) test(`a common word: the total is exact across many conversations, newest first, every page adding up to it${common ? ' (the common word path)' : ''}`, async () => {
    const { say, search } = await aliceChatting(make, common)
    const holding: string[] = []
    for (let i = 0; i < 24; i++) {
      // Most hold the word (in their first message, in a later one, several times); every fourth does not.
      const first = await say(i % 4 === 3 ? `nothing here ${i}` : `the kettle boils ${i}`)
      if (i % 3 === 0) await say(`kettles and a kettle again, round ${i}`, first.conversationId)
      if (i % 4 !== 3) holding.push(first.conversationId)
      else if (i % 3 === 0) holding.push(first.conversationId)
    }
    const newestFirst = [...holding].reverse()
    const all = await search('kettle')
    expect(all.total).toBe(holding.length)
    expect(all.conversations.map((c) => c.id)).toEqual(newestFirst)
    // Paged: the same total on every page, the pages in order, nothing twice.
    const pages: string[] = []
    for (let offset = 0; offset < holding.length + 5; offset += 5) {
      const page = await search('kettle', { limit: 5, offset })
      expect(page.total).toBe(holding.length)
      expect(page.hasMore).toBe(offset + 5 < holding.length)
      pages.push(...page.conversations.map((c) => c.id))
    }
    expect(pages).toEqual(newestFirst)
    // Each comes with its newest message holding the word, and an excerpt of it.
    for (const found of all.conversations) {
      expect(found.messages).toHaveLength(1)
      expect(found.messages[0]!.content.toLowerCase()).toContain('kettle')
      expect(found.match.toLowerCase()).toContain('kettle')
    }
    // A prefix of the word finds the same; the word's longer form alone finds only those holding it.
    expect((await search('kett')).total).toBe(holding.length)
    expect((await search('kettles')).total).toBe(8)
    // Several words must be in one message (or the title): "boils" and "again" never are.
    expect((await search('kettle boils')).total).toBe(18)
    expect((await search('boils again')).total).toBe(0)
  })

  for (const common of [false, true]) test(`kept in step: new messages are found at once; an edit, a regeneration, a rename and a deletion change what is found${common ? ' (the common word path)' : ''}`, async () => {
    const { server, alice, say, search } = await aliceChatting(make, common)
    const a = await say('planning the walrus migration')
    const b = await say('unrelated talk')
    expect((await search('walrus')).conversations.map((c) => c.id)).toEqual([a.conversationId])
    // A message sent after a search is found by the next one, and moves its conversation first.
    await say('and now the walrus joins this one too', b.conversationId)
    expect((await search('walrus')).conversations.map((c) => c.id)).toEqual([b.conversationId, a.conversationId])
    // A newer message holding the word inside another (not at a word's start) is not the one shown.
    await say('superwalrus', b.conversationId)
    await say('quokka facts', a.conversationId)
    expect((await search('walrus')).conversations.map((c) => c.id)).toEqual([a.conversationId, b.conversationId])
    expect((await search('walrus')).conversations[1]!.messages.map((m) => m.content)).toEqual(['and now the walrus joins this one too'])
    expect((await search('quokka')).conversations.map((c) => c.id)).toEqual([a.conversationId])

    // An edit replaces the message and drops what followed: its old words are gone, the new ones found.
    const edited = await server.call('PATCH', `/conversations/${a.conversationId}/messages/${a.messageId}`, { token: alice.accessToken, body: { content: 'planning the narwhal migration' } })
    expect(edited.status).toBe(200)
    // Its title (made from the first message) still holds the old word: found by the title alone, with no message.
    const walrus = await search('walrus')
    expect(walrus.conversations.map((c) => c.id)).toEqual([a.conversationId, b.conversationId])
    expect(walrus.conversations[0]).toMatchObject({ match: 'planning the walrus migration', messages: [] })
    expect(walrus.conversations[1]!.messages.map((m) => m.content)).toEqual(['and now the walrus joins this one too'])
    expect((await search('quokka')).total).toBe(0)
    expect((await search('narwhal')).conversations.map((c) => c.id)).toEqual([a.conversationId])
    expect((await search('narwhal migration')).total).toBe(1)

    // A regeneration replaces the last reply ("reply N" of the numbered generator).
    const before = (await search('reply', { limit: 100 })).conversations.find((c) => c.id === a.conversationId)!
    const regenerated = await server.call('POST', `/conversations/${a.conversationId}/regenerate`, { token: alice.accessToken })
    expect(regenerated.status).toBe(200)
    const replyWord = regenerated.json.response.split(' ')[1] as string
    expect((await search(replyWord)).conversations.map((c) => c.id)).toEqual([a.conversationId])
    const oldWord = before.messages[0]!.content.split(' ')[1]!
    expect((await search(`reply ${oldWord}`)).conversations.map((c) => c.id)).not.toContain(a.conversationId)

    // A rename: the title is found, and the conversation moves first.
    await server.call('PATCH', `/conversations/${b.conversationId}`, { token: alice.accessToken, body: { title: 'Ocelot notes' } })
    expect((await search('ocelot')).conversations).toMatchObject([{ id: b.conversationId, match: 'Ocelot notes' }])
    expect((await search('migration')).conversations.map((c) => c.id)).toEqual([a.conversationId])
    expect((await search('walrus')).conversations.map((c) => c.id)).toEqual([b.conversationId, a.conversationId])

    // A deleted conversation is found no more, by any of its words.
    expect((await server.call('DELETE', `/conversations/${b.conversationId}`, { token: alice.accessToken })).status).toBe(200)
    expect((await search('walrus')).conversations.map((c) => c.id)).toEqual([a.conversationId])
    expect((await search('joins')).total).toBe(0)
    expect((await search('ocelot')).total).toBe(0)
    expect((await search('narwhal')).total).toBe(1)
  })

  for (const common of [false, true]) test(`shared conversations: found by their viewers (user, group, everyone) with their newest messages; revoked, not found at the next search${common ? ' (the common word path)' : ''}`, async () => {
    const server = make({}, new NumberedReplies())
    if (common) asIfCommon(server)
    const admin = await server.login()
    const alice = await server.userSession(email())
    const bobEmail = email()
    const bob = await server.userSession(bobEmail)
    const { say, search } = await chatter(server, alice.accessToken)
    const shared = await say('the capybara budget')
    await say('a private capybara')
    const bobs = await chatter(server, bob.accessToken)
    const own = await bobs.say('my own capybara')
    expect((await bobs.search('capybara')).conversations.map((c) => c.id)).toEqual([own.conversationId])

    const share = (shares: unknown[]) => server.call('PUT', `/conversations/${shared.conversationId}/access`, { token: alice.accessToken, body: { shares } })
    expect((await share([{ type: 'user', email: bobEmail, role: 'viewer' }])).status).toBe(200)
    expect((await bobs.search('capybara')).conversations.map((c) => c.id)).toEqual([own.conversationId, shared.conversationId])
    // Alice writes on in it: Bob's next search finds the new words (the shared conversation's index is brought up to date for him too).
    await say('the pangolin line of the budget', shared.conversationId)
    expect((await bobs.search('pangolin')).conversations.map((c) => c.id)).toEqual([shared.conversationId])
    expect((await bobs.search('capybara')).conversations.map((c) => c.id)).toEqual([shared.conversationId, own.conversationId])

    // Revoked: gone from his very next search; Alice still finds both of hers.
    await share([])
    expect((await bobs.search('capybara')).conversations.map((c) => c.id)).toEqual([own.conversationId])
    expect((await bobs.search('pangolin')).total).toBe(0)
    expect((await search('capybara')).total).toBe(2)

    // Through a group, then with everyone.
    const group = await server.call('POST', '/groups', { token: admin.accessToken, body: { name: `g-${randomUUID().slice(0, 6)}` } })
    await server.call('POST', `/groups/${group.json.id}/members`, { token: admin.accessToken, body: { userId: bob.user.id } })
    await share([{ type: 'group', groupId: group.json.id, role: 'viewer' }])
    expect((await bobs.search('pangolin')).total).toBe(1)
    await server.call('DELETE', `/groups/${group.json.id}/members/${bob.user.id}`, { token: admin.accessToken })
    expect((await bobs.search('pangolin')).total).toBe(0)
    await share([{ type: 'everyone', role: 'viewer' }])
    expect((await bobs.search('pangolin')).total).toBe(1)
    expect((await bobs.search('capybara')).total).toBe(2)

    // Alice's account deleted: her conversations, shared or not, are found by no one.
    expect((await server.call('DELETE', `/auth/users/${alice.user.id}`, { token: admin.accessToken })).status).toBe(200)
    expect((await bobs.search('pangolin')).total).toBe(0)
    expect((await bobs.search('capybara')).conversations.map((c) => c.id)).toEqual([own.conversationId])
  })
})

onPostgres('a conversation whose words are not indexed', (make) => {
  // Words past a tsvector's size leave conversation_words.words null (migration 082): such a
  // conversation is searched message by message, and counted and ordered with the others, on both
  // of the one-word paths (the GIN's hits sorted, and the caller's conversations walked newest first).
  for (const common of [false, true]) test(`found by one word and by several, in its place newest first, its newest message holding the word${common ? ' (the common word path)' : ''}`, async () => {
    const { server, say, search } = await aliceChatting(make, common)
    const first = await say('the walrus sleeps')
    const big = await say('a walrus on the ice')
    await say('the walrus swims away from the boat', big.conversationId)
    const last = await say('one more walrus')
    expect((await search('walrus')).total).toBe(3)
    await server.services.postgres!`UPDATE conversation_words SET words = NULL WHERE conversation_id = ${big.conversationId}`
    const found = await search('walrus')
    expect(found.total).toBe(3)
    expect(found.conversations.map((c) => [c.id, c.messages.map((m) => m.content)])).toEqual([
      [last.conversationId, ['one more walrus']],
      [big.conversationId, ['the walrus swims away from the boat']],
      [first.conversationId, ['the walrus sleeps']],
    ])
    expect((await search('walrus', { limit: 1, offset: 1 })).conversations.map((c) => c.id)).toEqual([big.conversationId])
    expect((await search('walrus boat')).conversations.map((c) => c.id)).toEqual([big.conversationId])
    expect((await search('ice')).conversations.map((c) => c.id)).toEqual([big.conversationId])
    expect((await search('kettle')).total).toBe(0)
  })
})

describe('migration 082 on a database made before it', () => {
  /** Two conversations of one user, written straight to the tables as an older server left them. */
  const rows: { conversations: [string, string, string][]; messages: [string, string, string][] } = {
    conversations: [
      ['c0000000-0000-4000-8000-000000000001', 'Harbour plans', '2026-01-01T00:00:00.000Z'],
      ['c0000000-0000-4000-8000-000000000002', 'Other things', '2026-01-02T00:00:00.000Z'],
    ],
    messages: [
      ['c0000000-0000-4000-8000-000000000001', 'user', 'the heron nests by the weir'],
      ['c0000000-0000-4000-8000-000000000001', 'assistant', 'herons often do'],
      ['c0000000-0000-4000-8000-000000000002', 'user', 'a heron again, and a kingfisher'],
    ],
  }
  const expectSearch = async (store: ConversationStore, userId: string, giveAway: (conversationId: string, to: string) => Promise<void>) => {
    const heron = await store.search(userId, ['heron'], 10, 0)
    expect(heron.total).toBe(2)
    expect(heron.conversations.map((c) => [c.id, c.messages.map((m) => m.content)])).toEqual([
      [rows.conversations[1]![0], ['a heron again, and a kingfisher']],
      [rows.conversations[0]![0], ['herons often do']],
    ])
    expect((await store.search(userId, ['harbour'], 10, 0)).conversations).toMatchObject([{ id: rows.conversations[0]![0], match: 'Harbour plans', messages: [] }])
    expect((await store.search(userId, ['heron', 'kingfisher'], 10, 0)).total).toBe(1)
    // And kept from then on.
    await store.append(rows.conversations[0]![0], [{ role: 'user', content: 'a kingfisher here too' }])
    expect((await store.search(userId, ['kingfisher'], 10, 0)).conversations.map((c) => c.id)).toEqual([rows.conversations[0]![0], rows.conversations[1]![0]])
    // Several words: a message written since the last search (its words added by this one), and a title's.
    expect((await store.search(userId, ['kingfisher', 'here'], 10, 0)).conversations).toMatchObject([{ id: rows.conversations[0]![0], messages: [{ content: 'a kingfisher here too' }] }])
    expect((await store.search(userId, ['harbour', 'plans'], 10, 0)).conversations).toMatchObject([{ id: rows.conversations[0]![0], match: 'Harbour plans', messages: [] }])
    // A conversation given to another owner is searched as theirs at once, no longer as the first one's.
    await giveAway(rows.conversations[1]![0], 'u2')
    expect((await store.search(userId, ['kingfisher'], 10, 0)).conversations.map((c) => c.id)).toEqual([rows.conversations[0]![0]])
    expect((await store.search('u2', ['kingfisher'], 10, 0)).conversations.map((c) => c.id)).toEqual([rows.conversations[1]![0]])
  }

  /** A SQLite database migrated up to `version` (not included), holding the rows as an older server left them. */
  const sqliteBefore = (version: number) => {
    const path = join(tempDir(`uagent-${version}-`), 'uagent.db')
    const before = openDatabase(path, MIGRATIONS.filter((m) => m.version < version))
    for (const id of ['u1', 'u2']) before.run(`INSERT INTO users (id, email, password_hash, roles, created_at) VALUES ('${id}', '${id}@example.com', 'x', '["user"]', '2026-01-01T00:00:00.000Z')`)
    for (const [id, title, at] of rows.conversations) before.run('INSERT INTO conversations (id, user_id, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?)', [id, 'u1', title, at, at])
    for (const [conversation, role, content] of rows.messages) before.run("INSERT INTO messages (conversation_id, uid, role, content, tokens, created_at) VALUES (?, lower(hex(randomblob(16))), ?, ?, 0, '2026-01-01T00:00:00.000Z')", [conversation, role, content])
    return { path, before }
  }

  test('SQLite: the conversations already there are found by one word and by several', async () => {
    const { path, before } = sqliteBefore(82)
    before.close()
    const db = openDatabase(path)
    await expectSearch(new SqliteConversationStore(db), 'u1', async (id, to) => void db.run('UPDATE conversations SET user_id = ? WHERE id = ?', [to, id]))
    db.close()
  })

  test('SQLite, migration 083 (prefix indexes, keys in order of activity) on a database at 082, a message not yet indexed: found, on both page paths', async () => {
    const { path, before } = sqliteBefore(83)
    // Indexed by a search at 082, then a message the next search would add.
    await new SqliteConversationStore(before).search('u1', ['heron'], 10, 0)
    before.run("INSERT INTO messages (conversation_id, uid, role, content, tokens, created_at) VALUES (?, 'late', 'user', 'ospreys fish here', 0, '2026-01-03T00:00:00.000Z')", [rows.conversations[0]![0]])
    before.close()
    const db = openDatabase(path)
    expect(db.query("SELECT count(*) AS n FROM sqlite_master WHERE name = 'conversation_search_keys_newest'").get()).toEqual({ n: 1 })
    for (const walkCost of [0, Number.POSITIVE_INFINITY]) {
      const store = new SqliteConversationStore(db)
      store.walkCost = walkCost
      expect((await store.search('u1', ['osp'], 10, 0)).conversations.map((c) => c.id)).toEqual([rows.conversations[0]![0]])
      // "her" starts "heron", "herons": a prefix of three letters read from its own index.
      const her = await store.search('u1', ['her'], 1, 1)
      expect([her.total, her.conversations.map((c) => c.id)]).toEqual([2, [rows.conversations[0]![0]]])
    }
    await expectSearch(new SqliteConversationStore(db), 'u1', async (id, to) => void db.run('UPDATE conversations SET user_id = ? WHERE id = ?', [to, id]))
    db.close()
  })

  test.skipIf(!TEST_DATABASE_URL)(`PostgreSQL: the same${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, async () => {
    const database = await emptyPostgresDatabase()
    const sql = new SQL(database.url, { max: 4 })
    database.track(sql)
    await migratePostgres(sql, PG_MIGRATIONS.filter((m) => m.version < 82))
    for (const id of ['u1', 'u2']) await sql`INSERT INTO users (id, email, password_hash, roles, created_at) VALUES (${id}, ${`${id}@example.com`}, 'x', '["user"]', '2026-01-01T00:00:00.000Z')`
    for (const [id, title, at] of rows.conversations) await sql`INSERT INTO conversations (id, user_id, title, created_at, updated_at) VALUES (${id}, 'u1', ${title}, ${at}, ${at})`
    for (const [conversation, role, content] of rows.messages) await sql`INSERT INTO messages (conversation_id, role, content, tokens, created_at) VALUES (${conversation}, ${role}, ${content}, 0, '2026-01-01T00:00:00.000Z')`
    await migratePostgres(sql)
    expect(Number((await sql`SELECT count(*) AS n FROM conversation_words WHERE words IS NOT NULL`)[0].n)).toBe(2)
    expect(Number((await sql`SELECT count(*) AS n FROM conversations WHERE words_stale`)[0].n)).toBe(0)
    // The messages' words (migration 084) for every message; no index of text left on messages or conversations.
    expect(Number((await sql`SELECT count(*) AS n FROM message_words`)[0].n)).toBe(3)
    expect(await sql`SELECT indexname FROM pg_indexes WHERE tablename IN ('messages', 'conversations') AND indexdef LIKE '%to_tsvector%'`).toEqual([])
    const store = new PostgresConversationStore(sql)
    await expectSearch(store, 'u1', async (id, to) => void (await sql`UPDATE conversations SET user_id = ${to} WHERE id = ${id}`))
    // A message written in the same millisecond as the one before it (updatedAt set to the value it
    // had), after a search between them: still found by the next search.
    const [first] = rows.conversations
    await sql`INSERT INTO messages (conversation_id, role, content, tokens, created_at) VALUES (${first![0]}, 'user', 'a grebe dives', 0, '2026-01-01T00:00:00.000Z')`
    await sql`UPDATE conversations SET updated_at = updated_at WHERE id = ${first![0]}`
    expect((await store.search('u1', ['grebe'], 10, 0)).conversations.map((c) => c.id)).toEqual([first![0]])
    expect((await store.search('u1', ['grebe', 'dives'], 10, 0)).conversations.map((c) => c.id)).toEqual([first![0]])
    await sql.close()
  })
})
