import { describe, expect, test } from 'bun:test'
import { buildApp, startServices } from '../../src/app'
import { ADMIN, tempDir } from '../helpers'
import { emptyPostgresDatabase, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../postgres'
import { liveServer } from './live-server'

const live = liveServer()

describe.skipIf(!TEST_DATABASE_URL)(`admin reset-password with the accounts in PostgreSQL${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('changes the account in PostgreSQL; the running server refuses its old sessions within 1 s and takes the new password', async () => {
    const database = await emptyPostgresDatabase()
    const dataDir = tempDir('cli-admin-pg')
    const services = await startServices({ dataDir, databaseUrl: database.url, adminEmail: ADMIN.email, adminPassword: ADMIN.password, env: {}, log: () => {} })
    database.track(services.postgres!)
    live.start(buildApp(services), () => {
      services.agents.close()
      services.plugins.close()
      services.postgresMonitor?.close()
      services.db.close()
      services.analyticsDb.close()
    })
    const login = async (password: string) => (await fetch(`${live.base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: ADMIN.email, password }) })).json() as Promise<any>
    const session = await login(ADMIN.password)
    expect((await live.request('GET', '/auth/me', undefined, session.accessToken)).status).toBe(200)

    const reset = await run(['--json', 'admin', 'reset-password', ADMIN.email, '--data-dir', dataDir, '--password', 'recovered-password-1'], database.url)
    expect(reset.stderr).toBe('')
    expect(JSON.parse(reset.stdout)).toMatchObject({ success: true, email: ADMIN.email, sessionsRevoked: 1 })
    const start = performance.now()
    while ((await live.request('GET', '/auth/me', undefined, session.accessToken)).status !== 401 && performance.now() - start < 3000) await Bun.sleep(20)
    expect(performance.now() - start).toBeLessThan(1000)
    expect((await login(ADMIN.password)).code).toBe('INVALID_CREDENTIALS')
    expect((await login('recovered-password-1')).user.email).toBe(ADMIN.email)

    // A replica's data dir may be empty: the accounts are in PostgreSQL.
    const missing = await run(['admin', 'reset-password', 'nobody@example.com', '--data-dir', tempDir('cli-admin-pg-empty'), '--password', 'whatever-123'], database.url)
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain('no account with email nobody@example.com in the PostgreSQL database (UAGENT_DATABASE_URL)')
    live.stop()
    await services.postgres!.close()
  }, 30_000)
})

function run(args: string[], databaseUrl: string) {
  return live.run(args, { UAGENT_DATABASE_URL: databaseUrl }, { url: null })
}
