import { afterAll, describe, expect, test } from 'bun:test'
import { openDatabase } from '../../../src/db'
import type { Postgres } from '../../../src/db/postgres'
import { AuditLog } from '../../../src/modules/audit/service'
import type { AuditFilter, AuditRow, AuditStore } from '../../../src/modules/audit/store'
import { SqliteAuditStore } from '../../../src/modules/audit/store.sqlite'
import { PostgresAuditStore } from '../../../src/modules/audit/store.postgres'
import { ADMIN, makeServer } from '../../helpers'
import { freshPostgres, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../../postgres'

const pools: Postgres[] = []
afterAll(async () => {
  for (const pool of pools) await pool.close()
})

type Event = { id: string; at: string; actor: { id: string; email: string } | null; ip: string | null; action: string; target: string | null; details: Record<string, unknown>; requestId: string | null }

function describeAudit(kind: 'SQLite' | 'PostgreSQL') {
  const skip = kind === 'PostgreSQL' && !TEST_DATABASE_URL
  const setup = async () => {
    let postgres: Postgres | undefined
    if (kind === 'PostgreSQL') {
      postgres = await freshPostgres()
      pools.push(postgres)
    }
    const server = makeServer(postgres ? { postgres } : {})
    return { ...server, postgres }
  }

  ;(skip ? describe.skip : describe)(`audit log over HTTP (${kind}${skip ? `: ${POSTGRES_SKIPPED}` : ''})`, () => {
    test('account, key and group actions are recorded with actor, address and request id; never a password, token or key', async () => {
      const { call, login, services, postgres } = await setup()
      const failed = await call('POST', '/auth/login', { body: { email: ADMIN.email, password: 'wrong-password-1' } })
      expect(failed.status).toBe(401)
      const admin = await login()
      const created = await call('POST', '/auth/users', { token: admin.accessToken, body: { email: 'ann@example.com', password: 'ann-password-1', roles: ['user'] } })
      const annId = created.json.user.id
      const ann = await login('ann@example.com', 'ann-password-1')
      await call('POST', `/auth/users/${annId}/disable`, { token: admin.accessToken })
      await call('POST', `/auth/users/${annId}/enable`, { token: admin.accessToken })
      await call('POST', `/auth/users/${annId}/unlock`, { token: admin.accessToken })
      await call('POST', `/auth/users/${annId}/password`, { token: admin.accessToken, body: { newPassword: 'ann-reset-password-2' } })
      const annAgain = await login('ann@example.com', 'ann-reset-password-2')
      const changed = await call('POST', '/auth/password', { token: annAgain.accessToken, body: { currentPassword: 'ann-reset-password-2', newPassword: 'ann-own-password-3' } })
      expect(changed.status).toBe(200)
      const key = await call('POST', '/auth/api-keys', { token: admin.accessToken, body: { name: 'laptop' } })
      expect(key.status).toBe(200)
      await call('DELETE', `/auth/api-keys/${key.json.id}`, { token: admin.accessToken })
      const group = await call('POST', '/groups', { token: admin.accessToken, body: { name: 'Team' } })
      const added = await call('POST', `/groups/${group.json.id}/members`, { token: admin.accessToken, body: { email: 'ann@example.com' } })
      await call('DELETE', `/groups/${group.json.id}/members/${annId}`, { token: admin.accessToken })
      await call('PATCH', `/groups/${group.json.id}`, { token: admin.accessToken, body: { name: 'Team B' } })
      await call('DELETE', `/groups/${group.json.id}`, { token: admin.accessToken })
      await call('DELETE', `/auth/users/${annId}`, { token: admin.accessToken })
      const logout = await call('POST', '/auth/logout', { token: admin.accessToken })
      expect(logout.status).toBe(200)

      const admin2 = await login()
      const page = await call('GET', '/admin/audit?limit=500', { token: admin2.accessToken })
      expect(page.status).toBe(200)
      const events: Event[] = page.json.events
      // Newest first, ids in order.
      expect(events.map((e) => e.id)).toEqual([...events.map((e) => e.id)].sort().reverse())
      const actions = events.map((e) => e.action).reverse()
      expect(actions).toEqual([
        'auth.login_failed',
        'auth.login',
        'user.created',
        'auth.login',
        'user.disabled',
        'user.enabled',
        'user.unlocked',
        'user.password_reset',
        'auth.login',
        'auth.password_changed',
        'apikey.created',
        'apikey.revoked',
        'group.created',
        'group.member_added',
        'group.member_removed',
        'group.updated',
        'group.deleted',
        'user.deleted',
        'auth.logout',
        'auth.login',
      ])
      const byAction = (action: string) => events.find((e) => e.action === action)!
      expect(byAction('auth.login_failed')).toMatchObject({ actor: null, target: ADMIN.email, details: { reason: 'INVALID_CREDENTIALS', via: 'password' }, ip: 'local' })
      expect(byAction('user.created')).toMatchObject({ actor: { id: admin.user.id, email: ADMIN.email }, target: annId, details: { email: 'ann@example.com', roles: ['user'] } })
      expect(byAction('group.member_added')).toMatchObject({ target: group.json.id, details: { userId: annId, email: 'ann@example.com', group: 'Team' } })
      expect(byAction('group.updated').details).toMatchObject({ name: 'Team B', previousName: 'Team' })
      expect(byAction('auth.password_changed')).toMatchObject({ actor: { id: annId }, target: annId })
      // The request id is the one the action's response carried.
      expect(byAction('group.member_added').requestId).toBe(added.headers.get('x-request-id'))
      expect(byAction('auth.logout').requestId).toBe(logout.headers.get('x-request-id'))
      // No secret anywhere: passwords, tokens, the API key.
      const everything = page.text
      for (const secret of ['wrong-password-1', ADMIN.password, 'ann-password-1', 'ann-reset-password-2', 'ann-own-password-3', key.json.key, admin.accessToken, admin.refreshToken, ann.refreshToken, ann.accessToken]) {
        expect(everything).not.toContain(secret)
      }
      // The rows as stored, too.
      const stored: { details: string }[] = postgres ? [...(await postgres`SELECT details FROM audit_events`)] : services.db.query<{ details: string }, []>('SELECT details FROM audit_events').all()
      expect(stored.length).toBe(events.length)
      expect(JSON.stringify(stored)).not.toContain(key.json.key)
      expect(JSON.stringify(stored)).not.toContain('ann-own-password-3')
    })

    test('filters (action family, actor, target, time) and cursor paging; admin only; bad input is 400', async () => {
      const { call, login, userSession } = await setup()
      const admin = (await login()).accessToken
      const ann = await userSession('ann@example.com', 'ann-password-1')
      const names = ['a', 'b', 'c', 'd', 'e', 'f', 'g']
      for (const name of names) await call('POST', '/groups', { token: admin, body: { name } })
      const groups = await call('GET', '/admin/audit?action=group.*', { token: admin })
      expect(groups.json.events.map((e: Event) => e.details.name)).toEqual([...names].reverse())
      expect(groups.json.nextCursor).toBeNull()
      expect((await call('GET', '/admin/audit?action=group.created', { token: admin })).json.events).toHaveLength(7)
      expect((await call('GET', '/admin/audit?action=group', { token: admin })).json.events).toHaveLength(0)

      // Pages of 3 cover all 7, newest first, without overlap.
      const seen: string[] = []
      let cursor: string | null = null
      let pages = 0
      do {
        const res: { json: { events: Event[]; nextCursor: string | null } } = await call('GET', `/admin/audit?action=group.*&limit=3${cursor ? `&cursor=${cursor}` : ''}`, { token: admin })
        seen.push(...res.json.events.map((e) => e.details.name as string))
        cursor = res.json.nextCursor
        pages++
      } while (cursor)
      expect(pages).toBe(3)
      expect(seen).toEqual([...names].reverse())

      const byActor = await call('GET', `/admin/audit?actor=${encodeURIComponent('ann@example.com')}`, { token: admin })
      expect(byActor.json.events.map((e: Event) => e.action)).toEqual(['auth.login'])
      const annId = byActor.json.events[0].actor.id
      expect((await call('GET', `/admin/audit?actor=${annId}`, { token: admin })).json.events).toHaveLength(1)
      expect((await call('GET', `/admin/audit?target=${annId}&action=user.created`, { token: admin })).json.events).toHaveLength(1)
      const future = new Date(Date.now() + 60_000).toISOString()
      expect((await call('GET', `/admin/audit?since=${future}`, { token: admin })).json.events).toEqual([])
      expect((await call('GET', `/admin/audit?until=2000-01-01`, { token: admin })).json.events).toEqual([])

      expect((await call('GET', '/admin/audit', { token: ann.accessToken })).status).toBe(403)
      expect((await call('GET', '/admin/audit')).status).toBe(401)
      for (const [query, field] of [['since=yesterday-ish', 'since'], ['cursor=not-a-cursor', 'cursor'], ['limit=0', 'limit'], ['limit=501', 'limit']] as const) {
        const bad = await call('GET', `/admin/audit?${query}`, { token: admin })
        expect(bad.status).toBe(400)
        expect(bad.json.code).toBe('VALIDATION_ERROR')
        expect(bad.json.message).toContain(field)
      }
      // Append-only: no route deletes or changes events.
      expect((await call('DELETE', '/admin/audit', { token: admin })).status).toBe(405)
    })
  })
}

describeAudit('SQLite')
describeAudit('PostgreSQL')

describe('AuditLog', () => {
  const row = (id: string, at: string): AuditRow => ({ id, at, actor_id: null, actor_email: null, ip: null, action: 'x.y', target: null, details: '{}', request_id: null })

  test('record() writes nothing by itself: events reach the database at the flush (off the request path), and close() flushes', async () => {
    const db = openDatabase(':memory:')
    const log = new AuditLog(new SqliteAuditStore(db), { retentionDays: 365 })
    log.record({ action: 'group.created', target: 'g1', details: { name: 'g', password: 'hunter2' } })
    const count = () => db.query<{ n: number }, []>('SELECT count(*) AS n FROM audit_events').get()!.n
    expect(count()).toBe(0)
    expect(log.pendingCount).toBe(1)
    await log.close()
    expect(count()).toBe(1)
    expect(db.query<{ details: string }, []>('SELECT details FROM audit_events').get()!.details).toBe('{"name":"g","password":"[redacted]"}')
    db.close()
  })

  test('a batch the database refuses is kept and written at the next flush', async () => {
    const rows: AuditRow[] = []
    let failing = true
    const store: AuditStore = {
      // Throws at once, as bun:sqlite does on a closed database.
      insertMany: (batch) => {
        if (failing) throw new Error('database lost')
        rows.push(...batch)
      },
      list: (_filter: AuditFilter) => [],
      prune: () => 0,
    }
    const lines: string[] = []
    const log = new AuditLog(store, { retentionDays: 1, log: (line) => lines.push(line) })
    log.record({ action: 'a.b' })
    await log.flush()
    await Promise.all([log.flush(), log.flush()])
    // The event loop still turns (a failing flush does not retry itself in a loop).
    await Bun.sleep(5)
    expect(rows).toHaveLength(0)
    expect(log.pendingCount).toBe(1)
    expect(lines[0]).toContain('kept for the next try')
    failing = false
    log.record({ action: 'c.d' })
    await log.flush()
    expect(rows.map((r) => r.action)).toEqual(['a.b', 'c.d'])
  })

  test('retention deletes events older than UAGENT_AUDIT_RETENTION_DAYS and keeps the rest (both backends)', async () => {
    const day = 86_400_000
    const now = Date.now()
    const stores: [string, AuditStore, () => Promise<number>][] = []
    const db = openDatabase(':memory:')
    stores.push(['sqlite', new SqliteAuditStore(db), async () => db.query<{ n: number }, []>('SELECT count(*) AS n FROM audit_events').get()!.n])
    if (TEST_DATABASE_URL) {
      const postgres = await freshPostgres()
      pools.push(postgres)
      stores.push(['postgres', new PostgresAuditStore(postgres), async () => Number((await postgres`SELECT count(*) AS n FROM audit_events`)[0].n)])
    }
    for (const [, store, count] of stores) {
      // A backlog (the database was away) is written in one go: more rows than one PostgreSQL statement takes parameters for.
      const backlog = Array.from({ length: 8000 }, (_, i) => row(Bun.randomUUIDv7('hex', now - 50 * day + i), new Date(now - 50 * day + i).toISOString()))
      await store.insertMany(backlog)
      expect(await count()).toBe(8000)
      await store.insertMany([
        row(Bun.randomUUIDv7('hex', now - 40 * day), new Date(now - 40 * day).toISOString()),
        row(Bun.randomUUIDv7('hex', now - 20 * day), new Date(now - 20 * day).toISOString()),
        row(Bun.randomUUIDv7('hex', now), new Date(now).toISOString()),
      ])
      const log = new AuditLog(store, { retentionDays: 30 })
      expect(await log.prune(now)).toBe(8001)
      expect(await count()).toBe(2)
    }
    db.close()
  })
})

test('UAGENT_AUDIT_RETENTION_DAYS: 365 by default, checked', async () => {
  const { loadConfig } = await import('../../../src/config')
  expect(loadConfig({}).auditRetentionDays).toBe(365)
  expect(loadConfig({ UAGENT_AUDIT_RETENTION_DAYS: '30' }).auditRetentionDays).toBe(30)
  expect(() => loadConfig({ UAGENT_AUDIT_RETENTION_DAYS: '0' })).toThrow('UAGENT_AUDIT_RETENTION_DAYS')
})
