// The index thread of SqliteRagStore's approximate vector indexes (see vector-index.ts): builds a
// collection's usearch index from the database (a read-only connection of its own),
// either whole from rag_vector_rows or by applying the changes since an earlier file to a copy of
// it, writes it to a new file and answers with what the database must record about that file; and
// checks an index file against what the database recorded (its size and checksum). It is the only
// code that reads whole index files or holds an index in memory: the request thread maps files
// read-only (usearch's view) and never waits for this one.
import { Database } from 'bun:sqlite'
import { closeSync, openSync, readSync, statSync } from 'node:fs'
import { caughtUp } from './vector-index-catch-up'
import { niceThisThread } from '../../../../core/thread-priority'
import { INDEX_SETTINGS, loadIndexLibrary } from './vector-index-library'

declare const self: Worker

/**
 * Niceness of this thread and of usearch's build threads (started from it, so they inherit it).
 * No request waits for a build (the collection is searched with its previous file and exactly
 * meanwhile), while an ingest's embedding runs on the work pool at WORKER_NICENESS (5): at 0, a
 * build on both cores took them from the ingest, which fell from ~4,500 to ~3,300 documents/s over
 * the last tenth of a million (docs/benchmarks.md). At 10 the scheduler gives the work pool about
 * three times its share and the request thread nine times; an idle core still builds at full speed.
 */
const BUILD_NICENESS = 10
niceThisThread(BUILD_NICENESS)

type Call = { id: number } & (
  | { kind: 'build'; database: string; collectionId: number; dimensions: number; out: string; base: string | null; baseSeq: number; threads: number }
  | { kind: 'verify'; path: string; bytes: number; checksum: string }
)

const BATCH = 8192

/** A file's checksum: SHA-1 of its bytes, read in 4 MB pieces (a file past the heap never is whole in memory). */
export function fileChecksum(path: string): string {
  const hasher = new Bun.CryptoHasher('sha1')
  const fd = openSync(path, 'r')
  try {
    const buffer = new Uint8Array(4 * 1024 * 1024)
    for (;;) {
      const read = readSync(fd, buffer, 0, buffer.length, null)
      if (read <= 0) break
      hasher.update(buffer.subarray(0, read))
    }
  } finally {
    closeSync(fd)
  }
  return hasher.digest('hex')
}

function build(call: Extract<Call, { kind: 'build' }>) {
  const usearch = loadIndexLibrary()
  if (!usearch) throw new Error('the usearch library cannot be loaded')
  const db = new Database(call.database, { readonly: true })
  try {
    db.run('PRAGMA busy_timeout = 5000')
    const index = new usearch.Index({ dimensions: call.dimensions, ...INDEX_SETTINGS })
    const bytes = call.dimensions * 4
    // The last change first, then the rows, each page of them in a read of its own: a build holds
    // no snapshot for its minutes (which would keep the WAL from being checkpointed and reset while
    // an ingest goes on). Rows written after `seq` may be read or not: they are all in the log past
    // `seq`, so they are searched exactly beside the file and re-applied by the next merge either way.
    let seq = db.query<{ seq: number | null }, [number]>('SELECT max(seq) AS seq FROM rag_vector_changes WHERE collection_id = ?').get(call.collectionId)?.seq ?? call.baseSeq
    const keys = new BigUint64Array(BATCH)
    const vectors = new Float32Array(BATCH * call.dimensions)
    let count = 0
    const flush = () => {
      if (!count) return
      index.add(keys.subarray(0, count), vectors.subarray(0, count * call.dimensions), call.threads)
      count = 0
    }
    const put = (chunkId: number, embedding: Uint8Array) => {
      if (embedding.byteLength !== bytes) return
      keys[count] = BigInt(chunkId)
      vectors.set(new Float32Array(embedding.buffer, embedding.byteOffset, call.dimensions), count * call.dimensions)
      if (++count === BATCH) flush()
    }
    if (call.base) {
      // The earlier file, with what changed since: removed and re-written chunks out, the current vectors of those still there in.
      index.load(call.base)
      const changed = db
        .query<{ chunk_id: number }, [number, number, number]>('SELECT DISTINCT chunk_id FROM rag_vector_changes WHERE collection_id = ? AND seq > ? AND seq <= ?')
        .all(call.collectionId, call.baseSeq, seq)
        .map((row) => row.chunk_id)
      const row = db.query<{ embedding: Uint8Array }, [number, number]>('SELECT embedding FROM rag_vector_rows WHERE chunk_id = ? AND collection_id = ?')
      for (const chunkId of changed) {
        if (index.contains(BigInt(chunkId))) index.remove(BigInt(chunkId))
        const found = row.get(chunkId, call.collectionId)
        if (found) put(chunkId, found.embedding)
      }
    } else {
      const page = db.query<{ chunk_id: number; embedding: Uint8Array }, [number, number, number]>(
        'SELECT chunk_id, embedding FROM rag_vector_rows WHERE collection_id = ? AND chunk_id > ? ORDER BY chunk_id LIMIT ?',
      )
      for (let after = 0; ; ) {
        const rows = page.all(call.collectionId, after, BATCH)
        for (const found of rows) put(found.chunk_id, found.embedding)
        if (rows.length < BATCH) break
        after = rows[rows.length - 1]!.chunk_id
      }
      flush()
      seq = caughtUp(db, index, call.collectionId, seq, put)
    }
    flush()
    index.save(call.out)
    const size = statSync(call.out).size
    return { seq, rows: index.size(), bytes: size, checksum: fileChecksum(call.out) }
  } finally {
    db.close()
  }
}

self.addEventListener('message', (event: MessageEvent<Call>) => {
  const call = event.data
  try {
    if (call.kind === 'build') {
      self.postMessage({ id: call.id, ...build(call) })
      // The index built (native memory, about its file's size: ~0.5 GB at a million chunks) is freed
      // by its finalizer, which only a collection of this thread's heap runs; an idle thread is
      // not collected for a long time, and the memory stayed resident beside the searches' own.
      Bun.gc(true)
      return
    }
    let problem: string | null = null
    try {
      const size = statSync(call.path).size
      if (size !== call.bytes) problem = `its size is ${size} bytes, ${call.bytes} expected`
      else if (fileChecksum(call.path) !== call.checksum) problem = 'its checksum differs from the one recorded'
    } catch (error) {
      problem = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'the file is missing' : (error as Error).message
    }
    self.postMessage({ id: call.id, problem })
  } catch (error) {
    self.postMessage({ id: call.id, failure: (error as Error)?.message ?? String(error) })
  }
})
