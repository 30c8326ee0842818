import { describe, expect, test } from 'bun:test'
import { ADMIN, makeServer } from '../helpers'
import { liveServer } from './live-server'

const { run, api } = liveServer(makeServer().app, { login: true })

describe('uagent groups and uagent admin audit', () => {
  test('create, list, add, show, rename, remove, delete; --json prints the body; members see their groups, only admins manage', async () => {
    await api('POST', '/auth/users', { email: 'ann@example.com', password: 'ann-password-1', roles: ['user'] })
    const bob = (await api('POST', '/auth/users', { email: 'bob@example.com', password: 'bob-password-1', roles: ['user'] })).user

    const created = await run(['groups', 'create', 'Engineering', '--description', 'builders'])
    expect(created.code).toBe(0)
    expect(created.stdout).toContain('Group "Engineering" created')
    const json = JSON.parse((await run(['--json', 'groups', 'create', 'Sales'])).stdout)
    expect(json).toMatchObject({ name: 'Sales', source: 'local', members: 0 })
    const dup = await run(['groups', 'create', 'Sales'])
    expect(dup.code).toBe(1)
    expect(dup.stderr).toContain('CONFLICT')

    const added = await run(['--json', 'groups', 'add', 'Engineering', 'ann@example.com', bob.id])
    expect(added.code).toBe(0)
    expect(JSON.parse(added.stdout).members.map((m: { email: string }) => m.email)).toEqual(['ann@example.com', 'bob@example.com'])
    const shown = await run(['groups', 'show', 'Engineering'])
    expect(shown.code).toBe(0)
    expect(shown.stdout).toContain('bob@example.com')
    expect(shown.stdout).toContain('builders')

    const listed = await run(['groups', 'list'])
    expect(listed.stdout).toContain('Engineering')
    expect(listed.stdout).toMatch(/Engineering\s+2\s+local/)

    expect((await run(['groups', 'rename', 'Engineering', 'Platform'])).code).toBe(0)
    const removed = await run(['--json', 'groups', 'remove', 'Platform', 'bob@example.com'])
    expect(removed.code).toBe(0)
    expect(JSON.parse(removed.stdout).members.map((m: { email: string }) => m.email)).toEqual(['ann@example.com'])
    expect((await run(['groups', 'remove', 'Platform', 'bob@example.com'])).code).toBe(1)
    expect((await run(['groups', 'rename', 'Platform'])).code).toBe(2)
    expect((await run(['groups', 'delete', 'Sales'])).code).toBe(0)
    const missing = await run(['groups', 'show', 'Sales'])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain('NOT_FOUND')

    // A member sees their group; managing is for admins.
    const login = await api('POST', '/auth/login', { email: 'ann@example.com', password: 'ann-password-1' })
    const asAnn = { UAGENT_TOKEN: login.accessToken }
    const mine = JSON.parse((await run(['--json', 'groups', 'list'], asAnn)).stdout)
    expect(mine.groups.map((g: { name: string }) => g.name)).toEqual(['Platform'])
    const refused = await run(['groups', 'create', 'Mine'], asAnn)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('FORBIDDEN')

  }, 120_000)

  test('admin audit (after the group commands above): filters, ages, pages with --cursor, a table without --json; admins only', async () => {
    const login = await api('POST', '/auth/login', { email: 'ann@example.com', password: 'ann-password-1' })
    const asAnn = { UAGENT_TOKEN: login.accessToken }
    const audit = JSON.parse((await run(['--json', 'admin', 'audit', '--action', 'group.*', '--since', '1h'])).stdout)
    expect(audit.events.map((e: { action: string }) => e.action).reverse()).toEqual([
      'group.created',
      'group.created',
      'group.member_added',
      'group.member_added',
      'group.updated',
      'group.member_removed',
      'group.deleted',
    ])
    expect(audit.events[0].actor.email).toBe(ADMIN.email)
    const paged = JSON.parse((await run(['--json', 'admin', 'audit', '--action', 'group.*', '--limit', '5'])).stdout)
    expect(paged.events).toHaveLength(5)
    const rest = JSON.parse((await run(['--json', 'admin', 'audit', '--action', 'group.*', '--limit', '5', '--cursor', paged.nextCursor])).stdout)
    expect(rest.events).toHaveLength(2)
    expect(rest.nextCursor).toBeNull()
    const human = await run(['admin', 'audit', '--actor', 'ann@example.com'])
    expect(human.code).toBe(0)
    expect(human.stdout).toContain('auth.login')
    expect(human.stdout).toContain('ann@example.com')
    expect((await run(['admin', 'audit', '--limit', 'many'])).code).toBe(2)
    expect((await run(['admin', 'audit'], asAnn)).code).toBe(1)
  }, 60_000)
})
