import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { openPostgres } from '../../src/db/postgres'
import { BackupService } from '../../src/modules/admin/service'
import { liveServer } from '../cli/live-server'
import { makeServer, tempDir } from '../helpers'
import { emptyPostgresDatabase, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../postgres'

setDefaultTimeout(120_000)

const { run } = liveServer()
const suite = TEST_DATABASE_URL ? describe : describe.skip

/** A server on a data dir and a PostgreSQL database, as UAGENT_DATABASE_URL runs it. */
async function serverOn(dataDir: string, url: string, customize?: Parameters<typeof makeServer>[1]) {
  return makeServer({ database: join(dataDir, 'uagent.db'), dataDir, jwtSecret: 'b'.repeat(48), postgres: await openPostgres(url) }, customize)
}

async function close(server: Awaited<ReturnType<typeof serverOn>>) {
  await server.services.recorder.close()
  server.services.analyticsDb.close()
  server.services.db.close()
  await server.services.postgres?.close({ timeout: 1 })
}

async function download(server: Awaited<ReturnType<typeof serverOn>>, token: string) {
  const res = await server.app.handle(new Request('http://localhost/admin/backup', { method: 'POST', headers: { authorization: `Bearer ${token}` } }))
  return { status: res.status, bytes: new Uint8Array(await res.arrayBuffer()) }
}

suite(`backups of a server on PostgreSQL${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  // (pg_dump and pg_restore come with Debian's postgresql-client, which the postgresql package installs.)
  const withTools = Bun.which('pg_dump') && Bun.which('pg_restore') ? test : test.skip
  withTools(`POST /admin/backup holds a pg_dump of the database; uagent admin restore puts the data dir and the database back as they were${Bun.which('pg_dump') && Bun.which('pg_restore') ? '' : ' (skipped: pg_dump or pg_restore is not installed)'}`, async () => {
    const dataDir = tempDir('pg-backup-data')
    const { url } = await emptyPostgresDatabase()
    const server = await serverOn(dataDir, url)
    const admin = await server.login()
    const kept = await server.call('POST', '/chat', { token: admin.accessToken, body: { message: 'Keep this one.' } })
    expect(kept.status).toBe(200)
    const keptId = kept.json.metadata.conversationId
    const key = (await server.call('POST', '/auth/api-keys', { token: admin.accessToken, body: { name: 'before the backup' } })).json.key

    const backup = await download(server, admin.accessToken)
    expect(backup.status).toBe(200)
    const archive = join(tempDir('pg-backup-file'), 'backup.tar.gz')
    writeFileSync(archive, backup.bytes)

    // After the backup: that conversation deleted, another made, the key revoked.
    expect((await server.call('DELETE', `/conversations/${keptId}`, { token: admin.accessToken })).status).toBe(200)
    const later = (await server.call('POST', '/chat', { token: admin.accessToken, body: { message: 'Made after the backup.' } })).json.metadata.conversationId
    const keys = (await server.call('GET', '/auth/api-keys', { token: admin.accessToken })).json.keys
    expect((await server.call('DELETE', `/auth/api-keys/${keys[0].id}`, { token: admin.accessToken })).status).toBe(200)
    expect((await server.call('GET', '/auth/me', { token: key })).status).toBe(401)
    await close(server)

    // A PostgreSQL backup restored without a database to restore into: refused, nothing changed.
    const refused = await run(['admin', 'restore', archive, '--data-dir', dataDir], {}, { url: null })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('name the database to restore it into with --database-url or UAGENT_DATABASE_URL')

    const restored = await run(['admin', 'restore', archive, '--data-dir', dataDir], { UAGENT_DATABASE_URL: url }, { url: null })
    expect(restored.stderr).toBe('')
    expect(restored.code).toBe(0)
    expect(restored.stdout).toContain('Its PostgreSQL dump was restored into the database with pg_restore')
    expect(existsSync(join(dataDir, 'postgres.dump'))).toBe(false)

    const again = await serverOn(dataDir, url)
    try {
      const token = (await again.login()).accessToken
      const listed = (await again.call('GET', '/conversations', { token })).json.conversations.map((c: any) => c.id)
      expect(listed).toContain(keptId)
      expect(listed).not.toContain(later)
      expect((await again.call('GET', `/conversations/${keptId}`, { token })).json.messages[0].content).toBe('Keep this one.')
      expect((await again.call('GET', '/auth/me', { token: key })).status).toBe(200)
    } finally {
      await close(again)
    }
  })

  test('without pg_dump on the host, POST /admin/backup answers 503 TOOL_UNAVAILABLE saying what to install', async () => {
    const dataDir = tempDir('pg-backup-nodump')
    const { url } = await emptyPostgresDatabase()
    const server = await serverOn(dataDir, url, (services) => {
      services.backups = new BackupService({
        dataDir,
        dbPath: join(dataDir, 'uagent.db'),
        analyticsPath: join(dataDir, 'analytics.db'),
        intervalSeconds: 0,
        keep: 1,
        log: () => {},
        postgres: services.postgres,
        pgDump: 'pg_dump-which-is-not-installed',
      })
    })
    try {
      const admin = await server.login()
      const res = await server.call('POST', '/admin/backup', { token: admin.accessToken })
      expect(res.status).toBe(503)
      expect(res.json).toMatchObject({ error: true, code: 'TOOL_UNAVAILABLE' })
      expect(res.json.message).toContain('pg_dump is not installed')
      expect(res.json.message).toContain('postgresql-client')
    } finally {
      await close(server)
    }
  })
})
