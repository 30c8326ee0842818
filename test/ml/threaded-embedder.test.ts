import { describe, expect, test } from 'bun:test'
import { WorkPool } from '../../src/core/work-pool'
import { openDatabase } from '../../src/db'
import { ExtractiveGenerator } from '../../src/ml/builtin/extractive-generator'
import { HashEmbedder } from '../../src/ml/builtin/hash-embedder'
import { THREAD_MIN_TEXTS, ThreadedHashEmbedder } from '../../src/ml/builtin/threaded-hash-embedder'
import { RagService, WRITE_BATCH } from '../../src/modules/rag/service'
import { SqliteRagStore as RagStore } from '../../src/modules/rag/store/sqlite'
import { matrixEntries } from '../../src/modules/rag/vectors/cache'

// Prose, code, accents, other scripts, repeated words, an empty text: every path of the tokenizer.
const SAMPLES = [
  'The cat sat on the mat.',
  'Connections, connected, connecting: the connection pool reconnects.',
  'SELECT * FROM pg_stat_activity WHERE state = \'idle in transaction\';',
  'Crème brûlée, naïve café, Ærø and the Straße.',
  'Журнал упреждающей записи и контрольные точки.',
  '日本語のテキストも埋め込まれる。',
  'git rebase --interactive HEAD~3 rewrites the last three commits.',
  '',
  'word '.repeat(400),
  "it's the user's o’clock: don't split it",
]
const texts = Array.from({ length: THREAD_MIN_TEXTS * 3 + 5 }, (_, i) => `${SAMPLES[i % SAMPLES.length]} ${i % 7 ? `note ${i}` : ''}`.trim())
const bytes = (vectors: Float32Array[]) => vectors.map((v) => [...new Uint8Array(v.buffer, v.byteOffset, v.byteLength)])

describe('built-in embedder on the work pool', () => {
  test('a large batch is embedded on a worker, bit for bit as the built-in embedder embeds it; a small one here', async () => {
    const pool = new WorkPool({ size: 1, queueLimit: 4 })
    const threaded = new ThreadedHashEmbedder(pool)
    const local = new HashEmbedder()
    expect(threaded.id).toBe(local.id)
    expect(threaded.dimensions).toBe(local.dimensions)
    try {
      // A small call (a search query) stays on this thread, with the same vectors, and starts no worker.
      expect(bytes(await threaded.embed(texts.slice(0, 3)))).toEqual(bytes(await local.embed(texts.slice(0, 3))))
      expect(pool.state()).toMatchObject({ started: 0, completed: 0 })
      const vectors = await threaded.embed(texts)
      expect(pool.state()).toMatchObject({ started: 1, completed: 1 })
      expect(vectors).toHaveLength(texts.length)
      expect(bytes(vectors)).toEqual(bytes(await local.embed(texts)))
    } finally {
      pool.close()
    }
  })

  test('calls beyond the queue are refused with 503 BUSY, the others are embedded', async () => {
    const pool = new WorkPool({ size: 1, queueLimit: 1 })
    const threaded = new ThreadedHashEmbedder(pool)
    const expected = bytes(await new HashEmbedder().embed(texts))
    try {
      const outcomes = await Promise.allSettled([threaded.embed(texts), threaded.embed(texts), threaded.embed(texts)])
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected'])
      expect((outcomes[2] as PromiseRejectedResult).reason).toMatchObject({ code: 'BUSY', status: 503 })
      for (const outcome of outcomes.slice(0, 2)) expect(bytes((outcome as PromiseFulfilledResult<Float32Array[]>).value)).toEqual(expected)
    } finally {
      pool.close()
    }
  })
})

test('a cancelled batch leaves the queue, or is let finish and dropped: its worker (and what it loaded) stays', async () => {
  const pool = new WorkPool({ size: 1, queueLimit: 4 })
  const threaded = new ThreadedHashEmbedder(pool)
  try {
    const many = Array.from({ length: 40 }, () => texts).flat()
    const first = new AbortController()
    const second = new AbortController()
    const running = threaded.embed(many, { signal: first.signal }).catch((e) => e)
    const queued = threaded.embed(many, { signal: second.signal }).catch((e) => e)
    expect(pool.state()).toMatchObject({ busy: 1, queued: 1 })
    second.abort()
    first.abort()
    expect(await queued).toMatchObject({ name: 'AbortError' })
    expect(await running).toMatchObject({ name: 'AbortError' })
    expect(pool.state()).toMatchObject({ started: 1, busy: 0, queued: 0, cancelled: 2, completed: 0 })
    expect(bytes(await threaded.embed(texts))).toEqual(bytes(await new HashEmbedder().embed(texts)))
  } finally {
    pool.close()
  }
})

test('an ingest pipelined through the thread stores every chunk with its own vector, and the in-memory copy equals a rebuild', async () => {
  const db = openDatabase(':memory:')
  db.run("INSERT INTO users (id, email, password_hash, roles, created_at) VALUES ('u', 'u@example.com', 'x', '[\"user\"]', '')")
  const pool = new WorkPool({ size: 1, queueLimit: 16 })
  const threaded = new ThreadedHashEmbedder(pool)
  const cacheOptions = { minRows: 1, budgetBytes: 64 * 1024 * 1024 }
  const rag = new RagService({ db, embedder: async () => threaded, generator: async () => new ExtractiveGenerator(), vectorCache: cacheOptions })
  try {
    await rag.ingest('u', 'kb', [{ id: 'seed', content: 'Vacuum reclaims the space of dead rows.' }])
    await rag.search('u', 'kb', 'vacuum', 1) // the in-memory copy exists from here on, and follows the writes
    // Several write batches of documents of different lengths, so batches close at different places.
    const documents = Array.from({ length: 120 }, (_, i) => ({ id: `d${i}`, content: `${SAMPLES[i % SAMPLES.length]} Section ${i}.\n\n`.repeat(1 + (i % 9) * 6) }))
    const result = await rag.ingest('u', 'kb', documents)
    expect(result).toMatchObject({ ingested: 120, failed: 0 })
    const collection = rag.collection('u', 'kb')
    const rows = db
      .query<{ id: number; content: string; embedding: Uint8Array }, []>('SELECT c.id, c.content, v.embedding FROM rag_chunks c JOIN rag_vec_384 v ON v.rowid = c.id ORDER BY c.id')
      .all()
    expect(rows.length).toBeGreaterThan(WRITE_BATCH * 2)
    const local = new HashEmbedder()
    const expected = await local.embed(rows.map((row) => row.content))
    expect(rows.map((row) => [...row.embedding])).toEqual(bytes(expected))
    const fresh = new RagStore(db, cacheOptions)
    fresh.nearest(collection, new Float32Array(collection.dimensions).fill(1), 1)
    const entries = (m: Map<number, Float32Array>) => new Map([...m].map(([id, v]) => [id, [...v]]))
    expect(entries(matrixEntries(rag.store.cache.peek(collection.id)!))).toEqual(entries(matrixEntries(fresh.cache.peek(collection.id)!)))
    expect(pool.state().completed).toBeGreaterThan(1)
  } finally {
    pool.close()
    db.close()
  }
})
