import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { makeServer, tempDir } from '../helpers'

/** A server on files (not in memory), so that another connection can write beside it. */
function fileServer() {
  const dataDir = tempDir('one-writer')
  return { dataDir, ...makeServer({ database: join(dataDir, 'uagent.db'), dataDir, rateLimitMax: 1_000_000 }) }
}

describe('one writer at a time', () => {
  test('8 concurrent writers through the services beside a second connection writing at full speed: no SQLITE_BUSY, no 500', async () => {
    const { dataDir, call, login, services } = fileServer()
    const { accessToken: token } = await login()
    const other = new Worker(new URL('../fixtures/busy-writer.worker.ts', import.meta.url).href, { workerData: { path: join(dataDir, 'uagent.db') } } as WorkerOptions)
    const statuses = new Map<number, number>()
    const failures: string[] = []
    const note = (res: { status: number; text: string }, what: string) => {
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
      if (res.status !== 200) failures.push(`${what}: ${res.status} ${res.text.slice(0, 200)}`)
    }
    const deadline = performance.now() + 3000
    // The recorder's thread at full speed: batches of records flushed back to back.
    let flooded = 0
    const flood = (async () => {
      while (performance.now() < deadline) {
        for (let i = 0; i < 2000; i++) services.recorder.add(Date.now(), 'GET', '/flood', 200, 1, null, 0, 0, null)
        flooded += 2000
        services.recorder.flush()
        await Bun.sleep(0)
      }
    })()
    let chats = 0
    // Each writer mixes the read-then-write transactions of several stores: a chat continuing its
    // conversation (reads it, then appends), an ingest replacing a document, a rename, a login.
    const writer = async (w: number) => {
      let conversationId: string | undefined
      for (let i = 0; performance.now() < deadline; i++) {
        const chat = await call('POST', '/chat', { token, body: { message: `Writer ${w} message ${i} about harbours`, context: 'Quoted "context" for the chat', ...(conversationId ? { conversationId } : {}) } })
        note(chat, 'chat')
        chats++
        conversationId ??= chat.json?.metadata?.conversationId
        note(await call('POST', '/rag/ingest', { token, body: { collection: `busy${w % 2}`, documents: [{ id: `doc-${w}-${i % 3}`, content: `Writer ${w} wrote version ${i} of this note about lighthouses.` }] } }), 'ingest')
        if (conversationId) note(await call('PATCH', `/conversations/${conversationId}`, { token, body: { title: `Title ${i}` } }), 'rename')
        if (i % 5 === 0) note(await call('POST', '/auth/login', { body: { email: 'admin@example.com', password: 'admin-password-1' } }), 'login')
      }
    }
    await Promise.all([flood, ...Array.from({ length: 8 }, (_, w) => writer(w))])
    const otherWrites = await new Promise<number>((resolve) => {
      other.addEventListener('message', (event) => resolve((event.data as { writes: number }).writes))
      other.postMessage('stop')
    })
    other.terminate()
    expect(failures.slice(0, 5)).toEqual([])
    expect(statuses.get(200)).toBeGreaterThanOrEqual(8 * 3)
    // The other connection really wrote at the same time, and the recorder's thread stored the requests.
    expect(otherWrites).toBeGreaterThan(500)
    await services.recorder.settle()
    const recorded = (route: string) => services.analyticsDb.query<{ n: number }, [string]>('SELECT count(*) AS n FROM analytics_requests WHERE route = ?').get(route)!.n
    expect(recorded('/chat')).toBe(chats)
    expect(recorded('/flood')).toBe(flooded)
    expect(services.recorder.dropped).toBe(0)
  }, 30_000)
})

describe('a failed request leaves no write behind', () => {
  test('a chat whose exchange cannot be stored is answered with an error, and no conversation of it is left', async () => {
    const { call, login, services } = makeServer()
    const { accessToken: token } = await login()
    // The messages' insert fails (as a full disk or a lock would) after the conversation's insert.
    services.db.run("CREATE TEMP TRIGGER refuse_messages BEFORE INSERT ON messages BEGIN SELECT RAISE(ABORT, 'refused'); END")
    const res = await call('POST', '/chat', { token, body: { message: 'Remember this: the harbour opens at six.' } })
    expect(res.status).toBe(500)
    expect(res.json.code).toBe('INTERNAL_ERROR')
    expect(services.db.query('SELECT count(*) AS n FROM conversations').get()).toEqual({ n: 0 })
    expect((await call('GET', '/conversations', { token })).json.conversations).toEqual([])
    services.db.run('DROP TRIGGER refuse_messages')
    const ok = await call('POST', '/chat', { token, body: { message: 'Remember this: the harbour opens at six.' } })
    expect(ok.status).toBe(200)
    expect(services.db.query('SELECT count(*) AS n FROM conversations').get()).toEqual({ n: 1 })
  })
})
