import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { type WorkDone, WorkPool, workKind } from '../../src/core/work-pool'
import { ExtractiveGenerator } from '../../src/ml/builtin/extractive-generator'
import { TransformersEmbedder } from '../../src/ml/transformers/embedder'
import { chunkDocument, chunkOptionsFor } from '../../src/modules/rag/chunking'
import { DocumentLibrary } from '../../src/modules/rag/documents/library'
import { RagService } from '../../src/modules/rag/service'
import type { RagStore } from '../../src/modules/rag/store'
import { PostgresRagStore } from '../../src/modules/rag/store/postgres'
import { describeBackends, insertTestUser, type TestBackend } from '../postgres'

setDefaultTimeout(60_000)
const FIXTURES = join(import.meta.dir, '../fixtures/models')
const BLOCK = workKind<{ ms: number }, number>('block', new URL('../fixtures/work/block.work.ts', import.meta.url).href)

const pools: WorkPool[] = []
afterAll(() => pools.forEach((pool) => pool.close()))

async function until(check: () => boolean, ms = 20_000) {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting: ${JSON.stringify(pools.at(-1)?.state())}`)
    await Bun.sleep(5)
  }
}

const TOPICS = ['the harbour office', 'the backup disk', 'the boiler room', 'the night shift', 'the loading dock']
const documents = (count: number, prefix: string) =>
  Array.from({ length: count }, (_, i) => ({
    id: `${prefix}-${String(i).padStart(4, '0')}`,
    content: Array.from({ length: 3 + (i % 4) }, (_, p) => `Paragraph ${p} of ${prefix} ${i}: ${TOPICS[(i + p) % TOPICS.length]} opens at ${p + 6}; the keys are with the duty officer. `.repeat(8)).join('\n\n'),
  }))

/** An ingest through the document library (as POST /rag/ingest runs it), embedding on a pool of one worker with the fixture ONNX model. */
async function setUp(backend: TestBackend) {
  const pool = new WorkPool({ size: 1, queueLimit: 4 })
  pools.push(pool)
  const done: WorkDone[] = []
  pool.onDone((task) => done.push(task))
  const embedder = await TransformersEmbedder.load(FIXTURES, 'fixtures/tiny-bert', pool)
  const store = backend.kind === 'postgres' ? new PostgresRagStore(backend.sql) : undefined
  const rag = new RagService<RagStore>({ db: backend.db, ...(store ? { store } : {}), embedder: async () => embedder, generator: async () => new ExtractiveGenerator() })
  const library = new DocumentLibrary(rag)
  const user = await insertTestUser(backend)
  const options = chunkOptionsFor(embedder.maxTokens)
  return { pool, done, library, user, chunksOf: (content: string) => chunkDocument(content, options).length }
}

describeBackends('an ingest whose signal aborts', (backend) => {
  test('while its first batch waits for a worker: the task leaves the queue, no collection is made', async () => {
    const { pool, library, user } = await setUp(backend())
    const hold = new AbortController()
    const held = pool.run(BLOCK, { ms: 20_000 }, { signal: hold.signal }).catch(() => 'stopped')
    const client = new AbortController()
    const ingest = library.ingest(user, 'kb', documents(30, 'queued'), undefined, { signal: client.signal }).catch((e) => e)
    await until(() => pool.state().queued === 1)
    client.abort()
    expect(await ingest).toMatchObject({ name: 'AbortError' })
    expect(pool.state()).toMatchObject({ queued: 0, busy: 1, cancelled: 1 })
    hold.abort()
    await held
    expect(await Promise.resolve(library.writable(user, 'kb'))).toBeNull()
  })

  test('halfway: the running embedding stops in its worker, nothing more is written, the documents kept are the first ones, each whole', async () => {
    const { pool, done, library, user, chunksOf } = await setUp(backend())
    const sent = documents(1000, 'large')
    const client = new AbortController()
    const ingest = library.ingest(user, 'kb', sent, undefined, { signal: client.signal }).catch((e) => e)
    await until(() => done.filter((task) => task.outcome === 'ok').length >= 2 && pool.state().busy === 1)
    client.abort()
    expect(await ingest).toMatchObject({ name: 'AbortError' })
    await until(() => pool.state().cancelled === 1)
    expect(pool.state()).toMatchObject({ queued: 0, busy: 0, started: 1 })
    const listed = async () => (await library.list(user, 'kb', { limit: 10_000, offset: 0, view: 'full' })).documents as unknown as { id: string; chunks: number; bytes: number }[]
    const kept = await listed()
    await Bun.sleep(300)
    expect(await listed()).toEqual(kept)
    expect(kept.length).toBeGreaterThan(0)
    expect(kept.length).toBeLessThan(sent.length)
    expect(kept.map((d) => d.id)).toEqual(sent.slice(0, kept.length).map((d) => d.id))
    for (const [i, document] of kept.entries()) {
      // Its chunks all there, and its info row (its size) written with them.
      expect({ id: document.id, chunks: document.chunks, bytes: document.bytes }).toEqual({ id: sent[i]!.id, chunks: chunksOf(sent[i]!.content), bytes: Buffer.byteLength(sent[i]!.content) })
    }
  })
})
