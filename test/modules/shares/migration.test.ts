import { SQL } from 'bun'
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { openDatabase } from '../../../src/db'
import { copyToPostgres } from '../../../src/db/copy-to-postgres'
import { migratePostgres } from '../../../src/db/postgres'
import { shutdown } from '../../../src/shutdown'
import { makeServer, tempDir } from '../../helpers'
import { emptyPostgresDatabase, freshPostgres, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../../postgres'

setDefaultTimeout(120_000)

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** Alice's and Bob's collections, made through the API of a server as it is now. */
async function fill(server: ReturnType<typeof makeServer>) {
  const alice = await server.userSession('alice@example.com')
  const bob = await server.userSession('bob@example.com')
  for (const [token, name] of [[alice.accessToken, 'notes'], [alice.accessToken, 'handbook'], [bob.accessToken, 'notes']] as const) {
    const res = await server.call('POST', '/rag/ingest', { token, body: { collection: name, documents: [{ id: 'a', content: `${name} of one of them: the osprey nests by the weir.` }] } })
    expect(res.status).toBe(200)
  }
}

/** What migration 42 leaves: every collection private to its owner, each with its own id. */
async function expectPrivate(server: ReturnType<typeof makeServer>) {
  const alice = await server.login('alice@example.com', 'user-password-1')
  const bob = await server.login('bob@example.com', 'user-password-1')
  const mine = (await server.call('GET', '/rag/collections', { token: alice.accessToken })).json.collections
  expect(mine.map((c: any) => [c.name, c.access, c.owner.email])).toEqual([['handbook', 'owner', 'alice@example.com'], ['notes', 'owner', 'alice@example.com']])
  const bobs = (await server.call('GET', '/rag/collections', { token: bob.accessToken })).json.collections
  expect(bobs.map((c: any) => [c.name, c.access])).toEqual([['notes', 'owner']])
  const ids = [...mine, ...bobs].map((c: any) => c.id)
  for (const id of ids) expect(id).toMatch(UUID)
  expect(new Set(ids).size).toBe(3)
  // No share appeared: Bob reaches none of Alice's, by name, id or owner/name.
  for (const ref of ['handbook', mine[0].id, 'alice@example.com/handbook', mine[1].id]) {
    expect((await server.call('POST', '/rag/search', { token: bob.accessToken, body: { collection: ref, query: 'osprey' } })).status).toBe(404)
  }
  // Bob's own notes are his, not Alice's.
  const own = await server.call('POST', '/rag/search', { token: bob.accessToken, body: { collection: 'notes', query: 'osprey', limit: 1 } })
  expect(own.status).toBe(200)
}

describe('migration 42 on SQLite', () => {
  test('a database from before it: every collection gets its own UUID, and no share appears', async () => {
    const dir = tempDir('shares-migration')
    const database = join(dir, 'uagent.db')
    const before = makeServer({ database, dataDir: dir })
    await fill(before)
    await shutdown(before.app, before.services, 1000)
    // Back to the schema before migration 42, with the rows as they were.
    const db = openDatabase(database)
    db.run(`DROP INDEX rag_collections_public_id; DROP INDEX rag_collections_name; ALTER TABLE rag_collections DROP COLUMN public_id; DROP TABLE rag_collection_shares; DELETE FROM schema_migrations WHERE version = 42`)
    db.close()
    const after = makeServer({ database, dataDir: dir })
    expect((after.services.db.query('SELECT count(*) AS n FROM rag_collection_shares').get() as { n: number }).n).toBe(0)
    await expectPrivate(after)
    await shutdown(after.app, after.services, 1000)
  })
})

const suite = TEST_DATABASE_URL ? describe : describe.skip
suite(`migration 42 on PostgreSQL, and migrate-to-postgres${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('a database from before it: every collection gets its own UUID, and no share appears', async () => {
    const postgres = await freshPostgres()
    const before = makeServer({ postgres })
    await fill(before)
    await postgres.unsafe(`DROP TABLE rag_collection_shares; DROP INDEX rag_collections_name; ALTER TABLE rag_collections DROP COLUMN public_id; DELETE FROM schema_migrations WHERE version = 42`)
    expect(await migratePostgres(postgres)).toEqual([42])
    expect(Number((await postgres`SELECT count(*) AS n FROM rag_collection_shares`)[0].n)).toBe(0)
    const after = makeServer({ postgres })
    await expectPrivate(after)
  })

  test('copying a SQLite server to PostgreSQL carries collection ids, groups and shares', async () => {
    const dir = tempDir('shares-copy')
    const source = makeServer({ database: join(dir, 'uagent.db'), dataDir: dir })
    await fill(source)
    const admin = (await source.login()).accessToken
    const alice = (await source.login('alice@example.com', 'user-password-1')).accessToken
    const group = (await source.call('POST', '/groups', { token: admin, body: { name: 'staff' } })).json
    await source.call('POST', `/groups/${group.id}/members`, { token: admin, body: { email: 'bob@example.com' } })
    const shared = await source.call('PUT', '/rag/collections/handbook/access', { token: alice, body: { shares: [{ type: 'group', name: 'staff', role: 'editor' }, { type: 'everyone', role: 'viewer' }] } })
    expect(shared.status).toBe(200)
    const ids = (await source.call('GET', '/rag/collections', { token: alice })).json.collections.map((c: any) => c.id)
    const target = await emptyPostgresDatabase()
    const sql = new SQL(target.url, { max: 2 })
    target.track(sql)
    await migratePostgres(sql)
    const report = await copyToPostgres([{ name: 'uagent.db', db: source.services.db }], sql)
    for (const table of ['rag_collections', 'rag_collection_shares', 'groups', 'group_members']) {
      expect(report.copied.find((t) => t.table === table)?.leftOut).toEqual([])
    }
    await shutdown(source.app, source.services, 1000)
    const copied = makeServer({ postgres: sql })
    const bob = (await copied.login('bob@example.com', 'user-password-1')).accessToken
    const seen = (await copied.call('GET', '/rag/collections', { token: bob })).json.collections
    expect(seen.map((c: any) => [c.owner.email, c.name, c.access])).toEqual([
      ['alice@example.com', 'handbook', 'editor'],
      ['bob@example.com', 'notes', 'owner'],
    ])
    expect(seen.find((c: any) => c.name === 'handbook').id).toBe(ids[0])
    const access = await copied.call('GET', `/rag/collections/${ids[0]}/access`, { token: (await copied.login('alice@example.com', 'user-password-1')).accessToken })
    expect(access.json.shares).toEqual([
      { type: 'everyone', role: 'viewer' },
      { type: 'group', id: group.id, name: 'staff', role: 'editor' },
    ])
    // A new collection after the copy gets a new id (the identity moved past the copied rows).
    const made = await copied.call('POST', '/rag/collections', { token: bob, body: { name: 'fresh' } })
    expect(made.json.collection.id).toMatch(UUID)
    expect(ids).not.toContain(made.json.collection.id)
  })
})
