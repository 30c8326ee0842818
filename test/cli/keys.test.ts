import { describe, expect, test } from 'bun:test'
import { ADMIN, makeServer } from '../helpers'
import { liveServer } from './live-server'

const { run } = liveServer(makeServer().app)

describe('uagent keys', () => {
  test('create prints the key once, list shows it without the secret, revoke stops it', async () => {
    expect((await run(['login', '--email', ADMIN.email, '--password', ADMIN.password])).code).toBe(0)

    const created = await run(['keys', 'create', 'my', 'laptop'])
    expect(created.code).toBe(0)
    const key = created.stdout.trim()
    expect(key).toMatch(/^uak_[A-Za-z0-9_-]{32}$/)
    expect(created.stderr).toContain('cannot be shown again')

    const json = await run(['--json', 'keys', 'create', 'CI', '--expires', '90d'])
    expect(json.code).toBe(0)
    const body = JSON.parse(json.stdout)
    expect(body).toMatchObject({ name: 'CI' })
    expect(Date.parse(body.expiresAt) - Date.parse(body.createdAt)).toBe(90 * 86_400_000)

    const listed = await run(['keys', 'list'])
    expect(listed.code).toBe(0)
    expect(listed.stdout).toContain('my laptop')
    expect(listed.stdout).toContain('CI')
    expect(listed.stdout).toContain(key.slice(0, 12))
    expect(listed.stdout).not.toContain(key)
    const listedJson = JSON.parse((await run(['--json', 'keys', 'list'])).stdout)
    expect(listedJson.total).toBe(2)
    const laptop = listedJson.keys.find((k: any) => k.name === 'my laptop')

    // The key itself drives the CLI, as a token.
    const me = await run(['--json', '--token', key, 'conversations', 'list'])
    expect(me.code).toBe(0)
    expect(JSON.parse(me.stdout)).toMatchObject({ total: 0 })

    const revoked = await run(['keys', 'revoke', laptop.id])
    expect(revoked.code).toBe(0)
    expect(revoked.stdout).toContain(`API key ${laptop.id} revoked`)
    const refused = await run(['conversations', 'list'], { UAGENT_TOKEN: key })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('UNAUTHORIZED')
    const again = await run(['keys', 'revoke', laptop.id])
    expect(again.code).toBe(1)
    expect(again.stderr).toContain('NOT_FOUND')
    expect((await run(['keys', 'create'])).code).toBe(2)
  })
})
