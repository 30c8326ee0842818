import { describe, expect, test } from 'bun:test'
import corpus from '../fixtures/rag-corpus.json'
import { ExtractiveGenerator } from '../../src/ml/builtin/extractive-generator'
import { HashEmbedder } from '../../src/ml/builtin/hash-embedder'
import type { Embedder } from '../../src/ml'
import { DocumentLibrary } from '../../src/modules/rag/documents/library'
import { RagService } from '../../src/modules/rag/service'
import type { RagStore } from '../../src/modules/rag/store'
import { PostgresRagStore } from '../../src/modules/rag/store/postgres'
import type { VectorCacheOptions } from '../../src/modules/rag/vectors/cache'
import { describeBackends, freshPostgres, insertTestUser, POSTGRES_SKIPPED, type TestBackend, TEST_DATABASE_URL } from '../postgres'

const embedder = new HashEmbedder()

/** A RagService over a backend's store, and a new user of it (SQLite's collections reference users). */
function ragOf(backend: TestBackend, keywordPostings?: number, vectorCache?: VectorCacheOptions) {
  const store = backend.kind === 'postgres' ? new PostgresRagStore(backend.sql, { keywordPostings, vectorCache }) : undefined
  const rag = new RagService<RagStore>({ db: backend.db, ...(store ? { store } : {}), keywordPostings, vectorCache, embedder: async () => embedder, generator: async () => new ExtractiveGenerator() })
  return { rag, library: new DocumentLibrary(rag), user: () => insertTestUser(backend) }
}

async function code(work: () => unknown): Promise<string> {
  try {
    await work()
    return 'ok'
  } catch (error) {
    return (error as { code?: string }).code ?? String(error)
  }
}

describeBackends('RAG store', (backend) => {
  test('the pages of a document follow it: written, rewritten and deleted, as each later lookup of its collection sees it', async () => {
    const { rag, user } = ragOf(backend())
    const alice = await user()
    const store = rag.store
    const collection = await store.createCollection(alice, 'paged', embedder.id, embedder.dimensions)
    const documentOf = (docId: string, content: string) => ({ docId, content, metadata: {}, chunks: [content], vectors: [new Float32Array(embedder.dimensions).fill(0.1)] })
    const describe = (pages: string | null) => (document: { docId: string; content: string }) => ({
      title: document.docId,
      type: 'pdf',
      bytes: document.content.length,
      text: document.content,
      source: null,
      contentHash: 'x',
      chunkPages: pages,
    })
    const pagesNow = async (docIds: string[]) => Object.fromEntries(await store.chunkPages((await store.findCollection(alice, 'paged'))!, docIds))
    await store.writeDocuments(collection, [documentOf('manual', 'The router manual.'), documentOf('notes', 'Loose notes.')], (document) => describe(document.docId === 'manual' ? '{"pages":[1,2],"chunks":[1]}' : null)(document))
    expect(await pagesNow(['manual', 'notes'])).toEqual({ manual: '{"pages":[1,2],"chunks":[1]}' })
    // Asked again (the same version): the same answer.
    expect(await pagesNow(['manual', 'notes', 'absent'])).toEqual({ manual: '{"pages":[1,2],"chunks":[1]}' })
    await store.writeDocuments((await store.findCollection(alice, 'paged'))!, [documentOf('manual', 'The router manual, second edition.')], describe('{"pages":[3],"chunks":[1]}'))
    expect(await pagesNow(['manual', 'notes'])).toEqual({ manual: '{"pages":[3],"chunks":[1]}' })
    await store.deleteDocument((await store.findCollection(alice, 'paged'))!, 'manual')
    expect(await pagesNow(['manual', 'notes'])).toEqual({})
  })

  test('synonyms (issue 37): "buy" finds "purchase", "compact discs" finds CDs, the exact word first; a repeated passage takes one place', async () => {
    const { rag, user } = ragOf(backend())
    const alice = await user()
    const repeated = 'Backups run nightly at two; restore a backup with harbor restore and the snapshot id.'
    await rag.ingest(alice, 'office', [
      { id: 'procurement', content: 'To purchase software licences, open a ticket with procurement and attach the quote from the vendor.' },
      { id: 'media', content: 'Members of plugdev can mount CDs and USB sticks without asking an administrator.' },
      { id: 'cars', content: 'Visitors park their car in the lower garage and get a ticket at the gate.' },
      { id: 'vehicles', content: 'Company automobiles are booked through the fleet desk two days ahead.' },
      { id: 'backup-1', content: repeated },
      { id: 'backup-2', content: repeated },
      { id: 'restore', content: 'To restore files from a nightly snapshot, list snapshots first, then restore the one you need.' },
    ])
    const top = async (query: string, limit = 3) => (await rag.search(alice, 'office', query, limit)).results.map((r) => r.id)
    expect((await top('buy'))[0]).toBe('procurement')
    expect((await top('Which team may use compact discs?'))[0]).toBe('media')
    expect((await top('car')).slice(0, 2)).toEqual(['cars', 'vehicles'])
    const two = await top('restore a nightly backup', 2)
    expect(two).toContain('restore')
    expect(two.filter((id) => id.startsWith('backup-'))).toHaveLength(1)
  })

  test('the intranet corpus: each keyword query and each paraphrase finds its document in the top three', async () => {
    const { rag, user } = ragOf(backend())
    const alice = await user()
    const ingested = await rag.ingest(alice, 'kb', corpus.documents)
    expect(ingested).toMatchObject({ ingested: corpus.documents.length, failed: 0 })
    let keyword = 0
    let paraphrase = 0
    for (const query of corpus.queries) {
      const byKeyword = await rag.search(alice, 'kb', query.keyword, 3)
      if (byKeyword.results.some((r) => r.id === query.expected)) keyword++
      const byParaphrase = await rag.search(alice, 'kb', query.paraphrase, 3)
      if (byParaphrase.results.some((r) => r.id === query.expected)) paraphrase++
      for (const result of byKeyword.results) expect(result.score).toBeGreaterThanOrEqual(0)
    }
    expect(keyword).toBe(corpus.queries.length)
    expect(paraphrase).toBeGreaterThanOrEqual(corpus.queries.length - 2)
    const first = (await rag.search(alice, 'kb', 'WireGuard VPN configuration', 5)).results[0]!
    expect(first).toMatchObject({ id: 'vpn-setup', metadata: { title: 'Connecting to the VPN', chunk: 0 } })
  })

  test('re-ingesting an id replaces it; deleting a document takes it out of both searches; lists count what is there', async () => {
    const { rag, user } = ragOf(backend())
    const bob = await user()
    await rag.ingest(bob, 'notes', [
      { id: 'a', content: 'The zeppelin hangar opens at dawn for inspection.' },
      { id: 'b', content: 'Quarterly budget figures are due in March.' },
    ])
    await rag.ingest(bob, 'notes', [{ id: 'a', content: 'The submarine dock closes at noon on Sundays.' }])
    expect((await rag.listCollections(bob)).collections).toMatchObject([{ name: 'notes', documents: 2, chunks: 2, embedder: embedder.id }])
    expect((await rag.search(bob, 'notes', 'zeppelin hangar', 5)).results.map((r) => r.content)).not.toContain('The zeppelin hangar opens at dawn for inspection.')
    expect((await rag.search(bob, 'notes', 'submarine dock', 1)).results[0]).toMatchObject({ id: 'a', content: 'The submarine dock closes at noon on Sundays.' })
    expect(await rag.deleteDocument(bob, 'notes', 'a')).toEqual({ success: true, collection: 'notes', id: 'a' })
    expect((await rag.search(bob, 'notes', 'submarine dock', 5)).results.map((r) => r.id)).toEqual(['b'])
    expect(await code(() => rag.deleteDocument(bob, 'notes', 'a'))).toBe('NOT_FOUND')
    expect((await rag.listCollections(bob)).collections).toMatchObject([{ name: 'notes', documents: 1, chunks: 1 }])
    expect(await rag.deleteCollection(bob, 'notes')).toEqual({ success: true, collection: 'notes' })
    expect((await rag.listCollections(bob)).collections).toEqual([])
    expect(await code(() => rag.search(bob, 'notes', 'budget', 5))).toBe('NOT_FOUND')
  })

  test("collections are their owner's: another user gets 404 and keeps a collection of the same name; keyword statistics are each collection's own", async () => {
    const { rag, user } = ragOf(backend())
    const carol = await user()
    const dave = await user()
    await rag.ingest(carol, 'docs', [{ id: 'c1', content: 'Carol keeps the lighthouse logbook with tide tables.' }])
    expect(await code(() => rag.search(dave, 'docs', 'lighthouse', 5))).toBe('NOT_FOUND')
    expect(await code(() => rag.deleteCollection(dave, 'docs'))).toBe('NOT_FOUND')
    await rag.ingest(dave, 'docs', [{ id: 'd1', content: 'Dave repairs bicycles and sells spare parts.' }])
    expect((await rag.search(dave, 'docs', 'lighthouse logbook', 5)).results.map((r) => r.id)).toEqual(['d1'])
    expect((await rag.search(carol, 'docs', 'lighthouse logbook', 5)).results.map((r) => r.id)).toEqual(['c1'])
    const before = (await rag.questionTerms(carol, 'docs', 'lighthouse bicycles')).terms
    // Many documents about bicycles in Dave's collection change nothing in Carol's statistics.
    await rag.ingest(dave, 'docs', Array.from({ length: 30 }, (_, i) => ({ id: `bike-${i}`, content: `Bicycle note ${i}: lighthouse tours by bicycle.` })))
    expect((await rag.questionTerms(carol, 'docs', 'lighthouse bicycles')).terms).toEqual(before)
    expect(before).toEqual([
      { word: 'lighthouse', df: 1 },
      { word: 'bicycles', df: 0 },
    ])
    expect((await rag.questionTerms(dave, 'docs', 'lighthouse bicycles')).terms).toEqual([
      { word: 'lighthouse', df: 30 },
      { word: 'bicycles', df: 31 },
    ])
  })

  test('document frequencies stay exact through many writes, replacements and deletes', async () => {
    const { rag, user } = ragOf(backend())
    const hana = await user()
    // One write per document: more writes than the PostgreSQL store gathers before it sums them.
    for (let i = 0; i < 24; i++) await rag.ingest(hana, 'log', [{ id: `e${i}`, content: `Entry ${i}: ${i % 2 ? 'walrus' : 'pelican'} sighted near the ${i % 3 ? 'pier' : 'lighthouse'}.` }])
    for (const id of ['e1', 'e2', 'e3']) await rag.deleteDocument(hana, 'log', id)
    await rag.ingest(hana, 'log', [{ id: 'e4', content: 'Entry 4: a walrus again, at the pier.' }])
    for (let i = 24; i < 44; i++) await rag.ingest(hana, 'log', [{ id: `e${i}`, content: `Entry ${i}: pelican near the pier.` }])
    await rag.deleteDocument(hana, 'log', 'e30')
    const expected = (word: string, docs: string[]) => docs.filter((content) => content.toLowerCase().includes(word)).length
    const contents: string[] = []
    for (let i = 0; i < 44; i++) {
      if (['e1', 'e2', 'e3', 'e30'].includes(`e${i}`)) continue
      if (i === 4) contents.push('Entry 4: a walrus again, at the pier.')
      else if (i < 24) contents.push(`Entry ${i}: ${i % 2 ? 'walrus' : 'pelican'} sighted near the ${i % 3 ? 'pier' : 'lighthouse'}.`)
      else contents.push(`Entry ${i}: pelican near the pier.`)
    }
    const { terms, chunks } = await rag.questionTerms(hana, 'log', 'walrus pelican lighthouse pier sighted')
    expect(chunks).toBe(contents.length)
    expect(terms).toEqual(['walrus', 'pelican', 'lighthouse', 'pier', 'sighted'].map((word) => ({ word, df: expected(word, contents) })))
  })

  test('quoted phrases and identifiers are found whole; FTS syntax is searched as text', async () => {
    const { rag, user } = ragOf(backend())
    const erin = await user()
    await rag.ingest(erin, 'ops', [
      { id: 'ssl', content: 'Chrome shows ERR_SSL_PROTOCOL_ERROR when the proxy intercepts TLS.' },
      { id: 'ssl-words', content: 'An SSL error in the protocol log: see the error list.' },
      { id: 'cve', content: 'Patch xz-utils against CVE-2024-3094 before Friday.' },
      { id: 'other', content: 'The cafeteria menu changes every Monday.' },
    ])
    expect((await rag.search(erin, 'ops', 'ERR_SSL_PROTOCOL_ERROR', 1)).results[0]!.id).toBe('ssl')
    expect((await rag.search(erin, 'ops', 'CVE-2024-3094', 1)).results[0]!.id).toBe('cve')
    expect((await rag.search(erin, 'ops', '"protocol log"', 1)).results[0]!.id).toBe('ssl-words')
    for (const query of ['"unbalanced', 'NEAR(a b) AND OR NOT *', "it's ^ { } ( ) : -", "'; DROP TABLE rag_chunks; --"]) {
      expect(await code(() => rag.search(erin, 'ops', query, 3))).toBe('ok')
    }
    expect((await rag.listCollections(erin)).collections[0]).toMatchObject({ documents: 4 })
  })

  test('words in more chunks than keyword search ranks (its postings budget): the first matches are ranked, the best still found first', async () => {
    const { rag, user } = ragOf(backend(), 10)
    const gina = await user()
    const notes = Array.from({ length: 40 }, (_, i) => ({ id: `n${i}`, content: `Harbour report ${i}: cranes, harbour pilots and harbour tugs were busy.` }))
    notes[3] = { id: 'n3', content: 'Harbour report 3: the harbour harbour harbour master inspected the harbour cranes.' }
    await rag.ingest(gina, 'port', notes)
    const found = await rag.search(gina, 'port', 'harbour', 5)
    expect(found.results).toHaveLength(5)
    expect(found.results[0]!.id).toBe('n3')
  })

  test('an identifier held exactly puts its chunk first; an ordinary hyphenated word ("point-in-time") only weighs, and a better passage without it stays first', async () => {
    const { rag, user } = ragOf(backend())
    const ines = await user()
    await rag.ingest(ines, 'dba', [
      { id: 'recovery', content: 'To recover a database cluster to an earlier moment, restore the base backup, then replay the archived write-ahead log up to the recovery target time.' },
      { id: 'scheduler', content: 'The report scheduler writes its summary at a point in time it chooses, one line per job.' },
      { id: 'errors', content: 'A failed replay of the write-ahead log stops with ERR_WAL_REPLAY_FAILED; the cluster then stays down until the recovery is restarted.' },
      { id: 'lunch', content: 'The canteen serves lunch from noon; the menu changes every week.' },
    ])
    const top = async (query: string) => (await rag.search(ines, 'dba', query, 3)).results.map((r) => r.id)
    expect((await top('how do I do a point-in-time recovery of a database cluster?'))[0]).toBe('recovery')
    expect((await top('why does the cluster stay down after ERR_WAL_REPLAY_FAILED during recovery of a database cluster?'))[0]).toBe('errors')
  })

  test('a passage copied into many documents counts once among the candidates: the next passages still reach the results, and copies come last', async () => {
    // Vectors in memory from the first chunk on (as a large collection's are): that is what tells copies apart.
    const { rag, user } = ragOf(backend(), undefined, { minRows: 1, budgetBytes: 64 * 1024 * 1024 })
    const hana = await user()
    // Three passages about the retention policy, each copied into 60 documents (a manual ingested
    // again and again), then the one that answers, then unrelated text.
    const popular = [
      'Retention policy: the retention policy of the archive keeps daily snapshots; the retention policy is set per archive.',
      'Retention policy of mail: the retention policy keeps mail for a year; the retention policy applies to every mailbox.',
      'Retention policy and audits: auditors read the retention policy; a retention policy change is logged for audits.',
    ]
    const copies = popular.flatMap((content, p) => Array.from({ length: 60 }, (_, i) => ({ id: `copy-${p}-${i}`, content })))
    const answer = { id: 'answer', content: 'Change the retention policy with keep-daily and keep-weekly in harbor.conf, then run harbor prune to apply it.' }
    const other = Array.from({ length: 30 }, (_, i) => ({ id: `other-${i}`, content: `Meeting notes ${i}: the cafeteria menu, parking permits and the holiday calendar were discussed.` }))
    await rag.ingest(hana, 'manuals', [...copies, answer, ...other])
    const found = (await rag.search(hana, 'manuals', 'how do I change the retention policy', 5)).results
    expect(found.map((r) => r.id)).toContain('answer')
    expect(new Set(found.map((r) => r.content)).size).toBe(found.length)
    // Fewer different passages than asked for: the copies fill the rest, after them.
    await rag.ingest(hana, 'twins', [0, 1, 2].map((i) => ({ id: `same-${i}`, content: 'The harbor daemon rotates its logs every Sunday at midnight.' })))
    const same = (await rag.search(hana, 'twins', 'when are the harbor logs rotated', 10)).results
    expect(same.map((r) => r.id).sort()).toEqual(['same-0', 'same-1', 'same-2'])
    // Passages to answer from (/rag/answer, grounded chat, research) never need the copies.
    const passages = (await rag.search(hana, 'twins', 'when are the harbor logs rotated', 10, null, { passages: true })).results
    expect(passages).toHaveLength(1)
  })

  test('a collection deleted while a search of it waits (its embedding): the search is a 404, with or without keyword terms', async () => {
    // An embedder that holds the search's embedding until released: the collection is deleted meanwhile.
    let hold: Promise<void> | null = null
    const held: Embedder = { id: embedder.id, dimensions: embedder.dimensions, embed: async (texts) => (await hold, embedder.embed(texts)) }
    const b = backend()
    const store = b.kind === 'postgres' ? new PostgresRagStore(b.sql) : undefined
    const rag = new RagService<RagStore>({ db: b.db, ...(store ? { store } : {}), embedder: async () => held, generator: async () => new ExtractiveGenerator() })
    const grace = await insertTestUser(b)
    for (const query of ['harbour keys', '?!']) {
      await rag.ingest(grace, 'doomed', [{ id: 'keys', content: 'The harbour keys are kept by the duty officer.' }])
      expect((await rag.search(grace, 'doomed', query, 3)).results.length).toBeGreaterThan(0)
      let release = () => {}
      hold = new Promise((resolve) => (release = resolve))
      const searching = code(() => rag.search(grace, 'doomed', query, 3))
      await Bun.sleep(20)
      await rag.deleteCollection(grace, 'doomed')
      release()
      hold = null
      expect(await searching).toBe('NOT_FOUND')
    }
  })

  test('the document library: info rows with the document, unchanged documents skipped, listings by prefix, one document with its text', async () => {
    const { rag, library, user } = ragOf(backend())
    const frank = await user()
    const first = await library.ingest(frank, 'lib', [
      { id: 'guides/vpn.md', content: 'Install WireGuard, then import the tunnel file.', metadata: { title: 'VPN guide' }, source: '/srv/guides/vpn.md', type: 'markdown' },
      { id: 'guides/mail.md', content: 'Mail is read with IMAP over TLS.', type: 'markdown' },
      { id: 'scan.pdf', content: 'Page one text.\fPage two text about invoices.', type: 'pdf', pageStarts: [0, 15] },
    ])
    expect(first).toMatchObject({ ingested: 3, unchanged: 0, failed: 0 })
    const again = await library.ingest(frank, 'lib', [
      { id: 'guides/vpn.md', content: 'Install WireGuard, then import the tunnel file.', metadata: { title: 'VPN guide' }, source: '/srv/guides/vpn.md', type: 'markdown' },
    ])
    expect(again).toMatchObject({ ingested: 0, unchanged: 1, documents: [{ id: 'guides/vpn.md', status: 'unchanged' }] })
    const listed = await library.list(frank, 'lib', { prefix: 'guides/', limit: 1, offset: 0, view: 'full' })
    expect(listed).toMatchObject({ total: 2, hasMore: true, documents: [{ id: 'guides/mail.md', title: 'guides/mail.md', type: 'markdown', chunks: 1, source: null }] })
    const hashes = await library.list(frank, 'lib', { limit: 10, offset: 0, view: 'hashes' })
    expect(hashes.documents.map((d) => d.id)).toEqual(['guides/mail.md', 'guides/vpn.md', 'scan.pdf'])
    expect(hashes.documents[1]).toMatchObject({ source: '/srv/guides/vpn.md' })
    const vpn = await library.get(frank, 'lib', 'guides/vpn.md')
    expect(vpn).toMatchObject({ id: 'guides/vpn.md', title: 'VPN guide', type: 'markdown', text: 'Install WireGuard, then import the tunnel file.', metadata: { title: 'VPN guide' } })
    expect(vpn.bytes).toBe(Buffer.byteLength('Install WireGuard, then import the tunnel file.'))
    expect(await code(() => library.get(frank, 'lib', 'missing'))).toBe('NOT_FOUND')
    const pdf = await library.get(frank, 'lib', 'scan.pdf')
    expect(pdf.pages).toBe(2)
    const found = await rag.search(frank, 'lib', 'invoices', 1)
    expect((await library.withPages(frank, 'lib', found.results))[0]).toMatchObject({ id: 'scan.pdf', metadata: { page: 1 } })
    await rag.deleteDocument(frank, 'lib', 'guides/vpn.md')
    expect((await library.list(frank, 'lib', { limit: 10, offset: 0, view: 'full' })).total).toBe(2)
  })
})

describe.skipIf(!TEST_DATABASE_URL)(`RAG on several replicas${TEST_DATABASE_URL ? '' : ` (${POSTGRES_SKIPPED})`}`, () => {
  test('a document ingested or deleted through one instance is found (or gone) through another on the same database within 2 s', async () => {
    const sql = await freshPostgres()
    const { Database } = await import('bun:sqlite')
    const make = () =>
      new RagService<RagStore>({ db: new Database(':memory:'), store: new PostgresRagStore(sql), embedder: async () => embedder, generator: async () => new ExtractiveGenerator() })
    const one = make()
    const two = make()
    // Collections name their owner by foreign key (PostgreSQL migration 018).
    await sql`INSERT INTO users (id, email, password_hash, roles, created_at) VALUES ('u1', 'u1@example.com', 'x', '["user"]', ${new Date().toISOString()})`
    await one.ingest('u1', 'shared', corpus.documents)
    // The second instance loads the collection's vectors on its first search.
    expect((await two.search('u1', 'shared', 'WireGuard VPN configuration', 3)).results[0]!.id).toBe('vpn-setup')
    const until = async (done: () => Promise<boolean>) => {
      const started = performance.now()
      while (!(await done())) {
        if (performance.now() - started > 2000) return Number.POSITIVE_INFINITY
        await Bun.sleep(25)
      }
      return performance.now() - started
    }
    const fresh = 'The narwhal aquarium is fed herring at four.'
    await one.ingest('u1', 'shared', [{ id: 'narwhal', content: fresh }])
    // Found by its vector (the paraphrase shares no keyword) and by keyword, on the other instance.
    const nearestDocs = async (text: string, k: number) => {
      const hits = await two.store.nearest(await two.collection('u1', 'shared'), (await embedder.embed([text]))[0]!, k)
      const chunks = await two.store.chunks(hits.map((hit) => hit.chunkId))
      return hits.map((hit) => chunks.get(hit.chunkId)?.docId ?? 'a chunk that is gone')
    }
    const seen = await until(async () => (await two.search('u1', 'shared', 'narwhal aquarium herring', 1)).results[0]?.id === 'narwhal' && (await nearestDocs(fresh, 1))[0] === 'narwhal')
    expect(seen).toBeLessThan(2000)

    // An instance that has not yet read the new version (its vectors still hold a deleted chunk): never an error, never the chunk.
    const behind = new RagService<RagStore>({ db: new Database(':memory:'), store: new PostgresRagStore(sql, { stateTtlMs: 60_000 }), embedder: async () => embedder, generator: async () => new ExtractiveGenerator() })
    expect((await behind.search('u1', 'shared', 'WireGuard VPN configuration', 10)).results.map((r) => r.id)).toContain('vpn-setup')
    await one.deleteDocument('u1', 'shared', 'vpn-setup')
    const stale = await behind.store.nearest(await behind.collection('u1', 'shared'), (await embedder.embed(['WireGuard VPN configuration']))[0]!, 1)
    expect((await behind.store.chunks(stale.map((hit) => hit.chunkId))).size).toBe(0)
    const afterDelete = await behind.search('u1', 'shared', 'WireGuard VPN configuration', 100)
    expect(afterDelete.results.map((r) => r.id)).not.toContain('vpn-setup')
    expect(afterDelete.results).toHaveLength(corpus.documents.length)
    const gone = await until(
      async () =>
        !(await two.search('u1', 'shared', 'WireGuard VPN configuration', 10)).results.some((r) => r.id === 'vpn-setup') &&
        !(await nearestDocs('WireGuard VPN configuration', 100)).some((doc) => doc === 'vpn-setup' || doc === 'a chunk that is gone'),
    )
    expect(gone).toBeLessThan(2000)
    expect(await nearestDocs('WireGuard VPN configuration', 100)).toHaveLength(corpus.documents.length)

    // Writes through both instances: each sees all of them.
    await two.ingest('u1', 'shared', [{ id: 'two-1', content: 'Albatross migration routes over the southern ocean.' }])
    await one.ingest('u1', 'shared', [{ id: 'one-1', content: 'Quokka colonies on Rottnest island.' }])
    for (const rag of [one, two]) {
      expect(await until(async () => (await rag.search('u1', 'shared', 'albatross migration', 1)).results[0]?.id === 'two-1')).toBeLessThan(2000)
      expect(await until(async () => (await rag.search('u1', 'shared', 'quokka colonies', 1)).results[0]?.id === 'one-1')).toBeLessThan(2000)
    }
    await one.deleteCollection('u1', 'shared')
    expect(await code(() => two.search('u1', 'shared', 'quokka', 1))).toBe('NOT_FOUND')
  })
})
