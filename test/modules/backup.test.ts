import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync, gzipSync } from 'node:zlib'
import { buildApp, createServices } from '../../src/app'
import { restoreBackup } from '../../src/modules/admin/restore'
import { writeSnapshot } from '../../src/modules/admin/snapshot'
import { makeServer, tempDir } from '../helpers'

function fileServer(dataDir = tempDir('backup-data')) {
  return { dataDir, ...makeServer({ database: join(dataDir, 'uagent.db'), dataDir, rateLimitMax: 1_000_000 }) }
}

async function download(call: ReturnType<typeof makeServer>['app'], token: string) {
  const res = await call.handle(new Request('http://localhost/admin/backup', { method: 'POST', headers: { authorization: `Bearer ${token}` } }))
  return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) }
}

describe('online backup and verified restore', () => {
  test('a backup taken while writes go on holds every write acknowledged before it started; it restores into a working server', async () => {
    const { dataDir, app, call, login, services } = fileServer()
    mkdirSync(join(dataDir, 'plugins/hello'), { recursive: true })
    writeFileSync(join(dataDir, 'plugins/hello/plugin.json'), '{"name":"hello"}')
    mkdirSync(join(dataDir, 'audio'), { recursive: true })
    writeFileSync(join(dataDir, 'audio/clip.wav'), new Uint8Array([82, 73, 70, 70, 1, 2, 3]))
    const { accessToken: token } = await login()

    // A steady writer: each acknowledged write is noted with the time it was acknowledged.
    const acknowledged: { id: string; at: number }[] = []
    let writing = true
    const writer = (async () => {
      for (let i = 0; writing; i++) {
        const res = await call('POST', '/rag/ingest', { token, body: { collection: 'steady', documents: [{ id: `w-${i}`, content: `Steady write number ${i} about harbour ${i}.` }] } })
        if (res.status === 200) acknowledged.push({ id: `w-${i}`, at: performance.now() })
      }
    })()
    while (acknowledged.length < 10) await Bun.sleep(5)
    // The request records are written to analytics.db by their own thread: those stored before the backup are in it.
    await services.recorder.settle()
    const recorded = services.analyticsDb.query<{ n: number }, []>("SELECT count(*) AS n FROM analytics_requests WHERE route = '/rag/ingest'").get()!.n
    expect(recorded).toBeGreaterThanOrEqual(10)
    const started = performance.now()
    const backup = await download(app, token)
    writing = false
    await writer
    expect(backup.status).toBe(200)
    expect(backup.headers.get('content-type')).toBe('application/gzip')
    expect(backup.headers.get('content-disposition')).toMatch(/attachment; filename="uagent-backup-.*\.tar\.gz"/)
    const before = acknowledged.filter((write) => write.at < started).map((write) => write.id)
    expect(before.length).toBeGreaterThanOrEqual(10)
    // The archive was made in backups/ and removed once sent.
    expect(readdirSync(join(dataDir, 'backups')).filter((name) => !name.startsWith('.'))).toEqual([])
    expect(readdirSync(join(dataDir, 'backups'))).toEqual([])

    const archive = join(tempDir('backup-file'), 'backup.tar.gz')
    writeFileSync(archive, backup.bytes)
    const target = join(tempDir('backup-restore'), 'data')
    const result = await restoreBackup(archive, target)
    expect(result.previous).toBeNull()
    expect(result.manifest.files.map((file) => file.path).sort()).toEqual(['analytics.db', 'audio/clip.wav', 'jwt-secret', 'plugins/hello/plugin.json', 'uagent.db'])
    expect(readFileSync(join(target, 'plugins/hello/plugin.json'), 'utf8')).toBe('{"name":"hello"}')
    expect(readFileSync(join(target, 'jwt-secret'), 'utf8')).toBe(readFileSync(join(dataDir, 'jwt-secret'), 'utf8'))

    const check = new Database(join(target, 'uagent.db'), { readonly: true })
    expect(check.query('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' })
    check.close()
    const records = new Database(join(target, 'analytics.db'), { readonly: true })
    expect(records.query<{ n: number }, []>("SELECT count(*) AS n FROM analytics_requests WHERE route = '/rag/ingest'").get()!.n).toBeGreaterThanOrEqual(recorded)
    records.close()
    services.db.close()

    // The restored data dir runs a server: the same key (an old token still works), every acknowledged write there.
    const restored = createServices({ dataDir: target, env: {}, log: () => {} })
    const restoredApp = buildApp(restored)
    const me = await restoredApp.handle(new Request('http://localhost/auth/me', { headers: { authorization: `Bearer ${token}` } }))
    expect(me.status).toBe(200)
    const ids = new Set(
      restored.db
        .query<{ doc_id: string }, []>('SELECT d.doc_id FROM rag_documents d JOIN rag_collections c ON c.id = d.collection_id WHERE c.name = \'steady\'')
        .all()
        .map((row) => row.doc_id),
    )
    for (const id of before) expect(ids.has(id)).toBe(true)
    const search = await restoredApp.handle(
      new Request('http://localhost/rag/search', {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ collection: 'steady', query: `harbour ${before[3]!.slice(2)}`, limit: 3 }),
      }),
    )
    expect(((await search.json()) as { results: { id: string }[] }).results.map((r) => r.id)).toContain(before[3]!)
    restored.db.close()
  }, 60_000)

  test('a tampered archive (one byte changed) is refused and the data dir is left as it was', async () => {
    const { app, login, services } = fileServer()
    const { accessToken: token } = await login()
    const backup = await download(app, token)
    services.db.close()
    const folder = tempDir('backup-tamper')
    const target = join(folder, 'data')
    mkdirSync(target)
    writeFileSync(join(target, 'marker'), 'the current data')

    // One byte of the compressed file: gzip's own check fails.
    const outer = backup.bytes.slice()
    outer[Math.floor(outer.length / 2)]! ^= 0xff
    writeFileSync(join(folder, 'outer.tar.gz'), outer)
    await expect(restoreBackup(join(folder, 'outer.tar.gz'), target)).rejects.toThrow(/damaged|checksum/)

    // One byte of the database inside, re-compressed: the manifest's checksum fails.
    const tar = gunzipSync(backup.bytes)
    tar[512 + 2048]! ^= 0x01
    writeFileSync(join(folder, 'inner.tar.gz'), gzipSync(tar))
    await expect(restoreBackup(join(folder, 'inner.tar.gz'), target)).rejects.toThrow('uagent.db does not match its checksum')

    expect(readdirSync(target)).toEqual(['marker'])
    expect(readdirSync(folder).sort()).toEqual(['data', 'inner.tar.gz', 'outer.tar.gz'])
  })

  test('restore keeps the current data dir aside, renamed, never deleted', async () => {
    const { app, login, services, dataDir } = fileServer()
    const { accessToken: token } = await login()
    const backup = await download(app, token)
    services.db.close()
    writeFileSync(join(dataDir, 'marker'), 'written after the backup')
    const archive = join(tempDir('backup-aside'), 'b.tar.gz')
    writeFileSync(archive, backup.bytes)
    const result = await restoreBackup(archive, dataDir)
    expect(result.previous).toStartWith(`${dataDir}.before-restore-`)
    expect(readFileSync(join(result.previous!, 'marker'), 'utf8')).toBe('written after the backup')
    expect(existsSync(join(dataDir, 'marker'))).toBe(false)
    expect(existsSync(join(dataDir, 'uagent.db'))).toBe(true)
    // The renamed folder sits beside the data dir in the temp dir: the test removes it itself.
    rmSync(result.previous!, { recursive: true, force: true })
  })

  test('restore refuses a data dir whose server.pid names a running process', async () => {
    const { app, login, services, dataDir } = fileServer()
    const { accessToken: token } = await login()
    const backup = await download(app, token)
    services.db.close()
    writeFileSync(join(dataDir, 'server.pid'), String(process.pid))
    const archive = join(tempDir('backup-live'), 'b.tar.gz')
    writeFileSync(archive, backup.bytes)
    await expect(restoreBackup(archive, dataDir)).rejects.toThrow(`a server (pid ${process.pid}) is running on ${dataDir}: stop it first`)
    expect(existsSync(join(dataDir, 'uagent.db'))).toBe(true)
  })

  test('an archive from a newer schema is refused', async () => {
    const { dataDir, services } = fileServer()
    services.db.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', '2030-01-01')")
    const folder = tempDir('backup-future')
    const archive = join(folder, 'future.tar.gz')
    await writeSnapshot({ dataDir, dbPath: join(dataDir, 'uagent.db'), outFile: archive, serverVersion: '9.9.9' })
    services.db.close()
    await expect(restoreBackup(archive, join(folder, 'data'))).rejects.toThrow('schema version 999')
    expect(existsSync(join(folder, 'data'))).toBe(false)
  })

  test('backups are admin-only; GET /admin/backups lists the kept ones, newest first; the schedule keeps the newest N', async () => {
    const { call, login, userSession, services } = fileServer()
    const { accessToken: admin } = await login()
    const user = await userSession('plain@example.com')
    expect((await call('POST', '/admin/backup', { token: user.accessToken })).status).toBe(403)
    expect((await call('GET', '/admin/backups', { token: user.accessToken })).status).toBe(403)
    expect((await call('POST', '/admin/backup')).status).toBe(401)
    const first = await services.backups!.create('uagent-backup-2026-01-01T00-00-00-000Z.tar.gz')
    const second = await services.backups!.create('uagent-backup-2026-01-02T00-00-00-000Z.tar.gz')
    const listed = await call('GET', '/admin/backups', { token: admin })
    expect(listed.status).toBe(200)
    expect(listed.json.backups.map((b: any) => b.name)).toEqual(expect.arrayContaining([first.name, second.name]))
    expect(listed.json.backups[0].size).toBeGreaterThan(0)
    services.backups!.prune(1)
    expect((await call('GET', '/admin/backups', { token: admin })).json.backups).toHaveLength(1)
    services.db.close()
  })

  test('a downloaded backup and a scheduled one are in the audit log (backup.created)', async () => {
    const dataDir = tempDir('backup-audit')
    const { app, login, services } = makeServer({ database: join(dataDir, 'uagent.db'), dataDir, backupIntervalSeconds: 1 })
    const { accessToken: token } = await login()
    expect((await download(app, token)).status).toBe(200)
    services.backups!.start()
    try {
      let events: { actor: unknown; target: string | null; details: Record<string, unknown> }[] = []
      for (let i = 0; i < 300 && events.length < 2; i++) {
        events = (await services.audit.list({ action: 'backup.created' })).events
        await Bun.sleep(50)
      }
      const [scheduled, downloaded] = events.slice(-2)
      expect(downloaded).toMatchObject({ actor: { email: 'admin@example.com' }, details: { via: 'download' } })
      expect(downloaded!.target).toMatch(/^uagent-backup-.*\.tar\.gz$/)
      expect(scheduled).toMatchObject({ actor: null, details: { via: 'schedule' } })
      expect(scheduled!.details.size).toBeGreaterThan(0)
    } finally {
      services.backups!.stop()
      await services.audit.close()
      services.db.close()
    }
  })

  test('an in-memory server has nothing to back up: 409, never a 500', async () => {
    const { call, login } = makeServer()
    const { accessToken: token } = await login()
    const res = await call('POST', '/admin/backup', { token })
    expect(res.status).toBe(409)
    expect(res.json.code).toBe('CONFLICT')
  })

  test('UAGENT_BACKUP_INTERVAL takes seconds or a unit; a bad one names the variable', () => {
    const { services } = makeServer({ env: { UAGENT_BACKUP_INTERVAL: '6h', UAGENT_BACKUP_KEEP: '3' } })
    expect(services.config.backupIntervalSeconds).toBe(21_600)
    expect(services.config.backupKeep).toBe(3)
    expect(() => makeServer({ env: { UAGENT_BACKUP_INTERVAL: 'often' } })).toThrow('UAGENT_BACKUP_INTERVAL')
  })
})

