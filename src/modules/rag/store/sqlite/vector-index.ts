import type { Database } from 'bun:sqlite'
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { WorkerCalls } from '../../../../core/worker-calls'
import { cosine, scanNearest, VectorCache } from '../../vectors/cache'
import { indexLibraryProblem, loadIndexLibrary, SEARCH_EXPANSION, SEARCH_SETTINGS, type UsearchIndex, type UsearchLibrary } from './vector-index-library'

/**
 * The approximate vector indexes of large SQLite collections (issue 54). A collection of
 * `minChunks` chunks or more gets a usearch HNSW index over int8 vectors, in a file of
 * `<data>/vector-index/`, mapped read-only (usearch's view: served from the page cache, not the
 * heap). The database stays the source of truth:
 * - `rag_vector_indexes` records which file serves the collection and what it must agree with: the
 *   last change it holds (`built_seq`), its rows, bytes and SHA-1. At start each file is checked
 *   against it on the index thread; a file missing, cut short, damaged or from another database is
 *   rebuilt from the tables, and the collection is searched exactly meanwhile.
 * - every write to an indexed collection logs its chunks in `rag_vector_changes`, in the write's own
 *   transaction. What the file does not hold yet (the changes past `built_seq`) is kept here in
 *   memory: the chunks changed since (whose entries in the file are stale) and the current vectors of
 *   those still there, searched exactly beside the file. A crash between a commit and any index
 *   work loses nothing: the changes are in the log, and the next start reads them.
 * - once enough has changed (MERGE_SHARE of the file's rows, at least MERGE_MIN), the index thread
 *   writes a new file (the old one loaded, the changes applied) and the request thread switches to
 *   it; the log up to it is then dropped.
 * The index's candidates (RESCORE_DEPTH of them at least) are rescored exactly with the stored float
 * vectors (rag_vector_rows, a point look-up each): the distances a search returns are exact, only
 * which chunks are candidates is approximate. Without usearch (not loadable here, or
 * UAGENT_VECTOR_INDEX=off) every collection is searched exactly, as before.
 */
export interface VectorIndexOptions {
  /** False: no index at all (UAGENT_VECTOR_INDEX=off). */
  enabled: boolean
  /** Chunks from which a collection gets an index (UAGENT_ANN_MIN_CHUNKS). */
  minChunks: number
  /** Memory the vectors not yet in an index file may take, in all; past it a collection is searched exactly until its next file. */
  pendingBudgetBytes: number
  /** Threads an index build uses (usearch's own; 0: one per core). */
  buildThreads: number
  /** Candidates kept while walking the graph per search (UAGENT_ANN_EXPANSION): more finds more of the exact nearest, and costs time in proportion. */
  searchExpansion: number
  /** The index library, or null when it cannot be loaded (tests pass one that cannot). */
  library?: () => UsearchLibrary | null
  log?: (line: string) => void
}

export const DEFAULT_VECTOR_INDEX: VectorIndexOptions = { enabled: true, minChunks: 50_000, pendingBudgetBytes: 256 * 1024 * 1024, buildThreads: 0, searchExpansion: SEARCH_EXPANSION }

/** Candidates asked of the index per search at least (each rescored exactly); more for larger k. */
export const RESCORE_DEPTH = 100
/** Candidates rescored per chunk wanted (see nearest). */
const RESCORE_SHARE = 2
/** A new file is written once this share of the file's rows changed since it was written… */
const MERGE_SHARE = 0.05
/** …and at least this many chunks did. */
const MERGE_MIN = 2_000
/**
 * Files are written once a collection has been quiet this long (ms) after its last write: a bulk
 * ingest is not slowed by index work on the same two cores (its collection is searched with the
 * previous file and its pending vectors, or exactly, meanwhile)…
 */
const QUIET_MS = 1_000
/** …unless changes have waited this long (ms), or the pending vectors outgrew their budget. */
const MAX_WAIT_MS = 60_000

export type IndexStatus = 'verifying' | 'building' | 'ready' | 'exact'

interface IndexState {
  collectionId: number
  publicId: string
  dimensions: number
  /** The file serving the collection (name within the folder), its recorded figures. */
  file: string | null
  builtSeq: number
  rows: number
  bytes: number
  checksum: string | null
  /** The mapped file, once verified. */
  index: UsearchIndex | null
  /** Chunks changed since the file was written: their entries in it are stale. */
  changed: Set<number>
  /** A build or check is under way on the index thread. */
  busy: boolean
  /** The pending vectors outgrew their budget: searched exactly until the next file. */
  overflow: boolean
  /** Dropped (collection deleted): late replies are ignored. */
  gone: boolean
  timer: ReturnType<typeof setTimeout> | null
  /** When the changes not yet in a file (or the want of a first file) began to wait. */
  since: number | null
  /** Why the last build failed, if it did. */
  problem: string | null
}

export interface VectorSearchState {
  /** Which path serves large collections: `usearch` (approximate index, rescored exactly) or `exact`. */
  path: 'usearch' | 'exact'
  /** Why the index does not serve (library not loadable, turned off). */
  reason?: string
  annMinChunks: number
  indexes: { ready: number; building: number }
  /** Bytes of the mapped index files and of the vectors not yet in one (Prometheus). */
  mappedBytes: number
  pendingBytes: number
}

/** The folder of a database's index files: `vector-index/` beside it (in the data dir). */
export function indexFolderOf(databaseFile: string): string {
  return join(dirname(databaseFile), 'vector-index')
}

export class VectorIndexes {
  private readonly states = new Map<number, IndexState>()
  /**
   * Collections with an index, whose writes are logged: also while this server cannot serve the
   * index (no library, turned off), so that a later start with it applies what was written meanwhile.
   */
  private readonly logged = new Set<number>()
  /** The vectors not yet in a file, per collection (exactly searched). */
  private readonly pending: VectorCache
  private readonly library: UsearchLibrary | null
  private readonly reason: string | null
  private readonly folder: string | null
  private readonly thread: WorkerCalls | null
  private closed = false

  constructor(
    private readonly db: Database,
    private readonly options: VectorIndexOptions = DEFAULT_VECTOR_INDEX,
  ) {
    this.pending = new VectorCache({ minRows: 0, budgetBytes: options.pendingBudgetBytes })
    const onFile = Boolean(db.filename) && db.filename !== ':memory:'
    this.folder = onFile ? indexFolderOf(db.filename) : null
    if (!options.enabled) {
      this.library = null
      this.reason = 'turned off (UAGENT_VECTOR_INDEX=off)'
    } else if (!onFile) {
      this.library = null
      this.reason = 'an in-memory database keeps no index files'
    } else {
      this.library = (options.library ?? loadIndexLibrary)()
      this.reason = this.library ? null : `the usearch library cannot be loaded (${indexLibraryProblem() ?? 'not available'})`
    }
    this.thread = this.library ? new WorkerCalls(new URL('./vector-index.worker.ts', import.meta.url).href) : null
    for (const row of db.query<{ collection_id: number }, []>('SELECT collection_id FROM rag_vector_indexes').all()) this.logged.add(row.collection_id)
    if (this.library) this.open()
  }

  /** Whether writes to this collection are logged (it has an index, ready or not). */
  indexed(collectionId: number): boolean {
    return this.states.has(collectionId)
  }

  get serving(): boolean {
    return this.library !== null
  }

  state(): VectorSearchState {
    let ready = 0
    let building = 0
    let mappedBytes = 0
    for (const state of this.states.values()) {
      if (state.index && !state.overflow) ready++
      if (state.busy || state.timer) building++
      if (state.index) mappedBytes += state.bytes
    }
    return {
      path: this.library ? 'usearch' : 'exact',
      ...(this.reason ? { reason: this.reason } : {}),
      annMinChunks: this.options.minChunks,
      indexes: { ready, building },
      mappedBytes,
      pendingBytes: this.pending.usedBytes,
    }
  }

  /** A collection's index status: `exact` when it has none (too small, or no library). */
  status(collectionId: number): IndexStatus {
    const state = this.states.get(collectionId)
    if (!state) return 'exact'
    if (state.index && !state.overflow) return 'ready'
    return state.busy ? (state.file && !state.index ? 'verifying' : 'building') : 'exact'
  }

  /** Reads the indexed collections, checks their files on the index thread, removes files no collection names. */
  private open(): void {
    const rows = this.db
      .query<{ collection_id: number; public_id: string; dimensions: number; file: string | null; built_seq: number; rows: number; bytes: number; checksum: string | null }, []>(
        `SELECT i.collection_id, c.public_id, c.dimensions, i.file, i.built_seq, i.rows, i.bytes, i.checksum
         FROM rag_vector_indexes i JOIN rag_collections c ON c.id = i.collection_id`,
      )
      .all()
    const named = new Set(rows.map((row) => row.file).filter(Boolean))
    // The folder is made with the first file (a data dir without large collections has none).
    if (existsSync(this.folder!)) for (const name of readdirSync(this.folder!)) if (!named.has(name)) rmSync(join(this.folder!, name), { force: true })
    for (const row of rows) {
      const state = this.newState(row.collection_id, row.public_id, row.dimensions)
      Object.assign(state, { file: row.file, builtSeq: row.built_seq, rows: row.rows, bytes: row.bytes, checksum: row.checksum })
      this.states.set(row.collection_id, state)
      if (row.file && row.checksum) this.verify(state)
      else this.build(state, false)
    }
  }

  private newState(collectionId: number, publicId: string, dimensions: number): IndexState {
    return { collectionId, publicId, dimensions, file: null, builtSeq: 0, rows: 0, bytes: 0, checksum: null, index: null, changed: new Set(), busy: false, overflow: false, gone: false, timer: null, since: null, problem: null }
  }

  private verify(state: IndexState): void {
    state.busy = true
    this.thread!.call<{ problem?: string | null; failure?: string }>({ kind: 'verify', path: join(this.folder!, state.file!), bytes: state.bytes, checksum: state.checksum })
      .then((reply) => {
        if (state.gone || this.closed) return
        state.busy = false
        const problem = reply.failure ?? reply.problem ?? null
        if (problem) {
          this.log(`Vector index of collection ${state.publicId}: ${problem}; rebuilding it from the database (searched exactly meanwhile)`)
          this.build(state, false)
          return
        }
        this.serve(state)
      })
      .catch((error) => {
        if (state.gone || this.closed) return
        state.busy = false
        state.problem = (error as Error).message
      })
  }

  /** Maps the collection's file and reads what changed since it was written. */
  private serve(state: IndexState): void {
    try {
      const index = new this.library!.Index({ dimensions: state.dimensions, ...SEARCH_SETTINGS })
      index.view(join(this.folder!, state.file!))
      state.index = index
    } catch (error) {
      this.log(`Vector index of collection ${state.publicId} cannot be mapped (${(error as Error).message}); rebuilding it`)
      state.index = null
      this.build(state, false)
      return
    }
    this.readPending(state)
  }

  /**
   * Lets go of the pages of a collection's mapped file that searches have read so far: they count
   * in the server's resident memory until the kernel needs them back, and once the collection's int8
   * columns answer its sparse queries, only a dense query walks the file again. The file is mapped
   * anew (usearch's view releases the earlier mapping first); nothing is read from it until a walk.
   */
  releasePages(collectionId: number): void {
    const state = this.states.get(collectionId)
    if (!state?.index || !state.file || !this.folder) return
    try {
      state.index.view(join(this.folder, state.file))
    } catch (error) {
      this.log(`Vector index of collection ${state.publicId} cannot be mapped again (${(error as Error).message}); rebuilding it`)
      state.index = null
      this.build(state, false)
    }
  }

  /** The changes past the file, from the log: which chunks changed, and the current vectors of those still there. */
  private readPending(state: IndexState): void {
    this.pending.invalidate(state.collectionId)
    state.changed = new Set(
      this.db
        .query<{ chunk_id: number }, [number, number]>('SELECT DISTINCT chunk_id FROM rag_vector_changes WHERE collection_id = ? AND seq > ?')
        .all(state.collectionId, state.builtSeq)
        .map((row) => row.chunk_id),
    )
    state.overflow = false
    const ids = [...state.changed]
    if (!ids.length) return
    const matrix = this.pending.matrix(
      state.collectionId,
      // Room for a few more at least (an empty matrix has no room to grow from).
      () => Math.max(ids.length, 16),
      state.dimensions,
      () => this.currentRows(state.collectionId, ids),
    )
    if (!matrix) state.overflow = true
    this.consider(state)
  }

  private *currentRows(collectionId: number, ids: number[]): Generator<{ id: number; bytes: Uint8Array }> {
    const row = this.db.query<{ embedding: Uint8Array }, [number, number]>('SELECT embedding FROM rag_vector_rows WHERE chunk_id = ? AND collection_id = ?')
    for (const id of ids) {
      const found = row.get(id, collectionId)
      if (found) yield { id, bytes: found.embedding }
    }
  }

  /**
   * Inside a write's transaction: logs the chunks it removed and added, for an indexed collection.
   * (A collection not indexed logs nothing; it gets an index from its rows when it grows past the size.)
   */
  logChanges(collectionId: number, removed: number[], added: number[]): void {
    if (!this.logged.has(collectionId)) return
    const insert = this.db.query<never, [number, number, number]>('INSERT INTO rag_vector_changes (collection_id, chunk_id, added) VALUES (?, ?, ?)')
    for (const id of removed) insert.run(collectionId, id, 0)
    for (const id of added) insert.run(collectionId, id, 1)
  }

  /**
   * After a write committed: its chunks join the pending ones (searched exactly beside the file), a
   * collection that grew past the size gets an index (`chunks`: its count, read only when needed).
   */
  written(collection: { id: number; public_id: string; dimensions: number }, removed: number[], added: { id: number; vector: Float32Array }[], chunks: () => number): void {
    if (!this.library || this.closed) return
    let state = this.states.get(collection.id)
    if (!state) {
      if (!added.length || chunks() < this.options.minChunks) return
      state = this.newState(collection.id, collection.public_id, collection.dimensions)
      this.db.run('INSERT OR REPLACE INTO rag_vector_indexes (collection_id, built_seq) VALUES (?, 0)', [collection.id])
      this.db.run('DELETE FROM rag_vector_changes WHERE collection_id = ?', [collection.id])
      this.states.set(collection.id, state)
      this.logged.add(collection.id)
      this.log(`Collection ${collection.public_id} has ${this.options.minChunks} chunks or more: it gets a vector index once its writes pause (searched exactly meanwhile)`)
      this.consider(state)
      return
    }
    // No file yet (the collection is searched exactly): what its first file will hold is read from
    // the tables and the log when it is written; nothing is kept in memory meanwhile.
    if (!state.index) {
      this.consider(state)
      return
    }
    for (const id of removed) state.changed.add(id)
    for (const { id } of added) state.changed.add(id)
    if (!state.overflow) {
      if (!this.pending.peek(collection.id)) {
        // No pending rows yet: an empty matrix to start from.
        this.pending.matrix(collection.id, () => Math.max(added.length, 16), collection.dimensions, () => [])
      }
      this.pending.update(collection.id, removed, added)
      if (!this.pending.peek(collection.id)) state.overflow = true
    }
    this.consider(state)
  }

  /**
   * Starts a new file (a first one, or the changes merged) once the collection has been quiet for
   * QUIET_MS; at once when the pending vectors overflowed their budget, or when enough changed
   * (MERGE_SHARE of the file) and the changes have waited MAX_WAIT_MS through a stream of writes.
   */
  private consider(state: IndexState): void {
    if (state.busy || state.gone || this.closed) return
    if (state.timer) clearTimeout(state.timer)
    state.timer = null
    if (state.index && !state.changed.size) {
      state.since = null
      return
    }
    state.since ??= Date.now()
    const enough = !state.index || state.changed.size >= Math.max(MERGE_MIN, state.rows * MERGE_SHARE)
    if (state.overflow || (enough && Date.now() - state.since >= MAX_WAIT_MS)) {
      this.build(state, state.index !== null)
      return
    }
    state.timer = setTimeout(() => {
      state.timer = null
      if (!state.busy && (state.changed.size || !state.index)) this.build(state, state.index !== null)
    }, QUIET_MS)
    state.timer.unref?.()
  }

  /** Writes a new file on the index thread: from the current one and the changes since (`merge`), or from the rows. */
  private build(state: IndexState, merge: boolean): void {
    if (state.busy || state.gone || this.closed) return
    state.busy = true
    const name = `${state.collectionId}-${state.publicId.slice(0, 8)}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}.usearch`
    const out = join(this.folder!, name)
    mkdirSync(this.folder!, { recursive: true, mode: 0o700 })
    const started = performance.now()
    this.thread!.call<{ seq?: number; rows?: number; bytes?: number; checksum?: string; failure?: string }>({
      kind: 'build',
      database: this.db.filename,
      collectionId: state.collectionId,
      dimensions: state.dimensions,
      out,
      base: merge && state.file ? join(this.folder!, state.file) : null,
      baseSeq: merge ? state.builtSeq : 0,
      threads: this.options.buildThreads,
    })
      .then((reply) => {
        state.busy = false
        if (state.gone || this.closed || reply.failure) {
          rmSync(out, { force: true })
          if (reply.failure && !state.gone && !this.closed) {
            state.problem = reply.failure
            this.log(`Vector index of collection ${state.publicId} could not be built: ${reply.failure}`)
          }
          return
        }
        // Recorded first, then served: a crash in between leaves the database naming the new file.
        const recorded = this.db.transaction(() => {
          const changes = this.db.run("UPDATE rag_vector_indexes SET file = ?, built_seq = ?, rows = ?, bytes = ?, checksum = ?, built_at = datetime('now') WHERE collection_id = ?", [
            name,
            reply.seq!,
            reply.rows!,
            reply.bytes!,
            reply.checksum!,
            state.collectionId,
          ]).changes
          if (changes) this.db.run('DELETE FROM rag_vector_changes WHERE collection_id = ? AND seq <= ?', [state.collectionId, reply.seq!])
          return changes > 0
        }).immediate()
        if (!recorded) {
          rmSync(out, { force: true })
          return
        }
        const before = state.file
        state.since = null
        Object.assign(state, { file: name, builtSeq: reply.seq!, rows: reply.rows!, bytes: reply.bytes!, checksum: reply.checksum!, problem: null })
        this.log(`Vector index of collection ${state.publicId}: ${reply.rows} vectors ${merge ? 'merged' : 'built'} in ${((performance.now() - started) / 1000).toFixed(1)} s`)
        this.serve(state)
        if (before && before !== name) {
          rmSync(join(this.folder!, before), { force: true })
          // The previous file stays mapped until its index object is collected: asked for now (off this thread).
          Bun.gc(false)
        }
      })
      .catch((error) => {
        state.busy = false
        rmSync(out, { force: true })
        if (state.gone || this.closed) return
        state.problem = (error as Error).message
        this.log(`Vector index of collection ${state.publicId} could not be built: ${state.problem}`)
      })
  }

  /** Forgets a collection's index (inside its deletion's transaction, or when its id is given to a new one) and removes its file. */
  drop(collectionId: number): void {
    this.db.run('DELETE FROM rag_vector_indexes WHERE collection_id = ?', [collectionId])
    this.db.run('DELETE FROM rag_vector_changes WHERE collection_id = ?', [collectionId])
    this.logged.delete(collectionId)
    const state = this.states.get(collectionId)
    if (!state) return
    state.gone = true
    if (state.timer) clearTimeout(state.timer)
    this.states.delete(collectionId)
    this.pending.invalidate(collectionId)
    state.index = null
    if (state.file && this.folder) rmSync(join(this.folder, state.file), { force: true })
  }

  /**
   * The nearest chunks through the index, exactly rescored, or null when the collection is not
   * served by one now (then the caller searches exactly). `vectorsOf` reads stored vectors.
   */
  nearest(collectionId: number, query: Float32Array, k: number, vectorsOf: (ids: number[]) => Map<number, Float32Array>, distinct?: { dropped: number }): { chunkId: number; distance: number | null }[] | null {
    const state = this.states.get(collectionId)
    if (!state?.index || state.overflow) return null
    const matrix = this.pending.peek(collectionId)
    if (state.changed.size && !matrix) {
      // Its pending vectors were evicted to make room for another collection's: exact until its next file.
      state.overflow = true
      this.consider(state)
      return null
    }
    let queryNorm = 0
    for (let d = 0; d < query.length; d++) queryNorm += query[d]! * query[d]!
    if (queryNorm === 0) return []
    const inverseQuery = 1 / Math.sqrt(queryNorm)
    // Twins (one passage in several documents) count once: asked for with room for some.
    const wanted = distinct ? k * 2 : k
    // Rescored: twice what is wanted (each a row read, ~20 µs). Of the exact best 80 among the 1,024
    // a walk keeps, its int8 order puts all in its first 160 (0.9999 in its first 120; 120 queries,
    // 200,000 chunks of the scale corpus): twice as many found no more.
    const depth = Math.min(state.index.size(), Math.max(RESCORE_DEPTH, wanted * RESCORE_SHARE) + Math.min(state.changed.size, RESCORE_DEPTH * 4))
    // Asked for as many as the walk keeps (see SEARCH_SETTINGS); the best `depth` of them rescored.
    const hits = depth > 0 ? state.index.search(query, Math.min(state.index.size(), Math.max(depth, this.options.searchExpansion)), 1) : { keys: new BigUint64Array(0) }
    const ids: number[] = []
    for (let i = 0; i < Math.min(depth, hits.keys.length); i++) {
      const id = Number(hits.keys[i]!)
      if (!state.changed.has(id)) ids.push(id)
    }
    const found: { chunkId: number; similarity: number; vector: Float32Array | null }[] = []
    for (const [id, vector] of vectorsOf(ids)) found.push({ chunkId: id, similarity: cosine(vector, query, inverseQuery), vector })
    if (matrix && matrix.rows) {
      for (const hit of scanNearest(matrix, query, wanted)) found.push({ chunkId: hit.chunkId, similarity: hit.distance === null ? 0 : 1 - hit.distance, vector: null })
    }
    found.sort((a, b) => b.similarity - a.similarity || a.chunkId - b.chunkId)
    const result: { chunkId: number; distance: number | null }[] = []
    const seen = new Map<number, number[]>()
    for (const hit of found) {
      if (result.length >= k) break
      if (distinct) {
        const vector = hit.vector ?? vectorsOf([hit.chunkId]).get(hit.chunkId)
        if (vector) {
          const key = Number(Bun.hash.wyhash(new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength)) & 0xffffffffn)
          const scores = seen.get(key)
          if (scores?.includes(hit.similarity)) {
            distinct.dropped++
            continue
          }
          if (scores) scores.push(hit.similarity)
          else seen.set(key, [hit.similarity])
        }
      }
      result.push({ chunkId: hit.chunkId, distance: 1 - hit.similarity })
    }
    return result
  }

  /** Resolves once no build or check is under way (tests, the bench; `timeoutMs` at most). */
  async settled(timeoutMs = 600_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      const states = [...this.states.values()]
      if (states.every((state) => !state.busy && !state.timer)) return
      await Bun.sleep(20)
    }
  }

  /** Writes a file for every indexed collection with pending changes now (tests, the bench). */
  flush(): void {
    for (const state of this.states.values()) {
      if (state.timer) clearTimeout(state.timer)
      state.timer = null
      if (state.changed.size || !state.index) this.build(state, state.index !== null)
    }
  }

  /** Stops the index thread; files are left as they are (the database says what they hold). */
  close(): void {
    this.closed = true
    for (const state of this.states.values()) if (state.timer) clearTimeout(state.timer)
    this.thread?.close('the store closed')
  }

  private log(line: string): void {
    ;(this.options.log ?? ((text: string) => console.error(text)))(line)
  }
}
