import { expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../src/db'
import { HashEmbedder } from '../../src/ml/builtin/hash-embedder'
import { SqliteRagStore as RagStore } from '../../src/modules/rag/store/sqlite'

test('a batch written while another connection holds the write lock waits for it instead of failing with SQLITE_BUSY', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rag-lock-'))
  const path = join(dir, 'db.sqlite')
  const db = openDatabase(path)
  try {
    db.run("INSERT INTO users (id, email, password_hash, roles, created_at) VALUES ('u', 'u@example.com', 'x', '[\"user\"]', '')")
    const store = new RagStore(db)
    const collection = store.createCollection('u', 'kb', 'builtin', 384)
    const [vector] = await new HashEmbedder().embed(['Checkpoints flush the write-ahead log.'])
    const document = (docId: string) => ({ docId, content: 'Checkpoints flush the write-ahead log.', metadata: {}, chunks: ['Checkpoints flush the write-ahead log.'], vectors: [vector!] })
    // Read first: this connection's snapshot predates the other connection's commit.
    store.writeDocuments(collection, [document('before')])
    const worker = new Worker(new URL('../fixtures/hold-write-lock.worker.ts', import.meta.url).href)
    const messages: string[] = []
    const locked = new Promise<void>((resolve) =>
      worker.addEventListener('message', (event: MessageEvent<string>) => {
        messages.push(event.data)
        if (event.data === 'locked') resolve()
      }),
    )
    worker.postMessage({ path, holdMs: 300 })
    await locked
    // Re-ingesting an id reads before it writes: deferred, that read would pin a snapshot the other commit makes stale.
    store.writeDocuments(collection, [document('before'), document('after')])
    await Bun.sleep(10)
    worker.terminate()
    expect(messages).toEqual(['locked', 'committed'])
    expect(db.query('SELECT doc_id FROM rag_documents ORDER BY doc_id').all()).toEqual([{ doc_id: 'after' }, { doc_id: 'before' }])
    expect(db.query('SELECT count(*) AS n FROM schema_migrations WHERE version = 9999').get()).toEqual({ n: 1 })
  } finally {
    db.close()
    rmSync(dir, { recursive: true, force: true })
  }
})
