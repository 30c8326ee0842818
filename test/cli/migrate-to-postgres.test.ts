import { Database } from 'bun:sqlite'
import { SQL } from 'bun'
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { sharedJwtSecret } from '../../src/core/secrets'
import { openPostgres } from '../../src/db/postgres'
import { makeServerWith, ScriptedGenerator, tempDir } from '../helpers'
import { emptyPostgresDatabase, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../postgres'
import { type OidcFixture, signInAtProvider, startOidcProvider } from '../sso/providers'
import { liveServer } from './live-server'

setDefaultTimeout(120_000)

const { run } = liveServer()
const suite = TEST_DATABASE_URL ? describe : describe.skip

// Single sign-on moves too: a real OpenID Connect provider (oidc-provider under Node); the servers
// are reached in-process at PUBLIC, their UAGENT_PUBLIC_URL.
const PUBLIC = 'http://uagent.test'
const CALLBACK = `${PUBLIC}/auth/oidc/callback`
let provider: OidcFixture | undefined

/** A server on a real data dir (SQLite files), or on that data dir and a PostgreSQL database; it signs in through the provider. */
function serverOn(dataDir: string, options: Parameters<typeof makeServerWith>[1] = {}) {
  const env = { UAGENT_PUBLIC_URL: PUBLIC, UAGENT_OIDC_ISSUER: provider!.issuer, UAGENT_OIDC_CLIENT_ID: provider!.clientId, UAGENT_OIDC_CLIENT_SECRET: provider!.clientSecret }
  return makeServerWith(new ScriptedGenerator('Moved without losing a word.'), { dataDir, database: undefined, env, ...options })
}

/** A GET as a browser at PUBLIC sends it, with its cookies. */
function browserGet(server: ReturnType<typeof serverOn>, url: string, cookie = '') {
  return server.app.handle(new Request(url.startsWith('http') ? url : `${PUBLIC}${url}`, { headers: { cookie, host: 'uagent.test' } }))
}

/** Starts an OIDC sign-in on `server`: the provider's URL and the state cookie the browser got. */
async function startOidc(server: ReturnType<typeof serverOn>) {
  const res = await browserGet(server, '/auth/oidc/login')
  expect(res.status).toBe(302)
  const state = res.headers.getSetCookie().find((c) => c.startsWith('uagent_oidc_state='))!.split(';')[0]!
  return { location: res.headers.get('location')!, state }
}

/** Ends a sign-in at the callback of `server` as the provider's account `login`: the user the browser's web session is for. */
async function finishOidc(server: ReturnType<typeof serverOn>, started: { location: string; state: string }, login: string) {
  const callback = await browserGet(server, await signInAtProvider(started.location, login, CALLBACK), started.state)
  expect(callback.status).toBe(302)
  expect(callback.headers.get('location')).toBe('/app')
  const refresh = callback.headers.getSetCookie().find((c) => c.startsWith('uagent_refresh='))!.split(';')[0]!
  const session = await server.app.handle(new Request(`${PUBLIC}/auth/web/refresh`, { method: 'POST', headers: { cookie: refresh, 'x-requested-with': 'uagent-web', origin: PUBLIC, host: 'uagent.test' } }))
  expect(session.status).toBe(200)
  return ((await session.json()) as { user: { id: string; email: string } }).user
}

async function close(server: ReturnType<typeof serverOn>) {
  await server.services.recorder.close()
  await server.services.audit.close()
  server.services.analyticsDb.close()
  server.services.db.close()
  await server.services.postgres?.close({ timeout: 1 })
}

/** Rows of a table of a PostgreSQL database, read on a connection of its own. */
async function pgCount(url: string, table: string): Promise<number> {
  const sql = new SQL(url, { max: 1 })
  try {
    return Number((await sql.unsafe(`SELECT count(*) AS n FROM ${table}`))[0].n)
  } finally {
    await sql.close()
  }
}

suite(`uagent admin migrate-to-postgres${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  beforeAll(async () => {
    if (TEST_DATABASE_URL) provider = await startOidcProvider([CALLBACK], { ann: { email: 'ann@example.com', email_verified: true, name: 'Ann', groups: [] } })
  }, 30_000)
  afterAll(async () => {
    await provider?.stop()
  })
  const dataDir = tempDir('migrate-data')
  let target = ''
  const made = { conversationId: '', bobId: '', bobToken: '', key: '', taskId: '', requests: 0, chunks: 0, groupId: '', annId: '', deviceCode: '' }

  test('a populated SQLite server is copied into an empty PostgreSQL database, counts checked, and a server on it serves the same data', async () => {
    // The SQLite server, used through its API: a user, conversations, an API key, an agent task, analytics.
    const before = serverOn(dataDir)
    const admin = await before.login()
    const bob = await before.userSession('bob@example.com', 'bob-password-1')
    made.bobId = bob.user.id
    made.bobToken = bob.accessToken
    const chat = await before.call('POST', '/chat', { token: bob.accessToken, body: { message: 'Remember the lighthouse keeper.' } })
    expect(chat.status).toBe(200)
    made.conversationId = chat.json.metadata.conversationId
    expect((await before.call('POST', '/chat', { token: bob.accessToken, body: { message: 'And the second question.', conversationId: made.conversationId } })).status).toBe(200)
    const key = await before.call('POST', '/auth/api-keys', { token: bob.accessToken, body: { name: 'laptop' } })
    expect(key.status).toBe(200)
    made.key = key.json.key
    const task = await before.call('POST', '/agents/execute', { token: bob.accessToken, body: { task: 'Summarize the lighthouse', agents: ['writer'] } })
    expect(task.status).toBe(200)
    made.taskId = task.json.taskId
    const ingested = await before.call('POST', '/rag/ingest', {
      token: bob.accessToken,
      body: {
        collection: 'handbook',
        documents: [
          { id: 'lighthouse', content: 'The lighthouse keeper polishes the great lens every evening before the lamp is lit.' },
          { id: 'bakery', content: 'The bakery opens at six; rye loaves come out of the oven first, then the croissants.' },
          { id: 'harbour', content: 'Fishing boats moor in the harbour after the evening tide, their nets drying on the quay.' },
        ],
      },
    })
    expect(ingested.status).toBe(200)
    made.chunks = (await before.call('GET', '/rag/collections', { token: bob.accessToken })).json.collections[0].chunks
    // A group with bob in it (and the audit events that made it).
    made.groupId = (await before.call('POST', '/groups', { token: admin.accessToken, body: { name: 'Keepers' } })).json.id
    expect((await before.call('POST', `/groups/${made.groupId}/members`, { token: admin.accessToken, body: { email: 'bob@example.com' } })).status).toBe(200)
    // Single sign-on: ann signed in through the provider (her account tied to its `sub`), a
    // sign-in under way (its state, nonce and verifier stored), and a CLI's device code waiting.
    made.annId = (await finishOidc(before, await startOidc(before), 'ann')).id
    const pendingOidc = await startOidc(before)
    const device = await before.call('POST', '/auth/device', { body: { clientName: 'uagent on laptop' } })
    expect(device.status).toBe(200)
    made.deviceCode = device.json.deviceCode
    await before.services.recorder.settle()
    made.requests = (await before.call('GET', '/analytics/dashboard', { token: admin.accessToken })).json.overview.totalRequests
    await close(before)

    const database = await emptyPostgresDatabase()
    target = database.url
    const migrated = await run(['admin', 'migrate-to-postgres', '--data-dir', dataDir, '--database-url', target], {}, { url: null })
    expect(migrated.stderr).not.toContain('error')
    expect(migrated.code).toBe(0)
    expect(migrated.stdout).toMatch(/TABLE\s+FROM\s+SQLITE ROWS\s+POSTGRESQL ROWS/)
    expect(migrated.stdout).toMatch(/users\s+uagent\.db\s+3\s+3/)
    expect(migrated.stdout).toMatch(/conversations\s+uagent\.db\s+(\d+)\s+\1\n/)
    expect(migrated.stdout).toMatch(/messages\s+uagent\.db\s+4\s+4/)
    expect(migrated.stdout).toMatch(/api_keys\s+uagent\.db\s+1\s+1/)
    expect(migrated.stdout).toMatch(/groups\s+uagent\.db\s+1\s+1/)
    expect(migrated.stdout).toMatch(/group_members\s+uagent\.db\s+1\s+1/)
    expect(migrated.stdout).toMatch(/audit_events\s+uagent\.db\s+(\d+)\s+\1\n/)
    expect(migrated.stdout).toMatch(/external_identities\s+uagent\.db\s+1\s+1/)
    expect(migrated.stdout).toMatch(/oidc_logins\s+uagent\.db\s+1\s+1/)
    expect(migrated.stdout).toMatch(/device_codes\s+uagent\.db\s+1\s+1/)
    expect(migrated.stdout).toMatch(/analytics_records\s+analytics\.db\s+\d+\s+\d+/)
    expect(migrated.stdout).toContain("every table's row count matches")

    // Nothing silently lost: every SQLite table is either copied or named as skipped.
    const report = JSON.parse((await run(['--json', 'admin', 'migrate-to-postgres', '--data-dir', dataDir, '--database-url', (await emptyPostgresDatabase()).url], {}, { url: null })).stdout)
    const named = new Set([...report.copied.map((t: any) => t.table), ...report.skipped.map((t: any) => t.table)])
    for (const file of ['uagent.db', 'analytics.db']) {
      const db = new Database(join(dataDir, file), { readonly: true })
      const tables = db.query<{ name: string; sql: string }, []>("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations'").all()
      const virtual = tables.filter((t) => /^CREATE VIRTUAL/i.test(t.sql)).map((t) => t.name)
      for (const { name } of tables) if (!virtual.some((v) => name.startsWith(`${v}_`))) expect(named.has(name)).toBe(true)
      db.close()
    }
    for (const copied of report.copied) expect(copied.copied).toBe(copied.rows)

    expect(migrated.stdout).toContain("The data dir's JWT key (jwt-secret) is now the database's")
    // A server on that database (and the data dir, for the stores still in SQLite) serves the same
    // data, signing with the database's key as startServices() gives it.
    const pool = await openPostgres(target)
    const after = serverOn(dataDir, { postgres: pool, sharedJwtSecret: await sharedJwtSecret(pool) })
    try {
      // An access token the SQLite server signed before the move is still good.
      expect((await after.call('GET', '/auth/me', { token: made.bobToken })).json.email).toBe('bob@example.com')
      const again = await after.login('bob@example.com', 'bob-password-1')
      const listed = await after.call('GET', '/conversations', { token: again.accessToken })
      expect(listed.status).toBe(200)
      expect(listed.json.conversations.map((c: any) => c.id)).toContain(made.conversationId)
      const one = await after.call('GET', `/conversations/${made.conversationId}`, { token: again.accessToken })
      expect(one.json.messages.map((m: any) => m.content)).toEqual(['Remember the lighthouse keeper.', 'Moved without losing a word.', 'And the second question.', 'Moved without losing a word.'])
      // Search: the conversations' word index (migration 082) was made by the copy from the copied messages.
      expect(await pgCount(target, 'conversation_words')).toBe(listed.json.conversations.length)
      const found = await after.call('GET', '/conversations?q=lighthouse', { token: again.accessToken })
      expect(found.json).toMatchObject({ total: 1, conversations: [{ id: made.conversationId, match: 'Remember the lighthouse keeper.' }] })
      expect((await after.call('GET', '/conversations?q=second%20question', { token: again.accessToken })).json.total).toBe(1)
      expect((await after.call('GET', '/auth/me', { token: made.key })).json.email).toBe('bob@example.com')
      const keys = await after.call('GET', '/auth/api-keys', { token: again.accessToken })
      expect(keys.json.keys.map((k: any) => k.name)).toEqual(['laptop'])
      expect((await after.call('GET', `/agents/task/${made.taskId}`, { token: again.accessToken })).json.status).toBe('completed')
      // RAG: the collection, its chunks, and search by keywords and by vectors as before the move.
      expect(migrated.stdout).toMatch(/RAG: \d+ chunks indexed for keyword search .* and \d+ vectors copied/)
      const collections = (await after.call('GET', '/rag/collections', { token: again.accessToken })).json.collections
      expect(collections.map((c: any) => [c.name, c.documents, c.chunks])).toEqual([['handbook', 3, made.chunks]])
      const search = await after.call('POST', '/rag/search', { token: again.accessToken, body: { collection: 'handbook', query: 'croissants rye oven', limit: 3 } })
      expect(search.status).toBe(200)
      expect(search.json.results[0].id).toBe('bakery')
      expect(search.json.results.map((r: any) => r.id).sort()).toEqual(['bakery', 'harbour', 'lighthouse'])
      const lens = await after.call('POST', '/rag/search', { token: again.accessToken, body: { collection: 'handbook', query: 'lens of the lighthouse', limit: 1 } })
      expect(lens.json.results[0].id).toBe('lighthouse')
      const admin2 = await after.login()
      const dashboard = (await after.call('GET', '/analytics/dashboard', { token: admin2.accessToken })).json
      // The SQLite server's requests (its dashboard call included), and the 13 made here so far.
      expect(dashboard.overview.totalRequests).toBe(made.requests + 1 + 13)
      expect(await pgCount(target, 'conversations')).toBe(listed.json.conversations.length)
      // Groups, their members and the audit log came along.
      expect((await after.call('GET', '/groups', { token: again.accessToken })).json.groups.map((g: any) => [g.id, g.name])).toEqual([[made.groupId, 'Keepers']])
      expect(await after.services.groups.groupIdsOf(made.bobId)).toEqual([made.groupId])
      const audit = (await after.call('GET', '/admin/audit?action=group.*', { token: admin2.accessToken })).json.events
      expect(audit.map((e: any) => e.action)).toEqual(['group.member_added', 'group.created'])
      expect(audit[1]).toMatchObject({ target: made.groupId, actor: { email: 'admin@example.com' }, details: { name: 'Keepers' } })

      // Single sign-on came along. The provider now gives ann another email: only the identity
      // tied to her `sub` (external_identities) finds her account, so the sign-in started before
      // the move (oidc_logins), finished on this server, signs in the same user, creating nobody.
      const usersBefore = await pgCount(target, 'users')
      provider!.setAccounts({ ann: { email: 'ann.moved@example.com', email_verified: true, name: 'Ann', groups: [] } })
      const ann = await finishOidc(after, pendingOidc, 'ann')
      expect(ann).toMatchObject({ id: made.annId, email: 'ann@example.com' })
      expect(await pgCount(target, 'users')).toBe(usersBefore)
      expect((await pgCount(target, "users WHERE email = 'ann.moved@example.com'"))).toBe(0)
      // The CLI's device code still waits for approval (not unknown: EXPIRED_TOKEN).
      const poll = await after.call('POST', '/auth/device/token', { body: { deviceCode: made.deviceCode } })
      expect([poll.status, poll.json.code]).toEqual([400, 'AUTHORIZATION_PENDING'])
    } finally {
      await close(after)
    }
  })

  test('a PostgreSQL database that holds rows is refused, naming its tables, and left as it was', async () => {
    expect(target).not.toBe('')
    const before = await pgCount(target, 'messages')
    const refused = await run(['admin', 'migrate-to-postgres', '--data-dir', dataDir], { UAGENT_DATABASE_URL: target }, { url: null })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('the PostgreSQL database is not empty')
    expect(refused.stderr).toMatch(/messages \(\d+ rows\)/)
    expect(refused.stderr).toContain('nothing was changed')
    expect(await pgCount(target, 'messages')).toBe(before)
  })

  test('a table whose count differs after the copy undoes the whole copy and names the table', async () => {
    const database = await emptyPostgresDatabase()
    const sql = await openPostgres(database.url)
    // PostgreSQL swallowing a row (a trigger that skips it): the counts differ.
    await sql.unsafe(`CREATE FUNCTION skip_one() RETURNS trigger AS $$ BEGIN IF NEW.content = 'And the second question.' THEN RETURN NULL; END IF; RETURN NEW; END $$ LANGUAGE plpgsql;
      CREATE TRIGGER skip_one BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION skip_one()`)
    await sql.close()
    const failed = await run(['admin', 'migrate-to-postgres', '--data-dir', dataDir, '--database-url', database.url], {}, { url: null })
    expect(failed.code).toBe(1)
    expect(failed.stderr).toContain('messages: 4 rows in uagent.db but 3 in PostgreSQL after the copy; the copy was undone')
    // Tables copied before it were undone too.
    expect(await pgCount(database.url, 'conversations')).toBe(0)
    expect(await pgCount(database.url, 'api_keys')).toBe(0)
  })

  test('without a database URL it is a usage error', async () => {
    const missing = await run(['admin', 'migrate-to-postgres', '--data-dir', dataDir], {}, { url: null })
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain('--database-url or UAGENT_DATABASE_URL')
  })
})
