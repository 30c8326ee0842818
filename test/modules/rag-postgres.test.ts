import { describe, expect, test } from 'bun:test'
import corpus from '../fixtures/rag-corpus.json'
import { makeServer } from '../helpers'
import { freshPostgres, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../postgres'

describe.skipIf(!TEST_DATABASE_URL)(`RAG over HTTP on PostgreSQL${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('ingest, search, answer, list, upload, delete a document and a collection: all of it in PostgreSQL; a deleted user’s collections go too', async () => {
    const postgres = await freshPostgres()
    const { app, call, login, userSession, services } = makeServer({ postgres })
    const admin = await login()
    const bob = await userSession('bob@example.com')
    const token = bob.accessToken

    const ingest = await call('POST', '/rag/ingest', { token, body: { collection: 'kb', documents: [...corpus.documents, { id: 'empty', content: '  ' }] } })
    expect(ingest.status).toBe(200)
    expect(ingest.json).toMatchObject({ success: true, ingested: corpus.documents.length, failed: 1, collection: 'kb', errors: [{ id: 'empty', message: 'content is empty' }] })
    // Nothing of it in SQLite.
    expect(services.db.query('SELECT count(*) AS n FROM rag_chunks').get()).toEqual({ n: 0 })
    const [stored] = await postgres`SELECT count(*)::int AS n FROM rag_chunks c JOIN rag_collections k ON k.id = c.collection_id WHERE k.user_id = ${bob.user.id}`
    expect(stored.n).toBeGreaterThanOrEqual(corpus.documents.length)

    const search = await call('POST', '/rag/search', { token, body: { collection: 'kb', query: 'WireGuard VPN configuration', limit: 3 } })
    expect(search.status).toBe(200)
    expect(search.json).toMatchObject({ query: 'WireGuard VPN configuration', totalResults: 3 })
    expect(search.json.results[0]).toMatchObject({ id: 'vpn-setup', metadata: { title: 'Connecting to the VPN', chunk: 0 } })
    for (const result of search.json.results) expect(result.score).toBeGreaterThanOrEqual(0)
    expect((await call('POST', '/rag/search', { token, body: { collection: 'kb', query: 'x', limit: 101 } })).status).toBe(400)
    expect((await call('POST', '/rag/search', { token, body: { collection: 'nope', query: 'vpn' } })).json).toMatchObject({ code: 'NOT_FOUND' })
    // Another user: 404, never the content.
    expect((await call('POST', '/rag/search', { token: admin.accessToken, body: { collection: 'kb', query: 'vpn' } })).status).toBe(404)

    const answer = await call('POST', '/rag/answer', { token, body: { collection: 'kb', question: 'How do I connect to the VPN with WireGuard?', maxContext: 2 } })
    expect(answer.status).toBe(200)
    expect(answer.json.sources.map((s: { title: string }) => s.title)).toContain('Connecting to the VPN')

    const form = new FormData()
    form.append('files', new File(['The harbour crane lifts containers of 40 tonnes.'], 'crane.txt', { type: 'text/plain' }))
    const upload = await app.handle(new Request('http://localhost/rag/collections/kb/files', { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form }))
    expect(upload.status).toBe(200)
    expect(await upload.json()).toMatchObject({ ingested: 1, files: [{ id: 'crane.txt', status: 'ingested' }] })
    const document = await call('GET', '/rag/collections/kb/documents/crane.txt', { token })
    expect(document.json).toMatchObject({ id: 'crane.txt', type: 'text', text: 'The harbour crane lifts containers of 40 tonnes.' })
    const listed = await call('GET', '/rag/collections/kb/documents?prefix=crane', { token })
    expect(listed.json).toMatchObject({ total: 1, documents: [{ id: 'crane.txt', chunks: 1 }] })

    const collections = await call('GET', '/rag/collections', { token })
    expect(collections.json.collections).toMatchObject([{ name: 'kb', documents: corpus.documents.length + 1 }])

    expect((await call('DELETE', '/rag/collections/kb/documents/vpn-setup', { token })).json).toEqual({ success: true, collection: 'kb', id: 'vpn-setup' })
    expect((await call('DELETE', '/rag/collections/kb/documents/vpn-setup', { token })).status).toBe(404)
    const after = await call('POST', '/rag/search', { token, body: { collection: 'kb', query: 'WireGuard VPN configuration', limit: 10 } })
    expect(after.json.results.map((r: { id: string }) => r.id)).not.toContain('vpn-setup')

    await call('POST', '/rag/ingest', { token, body: { collection: 'other', documents: [{ id: 'o', content: 'Second collection text.' }] } })
    expect((await call('DELETE', '/rag/collections/other', { token })).json).toEqual({ success: true, collection: 'other' })
    expect((await call('GET', '/rag/collections', { token })).json.collections.map((c: { name: string }) => c.name)).toEqual(['kb'])

    expect((await call('DELETE', `/auth/users/${bob.user.id}`, { token: admin.accessToken })).status).toBe(200)
    let left = 1
    for (let i = 0; i < 50 && left; i++) {
      left = Number((await postgres`SELECT count(*) AS n FROM rag_collections WHERE user_id = ${bob.user.id}`)[0].n)
      if (left) await Bun.sleep(20)
    }
    expect(left).toBe(0)
    const [chunks] = await postgres`SELECT count(*)::int AS n FROM rag_chunks`
    expect(chunks.n).toBe(0)
  })
})
