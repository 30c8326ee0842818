import { afterAll, describe, expect, test } from 'bun:test'
import { makeServer } from '../../helpers'

const servers: { stop(): void }[] = []
afterAll(() => servers.forEach((s) => s.stop()))

/** A long document whose every chunk says which version it is. */
const version = (name: string) =>
  Array.from({ length: 40 }, (_, i) => `Section ${i} of the lighthouse manual, ${name} edition, explains lamp ${i} in detail and the lighthouse keeper duties.`).join('\n\n')

describe('re-ingest', () => {
  test('the same content again is a no-op reported unchanged; new metadata or new content replaces the document', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    const ingest = (content: string) => server.call('POST', '/rag/ingest', { token, body: { collection: 'lh', documents: [{ id: 'manual', content, source: 'docs/manual.md' }] } })
    const first = await ingest(version('first'))
    expect(first.json).toMatchObject({ ingested: 1, unchanged: 0, documents: [{ id: 'manual', status: 'ingested' }] })
    const before = (await server.call('GET', '/rag/collections/lh/documents/manual', { token })).json
    const same = await ingest(version('first'))
    expect(same.json).toMatchObject({ ingested: 0, unchanged: 1, failed: 0, documents: [{ id: 'manual', status: 'unchanged', contentHash: before.contentHash }] })
    expect((await server.call('GET', '/rag/collections/lh/documents/manual', { token })).json).toEqual(before)
    const retitled = await server.call('POST', '/rag/ingest', { token, body: { collection: 'lh', documents: [{ id: 'manual', content: version('first'), metadata: { title: 'Lighthouse manual' }, source: 'docs/manual.md' }] } })
    expect(retitled.json.documents[0]).toMatchObject({ status: 'ingested', contentHash: before.contentHash })
    expect((await server.call('GET', '/rag/collections/lh/documents/manual', { token })).json.title).toBe('Lighthouse manual')
    const next = await ingest(version('second'))
    expect(next.json.documents[0]).toMatchObject({ status: 'ingested', chunks: before.chunks })
    const after = (await server.call('GET', '/rag/collections/lh/documents/manual', { token })).json
    expect(after.contentHash).not.toBe(before.contentHash)
    expect(after.text).toContain('second edition')
    expect(after.source).toBe('docs/manual.md')
  }, 60_000)

  test('searches running during re-ingests never see a document twice or missing', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    const listening = server.app.listen({ port: 0 })
    servers.push(listening as unknown as { stop(): void })
    const base = `http://127.0.0.1:${listening.server!.port}`
    const post = async (path: string, body: unknown) =>
      (await (await fetch(`${base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })).json()) as any
    await post('/rag/ingest', { collection: 'lh', documents: [{ id: 'manual', content: version('v0') }] })
    const chunks = (await server.call('GET', '/rag/collections/lh/documents/manual', { token })).json.chunks
    expect(chunks).toBeGreaterThan(5)
    let writing = true
    const writer = (async () => {
      for (let i = 1; i <= 15; i++) await post('/rag/ingest', { collection: 'lh', documents: [{ id: 'manual', content: version(`v${i}`) }] })
      writing = false
    })()
    const seen: { versions: string[]; count: number }[] = []
    const reader = async () => {
      while (writing) {
        const found = await post('/rag/search', { collection: 'lh', query: 'lighthouse keeper lamp manual', limit: 100 })
        const own = found.results.filter((r: { id: string }) => r.id === 'manual')
        seen.push({ versions: [...new Set(own.map((r: { content: string }) => /(v\d+) edition/.exec(r.content)![1]))] as string[], count: own.length })
      }
    }
    await Promise.all([writer, reader(), reader(), reader()])
    expect(seen.length).toBeGreaterThan(10)
    for (const observation of seen) {
      expect(observation.versions).toHaveLength(1)
      expect(observation.count).toBe(chunks)
    }
  }, 60_000)
})
