// Large collections' keyword queries on SQLite run on a thread of their own (keyword-reader.worker.ts)
// while the vectors are scanned: the same results as on the calling thread, a failed thread answered
// for here, and a collection deleted during a search gives no error.
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { openDatabase } from '../../src/db'
import { ExtractiveGenerator } from '../../src/ml/builtin/extractive-generator'
import { HashEmbedder } from '../../src/ml/builtin/hash-embedder'
import { RagService } from '../../src/modules/rag/service'
import type { SqliteRagStore } from '../../src/modules/rag/store/sqlite'
import corpus from '../fixtures/rag-corpus.json'
import { tempDir } from '../temp'

const embedder = new HashEmbedder()

/** A RagService whose collections are all "large" (vectors in memory from the first chunk), on a database file or in memory. */
function service(path: string) {
  const db = openDatabase(path)
  db.run("INSERT INTO users (id, email, password_hash, roles, created_at) VALUES ('u', 'u@example.com', 'x', '[\"user\"]', '')")
  return new RagService({ db, embedder: async () => embedder, generator: async () => new ExtractiveGenerator(), vectorCache: { minRows: 1, budgetBytes: 64 * 1024 * 1024 } })
}

const reader = (rag: RagService) => ((rag.store as SqliteRagStore).keywords as unknown as { reader: { running: boolean; close(reason?: string): void } | null }).reader

// The corpus twice, under other ids: copies too, so that the thread's matches go through distinctHits.
const documents = [...corpus.documents, ...corpus.documents.map((d) => ({ ...d, id: `copy/${d.id}` }))]

describe('keyword thread (SQLite, large collections)', () => {
  test('a database file: its keyword queries run on the thread, with exactly the results of the calling thread', async () => {
    const onFile = service(join(tempDir('keyword-thread'), 'uagent.db'))
    const inMemory = service(':memory:')
    for (const rag of [onFile, inMemory]) await rag.ingest('u', 'kb', documents)
    expect(reader(inMemory)).toBeNull()
    for (const query of corpus.queries.flatMap((q) => [q.keyword, q.paraphrase])) {
      const [threaded, here] = await Promise.all([onFile.search('u', 'kb', query, 5), inMemory.search('u', 'kb', query, 5)])
      expect(threaded.results.map((r) => [r.id, r.score])).toEqual(here.results.map((r) => [r.id, r.score]))
    }
    expect(reader(onFile)!.running).toBe(true)
  })

  test('a thread that fails with a query in flight, or cannot start: the query is answered here, with the same results', async () => {
    const rag = service(join(tempDir('keyword-thread'), 'uagent.db'))
    await rag.ingest('u', 'kb', documents)
    const query = corpus.queries[0]!.keyword
    const before = await rag.search('u', 'kb', query, 5)
    const pending = rag.search('u', 'kb', query, 5)
    reader(rag)!.close('stopped by the test')
    expect((await pending).results).toEqual(before.results)
    // The next query starts a new thread.
    expect((await rag.search('u', 'kb', query, 5)).results).toEqual(before.results)
    expect(reader(rag)!.running).toBe(true)
    // No thread can be started at all (a runtime without workers): the queries run here.
    const threads = (rag.store as SqliteRagStore).keywords as unknown as Record<'reader' | 'warmer', { call: () => never }>
    for (const name of ['reader', 'warmer'] as const) {
      threads[name].call = () => {
        throw new Error('no worker threads here')
      }
    }
    expect((await rag.search('u', 'kb', query, 5)).results).toEqual(before.results)
  })

  test('a collection deleted while its keyword query runs on the thread: the search ends without an error, and the next one is a 404', async () => {
    const rag = service(join(tempDir('keyword-thread'), 'uagent.db'))
    await rag.ingest('u', 'kb', documents)
    // A first search loads the collection's vectors: from then on its keyword queries go to the thread.
    await rag.search('u', 'kb', 'password', 5)
    // The collection goes the moment its query is handed to the thread.
    const calls = reader(rag) as unknown as { call: (...args: unknown[]) => Promise<unknown> }
    const call = calls.call.bind(calls)
    let deleted = 0
    calls.call = (...args) => {
      const reply = call(...args)
      if (!deleted++) rag.deleteCollection('u', 'kb')
      return reply
    }
    expect((await rag.search('u', 'kb', corpus.queries[1]!.keyword, 5)).results).toEqual([])
    expect(deleted).toBeGreaterThan(0)
    expect(await rag.search('u', 'kb', 'password', 5).then(() => 'found', (error) => error.code)).toBe('NOT_FOUND')
  })

  test("a large collection's common terms are counted ahead on a thread of their own, exactly, and counted again after a write", async () => {
    const rag = service(join(tempDir('keyword-thread'), 'uagent.db'))
    const notes = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ id: `note-${from + i}`, content: `Harbor note ${from + i}: the ferry schedule changes on day ${from + i} of the season.` }))
    await rag.ingest('u', 'port', notes(80))
    const store = (rag.store as SqliteRagStore).keywords as unknown as { frequencies: Map<number, Map<string, number>> }
    const { id } = rag.collection('u', 'port')
    const counted = async (token: string) => {
      for (let waited = 0; waited < 3000; waited += 20) {
        const count = store.frequencies.get(id)?.get(token)
        if (count !== undefined) return count
        await Bun.sleep(20)
      }
      return undefined
    }
    // The first search loads the vectors; a search of a large collection then has its common terms counted.
    await rag.search('u', 'port', 'harbor lighthouse', 5)
    await rag.search('u', 'port', 'harbor lighthouse', 5)
    // Words no question looked up, in 80 and 80 chunks; a word in one chunk is not counted ahead.
    expect(await counted('ferri')).toBe(80)
    expect(await counted('season')).toBe(80)
    expect(store.frequencies.get(id)!.has('79')).toBe(false)
    await rag.ingest('u', 'port', notes(20, 80))
    await rag.search('u', 'port', 'harbor lighthouse', 5)
    expect(await counted('ferri')).toBe(100)
  })
})
