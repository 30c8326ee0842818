import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { makeServer } from '../../helpers'
import { formOf, makePdf } from './files'

const dataDir = mkdtempSync(join(tmpdir(), 'uagent-kb-docs-'))
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

async function library() {
  const server = makeServer({ dataDir })
  const { accessToken: token } = await server.login()
  const form = formOf([
    ['manual.pdf', await makePdf([['Page one of the manual.'], ['Page two: the reset button is on the back.']])],
    ['notes.md', '# Notes\n\n- first item\n- second item\n'],
  ])
  const upload = await server.app.handle(
    new Request('http://localhost/rag/collections/lib/files', { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form }),
  )
  expect(upload.status).toBe(200)
  await server.call('POST', '/rag/ingest', {
    token,
    body: { collection: 'lib', documents: [{ id: 'guides/vpn', content: 'Connect with WireGuard.', metadata: { title: 'VPN' }, source: 'guides/vpn.txt' }] },
  })
  return { ...server, token }
}

describe('documents', () => {
  test('the listing shows id, title, type, chunks, bytes and ingestedAt, sorted by id, paginated and filtered by prefix', async () => {
    const server = await library()
    const all = await server.call('GET', '/rag/collections/lib/documents', { token: server.token })
    expect(all.status).toBe(200)
    expect(all.json).toMatchObject({ collection: 'lib', total: 3, limit: 100, offset: 0, hasMore: false })
    expect(all.json.documents.map((d: any) => d.id)).toEqual(['guides/vpn', 'manual.pdf', 'notes.md'])
    const pdf = all.json.documents[1]
    expect(pdf).toMatchObject({ id: 'manual.pdf', title: 'Router Manual', type: 'pdf', chunks: 2, source: null })
    expect(pdf.bytes).toBeGreaterThan(500)
    expect(new Date(pdf.ingestedAt).getTime()).toBeGreaterThan(Date.now() - 60_000)
    expect(all.json.documents[0]).toMatchObject({ id: 'guides/vpn', title: 'VPN', type: 'text', chunks: 1, bytes: 23, source: 'guides/vpn.txt' })

    const page = await server.call('GET', '/rag/collections/lib/documents?limit=2&offset=1', { token: server.token })
    expect(page.json.documents.map((d: any) => d.id)).toEqual(['manual.pdf', 'notes.md'])
    expect(page.json).toMatchObject({ total: 3, hasMore: false })
    const first = await server.call('GET', '/rag/collections/lib/documents?limit=1', { token: server.token })
    expect(first.json).toMatchObject({ total: 3, hasMore: true })
    const guides = await server.call('GET', '/rag/collections/lib/documents?prefix=guides/', { token: server.token })
    expect(guides.json.documents.map((d: any) => d.id)).toEqual(['guides/vpn'])
    expect(guides.json.total).toBe(1)
    expect((await server.call('GET', '/rag/collections/lib/documents?limit=0', { token: server.token })).status).toBe(400)
    expect((await server.call('GET', '/rag/collections/lib/documents?limit=99999999999999999999', { token: server.token })).status).toBe(400)
    expect((await server.call('GET', '/rag/collections/nope/documents', { token: server.token })).status).toBe(404)
  }, 60_000)

  test('one document shows its metadata and full extracted text; ids with slashes work encoded or as a path', async () => {
    const server = await library()
    const pdf = await server.call('GET', '/rag/collections/lib/documents/manual.pdf', { token: server.token })
    expect(pdf.status).toBe(200)
    expect(pdf.json).toMatchObject({ id: 'manual.pdf', title: 'Router Manual', type: 'pdf', pages: 2, metadata: { title: 'Router Manual', fileName: 'manual.pdf', type: 'pdf' } })
    expect(pdf.json.text).toContain('Page one of the manual.')
    expect(pdf.json.text).toContain('Page two: the reset button is on the back.')
    const notes = await server.call('GET', '/rag/collections/lib/documents/notes.md', { token: server.token })
    expect(notes.json.text).toBe('# Notes\n\n- first item\n- second item\n')
    const vpn = await server.call('GET', `/rag/collections/lib/documents/${encodeURIComponent('guides/vpn')}`, { token: server.token })
    expect(vpn.json).toMatchObject({ id: 'guides/vpn', text: 'Connect with WireGuard.', source: 'guides/vpn.txt' })
    expect(vpn.json.contentHash).toBe(new Bun.CryptoHasher('sha256').update('Connect with WireGuard.').digest('hex'))
    expect((await server.call('GET', '/rag/collections/lib/documents/guides/vpn', { token: server.token })).json).toEqual(vpn.json)
    expect((await server.call('GET', '/rag/collections/lib/documents/missing.md', { token: server.token })).status).toBe(404)
    expect((await server.call('GET', '/rag/collections/lib/documents/guides/missing', { token: server.token })).status).toBe(404)
    // Deleting a document removes it from the listing too.
    await server.call('DELETE', '/rag/collections/lib/documents/notes.md', { token: server.token })
    expect((await server.call('GET', '/rag/collections/lib/documents', { token: server.token })).json.total).toBe(2)
    expect((await server.call('DELETE', '/rag/collections/lib/documents/guides/vpn', { token: server.token })).json).toEqual({ success: true, collection: 'lib', id: 'guides/vpn' })
    expect((await server.call('GET', '/rag/collections/lib/documents', { token: server.token })).json.total).toBe(1)
  }, 60_000)

  test('view=hashes lists only id, source and contentHash, up to 10,000 a page', async () => {
    const server = await library()
    const hashes = await server.call('GET', '/rag/collections/lib/documents?view=hashes&limit=10000', { token: server.token })
    expect(hashes.status).toBe(200)
    for (const document of hashes.json.documents) expect(Object.keys(document).sort()).toEqual(['contentHash', 'id', 'source'])
    expect(hashes.json.documents[0]).toEqual({ id: 'guides/vpn', source: 'guides/vpn.txt', contentHash: expect.stringMatching(/^[0-9a-f]{64}$/) })
  }, 60_000)
})
