import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { makeServer, tempDir } from '../helpers'

/** Makes the database full the way a full disk does: SQLite refuses to grow it (SQLITE_FULL). */
function fill(db: import('bun:sqlite').Database) {
  db.run('CREATE TABLE IF NOT EXISTS filler (x BLOB)')
  const { n } = db.query<{ n: number }, []>('SELECT page_count AS n FROM pragma_page_count').get()!
  db.run(`PRAGMA max_page_count = ${n}`)
  // Use up the free pages too, so that every write that needs a new page fails.
  try {
    for (;;) db.run('INSERT INTO filler VALUES (randomblob(512))')
  } catch (error) {
    expect((error as { code?: string }).code).toBe('SQLITE_FULL')
  }
}

describe('a full disk', () => {
  // PRAGMA max_page_count refuses writes that need a new page (the small ones that fit in a page
  // still succeed); the tmpfs test below fills a real file system, where every write fails.
  test('writes that need room answer 507 INSUFFICIENT_STORAGE, reads answer 200, /health is degraded; room made, writes work again', async () => {
    const dataDir = tempDir('full')
    const { call, login, services } = makeServer({ database: join(dataDir, 'uagent.db'), dataDir })
    const { accessToken: token } = await login()
    const ingested = await call('POST', '/rag/ingest', { token, body: { collection: 'docs', documents: [{ id: 'kept', content: 'The lighthouse keeper logs every passing ship.' }] } })
    expect(ingested.json.ingested).toBe(1)
    const chat = await call('POST', '/chat', { token, body: { message: 'Remember the lighthouse.' } })
    const conversationId = chat.json.metadata.conversationId
    expect((await call('GET', '/health')).json.status).toBe('healthy')

    fill(services.db)
    const writes = [
      await call('POST', '/rag/ingest', { token, body: { collection: 'docs', documents: [{ id: 'more', content: 'x '.repeat(20_000) }] } }),
      await call('POST', '/rag/ingest', { token, body: { collection: 'fresh', documents: [{ id: 'new', content: 'y '.repeat(20_000) }] } }),
      await call('POST', '/chat', { token, body: { message: 'And now a long message. '.repeat(400) } }),
    ]
    expect(writes.map((res) => res.status)).toEqual(writes.map(() => 507))
    for (const res of writes) {
      expect(res.json).toMatchObject({ error: true, code: 'INSUFFICIENT_STORAGE' })
      expect(res.json.message).toContain("server's storage is full")
      expect(res.headers.get('x-request-id')).toBe(res.json.requestId)
    }
    const search = await call('POST', '/rag/search', { token, body: { collection: 'docs', query: 'lighthouse keeper' } })
    expect(search.status).toBe(200)
    expect(search.json.results[0].id).toBe('kept')
    expect((await call('GET', `/conversations/${conversationId}`, { token })).status).toBe(200)
    expect((await call('GET', '/conversations', { token })).status).toBe(200)
    const health = await call('GET', '/health')
    expect(health.json.status).toBe('degraded')
    expect(health.json.reason).toContain('storage full')
    expect(health.json.storage.status).toBe('full')
    expect(health.json.storage.freeBytes).toBeGreaterThan(0)

    // Room is made (here: the limit raised, as when files are removed from a full disk).
    services.db.run('DROP TABLE filler')
    services.db.run('PRAGMA max_page_count = 1073741823')
    await Bun.sleep(300)
    expect((await call('GET', '/health')).json.status).toBe('healthy')
    const again = await call('POST', '/rag/ingest', { token, body: { collection: 'docs', documents: [{ id: 'more', content: 'Ships pass the lighthouse at night.' }] } })
    expect(again.status).toBe(200)
    expect((await call('PATCH', `/conversations/${conversationId}`, { token, body: { title: 'Renamed' } })).json.title).toBe('Renamed')
    expect((await call('POST', '/chat', { token, body: { message: 'hello again' } })).status).toBe(200)
    const found = await call('POST', '/rag/search', { token, body: { collection: 'docs', query: 'lighthouse keeper logs', limit: 10 } })
    expect(found.json.results.map((r: any) => r.id)).toContain('kept')
  })

  test('the free-space floor (UAGENT_MIN_FREE_MB) refuses a large ingest early with 507, before anything is written', async () => {
    const dataDir = tempDir('floor')
    // A floor no disk can meet: every large write is refused.
    const { call, login } = makeServer({ database: join(dataDir, 'uagent.db'), dataDir, env: { UAGENT_MIN_FREE_MB: '90000000' } })
    const { accessToken: token } = await login()
    const res = await call('POST', '/rag/ingest', { token, body: { collection: 'docs', documents: [{ id: 'a', content: 'some text' }] } })
    expect(res.status).toBe(507)
    expect(res.json.code).toBe('INSUFFICIENT_STORAGE')
    expect(res.json.message).toContain('free')
    expect((await call('GET', '/rag/collections', { token })).json.collections).toEqual([])
    // A plugin install is refused the same way, before anything is fetched, and leaves no plugin.
    const install = await call('POST', '/plugins/install', { token, body: { source: 'url', package: 'http://127.0.0.1:9/never-fetched.tgz', version: '1.0.0' } })
    expect(install.status).toBe(507)
    expect(install.json.code).toBe('INSUFFICIENT_STORAGE')
    expect((await call('GET', '/plugins', { token })).json.plugins.map((p: { name: string }) => p.name)).not.toContain('never-fetched')
    const health = await call('GET', '/health')
    expect(health.json.status).toBe('degraded')
    expect(health.json.reason).toContain('UAGENT_MIN_FREE_MB')
  })

  test('a full disk while a reply streams over SSE ends with an INSUFFICIENT_STORAGE error event', async () => {
    const { call, login, services } = makeServer()
    const { accessToken: token } = await login()
    fill(services.db)
    // A message long enough that storing it needs new pages.
    const res = await call('GET', `/stream?message=${encodeURIComponent('tell me a story. '.repeat(1500))}`, { token })
    if (res.status === 200) expect(res.text).toContain('"code":"INSUFFICIENT_STORAGE"')
    else expect(res.json.code).toBe('INSUFFICIENT_STORAGE')
  })

  test('on a real full file system (a small tmpfs, where the machine allows mounting one) every write is 507 until room is made', async () => {
    const mountPoint = tempDir('tmpfs')
    const mounted = Bun.spawnSync(['mount', '-t', 'tmpfs', '-o', 'size=6m', 'tmpfs', mountPoint])
    if (mounted.exitCode !== 0) {
      console.log(`skipped: cannot mount a tmpfs here (${mounted.stderr.toString().trim() || 'mount failed'}); the max_page_count test covers SQLITE_FULL`)
      return
    }
    try {
      // Ballast, removed later to make room, as an operator would delete old files.
      await Bun.write(join(mountPoint, 'ballast'), new Uint8Array(1024 * 1024))
      const { call, login, services } = makeServer({ database: join(mountPoint, 'uagent.db'), dataDir: mountPoint, env: { UAGENT_MIN_FREE_MB: '0' } })
      const { accessToken: token } = await login()
      const chat = await call('POST', '/chat', { token, body: { message: 'Remember the lighthouse.' } })
      const conversationId = chat.json.metadata.conversationId
      const acknowledged: string[] = []
      for (let i = 0; i < 400; i++) {
        const res = await call('POST', '/rag/ingest', { token, body: { collection: 'docs', documents: [{ id: `doc-${i}`, content: `Document ${i} about lighthouse number ${i}. ${'filler text '.repeat(2000)}` }] } })
        if (res.status === 200) acknowledged.push(`doc-${i}`)
        else {
          expect(res.status).toBe(507)
          expect(res.json.code).toBe('INSUFFICIENT_STORAGE')
          break
        }
      }
      expect(acknowledged.length).toBeGreaterThan(0)
      expect(acknowledged.length).toBeLessThan(400)
      const writes = [
        await call('PATCH', `/conversations/${conversationId}`, { token, body: { title: 'Renamed while full' } }),
        await call('POST', '/chat', { token, body: { message: 'hello while full '.repeat(200) } }),
        await call('POST', '/auth/users', { token, body: { email: 'full@example.com', password: 'full-password-1' } }),
      ]
      for (const res of writes) {
        expect(res.status).toBe(507)
        expect(res.json.code).toBe('INSUFFICIENT_STORAGE')
      }
      expect((await call('GET', `/conversations/${conversationId}`, { token })).status).toBe(200)
      expect((await call('POST', '/rag/search', { token, body: { collection: 'docs', query: 'lighthouse number 0' } })).status).toBe(200)
      expect((await call('GET', '/health')).json.status).toBe('degraded')

      await Bun.file(join(mountPoint, 'ballast')).delete()
      const renamed = await call('PATCH', `/conversations/${conversationId}`, { token, body: { title: 'Renamed after' } })
      expect(renamed.status).toBe(200)
      for (const id of [acknowledged[0]!, acknowledged.at(-1)!]) {
        const n = id.slice(4)
        const found = await call('POST', '/rag/search', { token, body: { collection: 'docs', query: `Document ${n} lighthouse number ${n}`, limit: 5 } })
        expect(found.json.results.map((r: any) => r.id)).toContain(id)
      }
      const collections = (await call('GET', '/rag/collections', { token })).json.collections
      expect(collections[0].documents).toBe(acknowledged.length)
      services.db.close()
    } finally {
      Bun.spawnSync(['umount', '-l', mountPoint])
    }
  }, 120_000)
})
