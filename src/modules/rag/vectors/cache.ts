import { createDotKernel, createInt8Kernel, type DotKernel, type Int8Kernel } from './simd-dot'

/**
 * An exact in-memory copy of large collections' vectors. sqlite-vec's scan runs ~0.5 µs per
 * 384-dimension vector here (about 55 ms at 100,000 chunks); a contiguous matrix scored by a
 * WebAssembly SIMD kernel (./simd-dot.ts) is about three times faster, and just as exact
 * (a plain-TypeScript loop with four accumulators, when dimensions are not a multiple of 16,
 * about 1.7 times). Collections below `minRows` chunks are left to sqlite-vec; the copies are
 * built lazily from the vec0 table on a collection's first search, then follow every committed
 * write row by row (nothing reloads a collection after a write), and are evicted
 * least-recently-used past `budgetBytes`.
 */
export interface VectorCacheOptions {
  minRows: number
  budgetBytes: number
}

export const DEFAULT_VECTOR_CACHE: VectorCacheOptions = { minRows: 10_000, budgetBytes: 512 * 1024 * 1024 }

const ROW_OVERHEAD = 16 // id (8 bytes) + inverse norm (4) + twin key (4)
const GROWTH = 1.5

export interface Matrix {
  dimensions: number
  /** Rows in use; the arrays have room for `capacity`. */
  rows: number
  capacity: number
  ids: Float64Array
  vectors: Float32Array
  /** 1 / norm of each row (0 for a zero vector). */
  inverseNorms: Float32Array
  /** chunk id → row. */
  rowOf: Map<number, number>
  /** The SIMD kernel that owns `vectors`, when there is one. */
  kernel: DotKernel | null
  /**
   * An int8 copy of the rows (each scaled by its largest component), scanned first: stored
   * column-major, so that a sparse query reads only its non-zero columns.
   */
  quantized: Int8Kernel | null
  /**
   * Per row, from the int8 scale s (largest |component| / 127), the L1 norm and the inverse norm:
   * s / norm, which turns an int8 dot product into an estimate of the cosine similarity, and
   * (‖v‖₁/2 + D·s/4) / norm, the row's own part of that estimate's error bound (see quantizedNearest).
   */
  estimateScales: Float64Array
  boundTerms: Float64Array
  /**
   * Per row: a 32-bit hash of the vector's bits. Two chunks with the same text have the same vector
   * (the embedders are deterministic), so rows with one key and one similarity are twins: copies of
   * one passage in several documents, which a distinct scan counts once (see scanNearest).
   */
  keys: Int32Array
  /**
   * Only the int8 copy, no float32 vectors (a quarter of the bytes): a large collection's, whose
   * candidates are rescored with their stored vectors (see columnsNearest). `vectors` is empty.
   */
  columnsOnly: boolean
  /** Still being read from the database (see VectorCache.columns); writes already follow it. */
  loading: boolean
}

// The int8 copy: a byte per dimension, the estimate scale and bound term (float64 each), a score
// (a columns-only row has no bound term).
const rowBytes = (dimensions: number, quantized: boolean) => dimensions * 4 + ROW_OVERHEAD + (quantized ? dimensions + 20 : 0)
// A columns-only row: the int8 copy and the row's numbers, no float32 vector, and its entry in
// `rowOf` (a Map entry takes ~61 bytes in Bun, measured at 1,000,000 rows), counted here because a
// million of them is a tenth of the matrix.
const MAP_ENTRY_BYTES = 64
const columnsRowBytes = (dimensions: number) => dimensions + ROW_OVERHEAD + 12 + MAP_ENTRY_BYTES
const bytesPerRow = (matrix: Matrix) => (matrix.columnsOnly ? columnsRowBytes(matrix.dimensions) : rowBytes(matrix.dimensions, matrix.quantized !== null))
const matrixBytes = (matrix: Matrix) => matrix.capacity * bytesPerRow(matrix)

/** A row of a cached matrix as its own vector, or undefined when the chunk is not in it. */
export function cachedVector(matrix: Matrix, chunkId: number): Float32Array | undefined {
  if (matrix.columnsOnly) return undefined
  const row = matrix.rowOf.get(chunkId)
  return row === undefined ? undefined : matrix.vectors.subarray(row * matrix.dimensions, (row + 1) * matrix.dimensions)
}

/** Every (chunk id, vector) of a matrix, in no particular order. */
export function matrixEntries(matrix: Matrix): Map<number, Float32Array> {
  return new Map([...matrix.rowOf.keys()].map((id) => [id, cachedVector(matrix, id)!]))
}

function emptyMatrix(capacity: number, dimensions: number, columnsOnly = false): Matrix {
  const kernel = columnsOnly ? null : createDotKernel(capacity, dimensions)
  return {
    columnsOnly,
    loading: false,
    quantized: columnsOnly || kernel ? createInt8Kernel(capacity, dimensions) : null,
    estimateScales: new Float64Array(capacity),
    // Only the exact int8 path's bound uses it (not columnsNearest).
    boundTerms: new Float64Array(columnsOnly ? 0 : capacity),
    keys: new Int32Array(capacity),
    dimensions,
    rows: 0,
    capacity,
    ids: new Float64Array(capacity),
    vectors: kernel?.vectors ?? new Float32Array(columnsOnly ? 0 : capacity * dimensions),
    inverseNorms: new Float32Array(capacity),
    rowOf: new Map(),
    kernel,
  }
}

/** Room for `capacity` rows; false when there is no memory for it. */
function growMatrix(matrix: Matrix, capacity: number): boolean {
  if (matrix.kernel) {
    if (!matrix.kernel.grow(capacity)) return false
    matrix.vectors = matrix.kernel.vectors
  } else if (!matrix.columnsOnly) {
    const vectors = new Float32Array(capacity * matrix.dimensions)
    vectors.set(matrix.vectors.subarray(0, matrix.rows * matrix.dimensions))
    matrix.vectors = vectors
  }
  if (matrix.quantized && !matrix.quantized.grow(capacity)) return false
  const grown = <T extends Float64Array | Float32Array | Int32Array>(array: T, make: (n: number) => T): T => {
    const next = make(capacity)
    next.set(array.subarray(0, matrix.rows) as never)
    return next
  }
  matrix.ids = grown(matrix.ids, (n) => new Float64Array(n))
  matrix.inverseNorms = grown(matrix.inverseNorms, (n) => new Float32Array(n))
  matrix.estimateScales = grown(matrix.estimateScales, (n) => new Float64Array(n))
  if (!matrix.columnsOnly) matrix.boundTerms = grown(matrix.boundTerms, (n) => new Float64Array(n))
  matrix.keys = grown(matrix.keys, (n) => new Int32Array(n))
  matrix.capacity = capacity
  return true
}

/** FNV-1a over a row's float bits: equal vectors, equal keys. */
function rowKey(vectors: Float32Array, offset: number, dimensions: number): number {
  const bits = new Int32Array(vectors.buffer, vectors.byteOffset + offset * 4, dimensions)
  let hash = 0x811c9dc5
  for (let d = 0; d < dimensions; d++) hash = Math.imul(hash ^ bits[d]!, 0x01000193)
  return hash
}

/**
 * The first `k` of `hits` (best first; read only as far as needed) with each chunk's twins left
 * out: a hit whose row has the key of an earlier kept hit's row and the same `score` is a copy of
 * it. Hits not in the matrix are all kept. `dropped` counts what was left out.
 */
export function distinctHits<T extends { chunkId: number }>(matrix: Matrix | undefined, hits: Iterable<T>, k: number, score: (hit: T) => number | null, report?: { dropped: number }): T[] {
  return firstDistinct(
    hits,
    k,
    (hit) => {
      const row = matrix?.rowOf.get(hit.chunkId)
      return row === undefined ? undefined : matrix!.keys[row]
    },
    score,
    report,
  )
}

/**
 * The first `k` of `items` (best first; read only as far as needed), each one whose `key` and
 * `score` an earlier kept item already had left out (and counted in `report.dropped`); an item
 * without a key is always kept. What distinctHits and distinctRows share.
 */
function firstDistinct<T>(items: Iterable<T>, k: number, key: (item: T) => number | undefined, score: (item: T) => number | null, report?: { dropped: number }): T[] {
  const kept: T[] = []
  if (k <= 0) return kept
  const seen = new Map<number, (number | null)[]>()
  // Stops once `k` are kept, without asking `items` for one more (a lazy order sorts no further).
  for (const item of items) {
    const own = key(item)
    if (own !== undefined) {
      const scores = seen.get(own)
      const value = score(item)
      if (scores?.includes(value)) {
        if (report) report.dropped++
        continue
      }
      if (scores) scores.push(value)
      else seen.set(own, [value])
    }
    kept.push(item)
    if (kept.length >= k) break
  }
  return kept
}

let quantizedRow = new Int8Array(0)
let floatRow = new Float32Array(0)

/** A row's float32 values: the vector itself, or its bytes copied into a scratch row (blobs from SQLite need not be 4-byte aligned). */
function floatsOf(vector: Uint8Array | Float32Array, dimensions: number): Float32Array {
  if (vector instanceof Float32Array) return vector.subarray(0, dimensions)
  if (floatRow.length !== dimensions) floatRow = new Float32Array(dimensions)
  new Uint8Array(floatRow.buffer).set(vector.subarray(0, dimensions * 4))
  return floatRow
}

/**
 * A row's numbers (its inverse norm, key, int8 scale terms) set, and its int8 values written to
 * `into` at `at` (when given).
 */
function rowNumbers(matrix: Matrix, row: number, values: Float32Array, into: Int8Array | null, at: number): void {
  const { dimensions } = matrix
  let norm = 0
  let l1 = 0
  let largest = 0
  for (let d = 0; d < dimensions; d++) {
    const x = values[d]!
    norm += x * x
    l1 += Math.abs(x)
    largest = Math.max(largest, Math.abs(x))
  }
  matrix.inverseNorms[row] = norm > 0 ? 1 / Math.sqrt(norm) : 0
  matrix.keys[row] = rowKey(values, 0, dimensions)
  if (into) {
    const scale = largest / 127
    for (let d = 0; d < dimensions; d++) into[at + d] = scale ? Math.round(values[d]! / scale) : 0
    const inverseNorm = matrix.inverseNorms[row]!
    matrix.estimateScales[row] = scale * inverseNorm
    matrix.boundTerms[row] = (l1 / 2 + (dimensions * scale) / 4) * inverseNorm
  }
}

/** Sets a row (already in range) from raw float32 bytes or a vector. */
function setRow(matrix: Matrix, row: number, id: number, vector: Uint8Array | Float32Array): void {
  const { dimensions } = matrix
  let values: Float32Array
  if (matrix.columnsOnly) values = floatsOf(vector, dimensions)
  else {
    // Blobs from SQLite need not be 4-byte aligned: copy their bytes into the aligned matrix.
    if (vector instanceof Float32Array) matrix.vectors.set(vector.subarray(0, dimensions), row * dimensions)
    else new Uint8Array(matrix.vectors.buffer, matrix.vectors.byteOffset + row * dimensions * 4, dimensions * 4).set(vector.subarray(0, dimensions * 4))
    values = matrix.vectors.subarray(row * dimensions, (row + 1) * dimensions)
  }
  // One scratch row for every call: a matrix is loaded a row at a time.
  if (matrix.quantized && quantizedRow.length < dimensions) quantizedRow = new Int8Array(dimensions)
  rowNumbers(matrix, row, values, matrix.quantized ? quantizedRow : null, 0)
  matrix.quantized?.setRow(row, quantizedRow)
  matrix.ids[row] = id
  matrix.rowOf.set(id, row)
}

/**
 * Rows read from the database for a matrix, each row's bytes freed as soon as the matrix has
 * copied them (the loop that builds it asks for the next row only then). Without it, every row's
 * bytes (some 170 MB at 110,000 chunks) stayed allocated until the collector came round, which,
 * next to a matrix that large, it does late: the server's memory peaked there.
 */
export function* freedAfterCopy<T extends { bytes: Uint8Array }>(rows: Iterable<T>): Generator<T> {
  for (const row of rows) {
    yield row
    const { bytes } = row
    // Only a buffer the row owns alone: detaching it (transfer to nothing) frees its memory now.
    if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer) {
      ;(bytes.buffer as ArrayBuffer & { transfer(length: number): ArrayBuffer }).transfer(0)
    }
  }
}

export class VectorCache {
  private readonly matrices = new Map<number, Matrix>()
  private bytes = 0
  private closed = false

  constructor(readonly options: VectorCacheOptions = DEFAULT_VECTOR_CACHE) {}

  /** Bytes the cached matrices take, in all (Prometheus: uagent_vector_cache_bytes). */
  get usedBytes(): number {
    return this.bytes
  }

  /** The cached matrix of a collection, if there is one (no loading). */
  peek(collectionId: number): Matrix | undefined {
    return this.matrices.get(collectionId)
  }

  invalidate(collectionId: number): void {
    const matrix = this.matrices.get(collectionId)
    if (!matrix) return
    this.bytes -= matrixBytes(matrix)
    this.matrices.delete(collectionId)
  }

  /**
   * Follows a committed write: the chunks `removed` leave the collection's matrix (the last row
   * fills each hole) and `added` ones are appended, growing it by half when full. A collection
   * without a matrix is left alone (its first search loads one); one that no longer fits the
   * budget is dropped.
   */
  update(collectionId: number, removed: number[], added: { id: number; vector: Float32Array }[]): void {
    const matrix = this.matrices.get(collectionId)
    if (!matrix) return
    const { dimensions } = matrix
    for (const id of removed) {
      const row = matrix.rowOf.get(id)
      if (row === undefined) continue
      const last = matrix.rows - 1
      matrix.rowOf.delete(id)
      if (row !== last) {
        matrix.vectors.copyWithin(row * dimensions, last * dimensions, (last + 1) * dimensions)
        matrix.ids[row] = matrix.ids[last]!
        matrix.inverseNorms[row] = matrix.inverseNorms[last]!
        matrix.estimateScales[row] = matrix.estimateScales[last]!
        matrix.boundTerms[row] = matrix.boundTerms[last]!
        matrix.keys[row] = matrix.keys[last]!
        matrix.quantized?.copyRow(last, row)
        matrix.rowOf.set(matrix.ids[row]!, row)
      }
      matrix.rows = last
    }
    if (!this.roomFor(collectionId, matrix, matrix.rows + added.length)) return
    for (const { id, vector } of added) {
      const existing = matrix.rowOf.get(id)
      setRow(matrix, existing ?? matrix.rows++, id, vector)
    }
  }

  /**
   * The collection's matrix: cached, or built with `load` when the collection is large enough
   * and fits the budget; null means "use sqlite-vec".
   */
  matrix(collectionId: number, countRows: () => number, dimensions: number, load: () => Iterable<{ id: number; bytes: Uint8Array }>): Matrix | null {
    const cached = this.matrices.get(collectionId)
    if (cached) {
      // A large collection's columns are searched by columnsNearest, never scanned as floats.
      if (cached.loading || cached.columnsOnly) return null
      this.touch(collectionId, cached)
      return cached
    }
    const rows = countRows()
    // Room to grow by a quarter before the first reallocation.
    const capacity = Math.ceil(rows * 1.25)
    const bytes = capacity * rowBytes(dimensions, dimensions % 16 === 0)
    if (rows < this.options.minRows || bytes > this.options.budgetBytes) return null
    this.makeRoom(bytes)
    // Row by row from `load` (an iterator over the database's rows, where it can be one): each
    // row's bytes are garbage as soon as they are in the matrix, rather than every row's at once
    // (some 170 MB at 110,000 chunks, held until the collector came round to them).
    const matrix = emptyMatrix(capacity, dimensions)
    for (const row of load()) {
      if (matrix.rows === matrix.capacity && !growMatrix(matrix, Math.max(matrix.rows + 1, Math.ceil(matrix.capacity * GROWTH)))) return null
      setRow(matrix, matrix.rows++, row.id, row.bytes)
    }
    this.matrices.set(collectionId, matrix)
    this.bytes += matrixBytes(matrix)
    return matrix
  }

  /**
   * Room in a matrix for `needed` rows: grown by half when full, or by what the budget still allows;
   * false (and the matrix dropped) when even `needed` would not fit.
   */
  private roomFor(collectionId: number, matrix: Matrix, needed: number): boolean {
    if (needed <= matrix.capacity) return true
    const before = matrixBytes(matrix)
    const affordable = Math.floor((this.options.budgetBytes - (this.bytes - before)) / bytesPerRow(matrix))
    const capacity = Math.min(Math.max(needed, Math.ceil(matrix.capacity * GROWTH)), affordable)
    if (capacity < needed || !growMatrix(matrix, capacity)) {
      this.invalidate(collectionId)
      return false
    }
    this.bytes += matrixBytes(matrix) - before
    return true
  }

  /** Drops the least recently used matrices until `bytes` more fit the budget. */
  private makeRoom(bytes: number): void {
    for (const [id] of this.matrices) {
      if (this.bytes + bytes <= this.options.budgetBytes) break
      this.invalidate(id)
    }
  }

  /** Re-inserts a matrix: Map order is the least-recently-used order. */
  private touch(collectionId: number, matrix: Matrix): void {
    this.matrices.delete(collectionId)
    this.matrices.set(collectionId, matrix)
  }

  /**
   * A large collection's columns-only matrix (the int8 copy alone, see columnsNearest) when it is
   * loaded; null while it is not (or cannot be: no WebAssembly SIMD, dimensions not a multiple of
   * 16, past the budget). The first call starts loading it in the background, a page of `PAGE_ROWS`
   * rows at a time (`loadPage(after, limit)`: rows of chunk ids above `after`, ascending), each
   * page a read of its own, in steps of STEP_MS between other work, so that a million rows (~12 s
   * alone, 26 s beside back-to-back searches) never hold a request up; writes meanwhile already go
   * to it through `update`.
   */
  columns(
    collectionId: number,
    countRows: () => number,
    dimensions: number,
    loadPage: (after: number, limit: number) => { id: number; bytes: Uint8Array }[],
    /** Called once the matrix is loaded. */
    loaded?: () => void,
  ): Matrix | null {
    const cached = this.matrices.get(collectionId)
    if (cached?.columnsOnly) {
      if (cached.loading) return null
      this.touch(collectionId, cached)
      return cached
    }
    // An exact copy made while the collection was smaller: four times the bytes, given up for its columns.
    if (cached) this.invalidate(collectionId)
    if (this.closed || dimensions % 16 !== 0) return null
    const rows = countRows()
    // 3 % more than there are, before the first reallocation (which moves every column).
    const capacity = Math.ceil(rows * 1.03) + 16
    const bytes = capacity * columnsRowBytes(dimensions)
    if (bytes > this.options.budgetBytes) return null
    this.makeRoom(bytes)
    const matrix = emptyMatrix(capacity, dimensions, true)
    if (!matrix.quantized) return null
    matrix.loading = true
    this.matrices.set(collectionId, matrix)
    this.bytes += matrixBytes(matrix)
    let after = 0
    const rowMajor = new Int8Array(PAGE_ROWS * dimensions)
    const step = () => {
      // Pages until STEP_MS have passed: a server answering requests back to back runs one step
      // between two of them.
      const started = performance.now()
      do {
        // Dropped meanwhile (the collection deleted, evicted, the store closed): nothing more to read.
        if (this.closed || this.matrices.get(collectionId) !== matrix) return
        try {
          const page = loadPage(after, PAGE_ROWS)
          if (!this.appendPage(collectionId, matrix, page, rowMajor)) return
          if (page.length) after = page[page.length - 1]!.id
          if (page.length < PAGE_ROWS) {
            matrix.loading = false
            loaded?.()
            return
          }
        } catch {
          // The database went away under it (closed): the next search starts again.
          this.invalidate(collectionId)
          return
        }
      } while (performance.now() - started < STEP_MS)
      setImmediate(step)
    }
    setImmediate(step)
    return null
  }

  /** Appends a page of rows read for a loading columns-only matrix; false when it no longer fits the budget (it is dropped). */
  private appendPage(collectionId: number, matrix: Matrix, page: { id: number; bytes: Uint8Array }[], rowMajor: Int8Array): boolean {
    if (!this.roomFor(collectionId, matrix, matrix.rows + page.length)) return false
    const { dimensions } = matrix
    const first = matrix.rows
    let count = 0
    // Each row's bytes freed once used (see freedAfterCopy): a million rows read are 1.5 GB of
    // blobs, which the collector otherwise let pile up (the server's peak was there).
    for (const { id, bytes } of freedAfterCopy(page)) {
      const existing = matrix.rowOf.get(id)
      // Written since the load began (a write re-adding a chunk id is rare): set where it is.
      if (existing !== undefined) {
        setRow(matrix, existing, id, bytes)
        continue
      }
      const row = first + count
      rowNumbers(matrix, row, floatsOf(bytes, dimensions), rowMajor, count * dimensions)
      matrix.ids[row] = id
      matrix.rowOf.set(id, row)
      count++
    }
    matrix.quantized!.setRows(first, count, rowMajor)
    matrix.rows = first + count
    return true
  }

  /** Columns-only matrices held: loaded, and being loaded. */
  columnsState(): { ready: number; loading: number } {
    let ready = 0
    let loading = 0
    for (const matrix of this.matrices.values()) if (matrix.columnsOnly) matrix.loading ? loading++ : ready++
    return { ready, loading }
  }

  /** Stops loading matrices (the store is closing); what is loaded stays readable. */
  close(): void {
    this.closed = true
  }
}

/** Rows read per page while a columns-only matrix loads in the background (~3 ms each), and how long a step of pages runs. */
const PAGE_ROWS = 2048
const STEP_MS = 8

/**
 * Nearest chunks through a columns-only matrix: every row scored by the int8 scan over the query's
 * non-zero columns, the best `1.25 × wanted + 16` by that estimate (wanted: k, or 2k with
 * `distinct`) rescored with their stored float32 vectors (`vectorsOf`, read from the database: ~20
 * µs each, the largest part of a search here), the best k of those returned with their exact
 * distances. Only which chunks are candidates is approximate: a chunk whose int8 estimate ranks it
 * past the rescored pool would be missed. At 200,000 chunks of the scale bench's corpus, 150
 * queries of each kind, k 40 with twins counted once, rescoring the best 80 found the same results
 * as rescoring the best 3,000 (and k 10 the same with 20); `bun run bench rag-scale` measures recall@10
 * against exact search on 1,000 queries. With `distinct`, twins count once.
 */
export function columnsNearest(
  matrix: Matrix,
  query: Float32Array,
  k: number,
  vectorsOf: (ids: number[]) => Map<number, Float32Array>,
  distinct?: { dropped: number },
  /** Candidates rescored (by default a quarter more than wanted, and 16). */
  rescored?: number,
): { chunkId: number; distance: number | null }[] {
  const { dimensions, rows, keys } = matrix
  let largest = 0
  let queryNorm = 0
  for (let d = 0; d < dimensions; d++) {
    largest = Math.max(largest, Math.abs(query[d]!))
    queryNorm += query[d]! * query[d]!
  }
  if (queryNorm === 0 || rows === 0 || k <= 0) return []
  const inverseQuery = 1 / Math.sqrt(queryNorm)
  const queryScale = largest / 127
  const quantizedQuery = new Int8Array(dimensions)
  for (let d = 0; d < dimensions; d++) quantizedQuery[d] = Math.round(query[d]! / queryScale)
  const dots = matrix.quantized!.scores(quantizedQuery, rows)
  const wanted = distinct ? k * 2 : k
  const pool = Math.min(rows, rescored ?? Math.ceil(wanted * 1.25) + 16)
  // Twins are left to distinctRows, which counts them.
  const bestRows = rowsByEstimate(dots, matrix.estimateScales, rows, pool, null)
  const rowOfId = new Map<number, number>()
  for (let slot = 0; slot < bestRows.length; slot++) if (bestRows[slot]! >= 0) rowOfId.set(matrix.ids[bestRows[slot]!]!, bestRows[slot]!)
  const found: { row: number; similarity: number }[] = []
  for (const [id, vector] of vectorsOf([...rowOfId.keys()])) found.push({ row: rowOfId.get(id)!, similarity: cosine(vector, query, inverseQuery) })
  found.sort((a, b) => b.similarity - a.similarity || matrix.ids[a.row]! - matrix.ids[b.row]!)
  const chosen = distinct ? distinctRows(found, keys, k, distinct) : found.slice(0, k)
  return chosen.map(({ row, similarity }) => ({ chunkId: matrix.ids[row]!, distance: matrix.inverseNorms[row] ? 1 - similarity : null }))
}

/** Cosine similarity of a stored vector and a query (given 1 / its norm), in float64: how candidates are rescored exactly. */
export function cosine(vector: Float32Array, query: Float32Array, inverseQuery: number): number {
  let dot = 0
  let norm = 0
  for (let d = 0; d < vector.length; d++) {
    dot += vector[d]! * query[d]!
    norm += vector[d]! * vector[d]!
  }
  return norm === 0 ? 0 : (dot / Math.sqrt(norm)) * inverseQuery
}

/**
 * Whether a query is sparse enough for a column scan to beat a graph walk: at most half its
 * components non-zero (the built-in embedder's questions have 4 to 90 of 384; a transformer's have
 * all). The scan's cost grows with the columns it reads (1,000,000 rows: ~3 ms for 8, ~15 for 90,
 * ~25 for 192, ~50–100 for 384, measured here), the walk's does not.
 */
export function isSparse(query: Float32Array): boolean {
  let nonZero = 0
  for (let d = 0; d < query.length; d++) if (query[d] !== 0) nonZero++
  return nonZero * 2 <= query.length
}

/**
 * Exact top-k by cosine distance over a matrix: `[{ chunkId, distance }]`, nearest first. With
 * `distinct`, twins (see Matrix.keys) count once: the top k are k different passages, and
 * `distinct.dropped` counts the copies left out.
 */
export function scanNearest(matrix: Matrix, query: Float32Array, k: number, distinct?: { dropped: number }): { chunkId: number; distance: number | null }[] {
  if (matrix.columnsOnly) throw new Error('a columns-only matrix has no float32 vectors to scan: see columnsNearest')
  const { dimensions, vectors, inverseNorms, ids, rows } = matrix
  let queryNorm = 0
  for (let d = 0; d < dimensions; d++) queryNorm += query[d]! * query[d]!
  const size = Math.min(k, rows)
  const best = new Float64Array(size).fill(Number.NEGATIVE_INFINITY)
  const bestRows = new Int32Array(size).fill(-1)
  if (queryNorm === 0 || size === 0) return []
  const inverseQuery = 1 / Math.sqrt(queryNorm)
  if (matrix.quantized && rows >= QUANTIZED_MIN_ROWS) return quantizedNearest(matrix, query, size, inverseQuery, distinct)
  let floor = Number.NEGATIVE_INFINITY
  const { keys } = matrix
  const keep = (row: number, similarity: number) => {
    if (distinct && isTwin(keys, best, bestRows, row, similarity)) {
      distinct.dropped++
      return
    }
    let slot = size - 1
    while (slot > 0 && best[slot - 1]! < similarity) {
      best[slot] = best[slot - 1]!
      bestRows[slot] = bestRows[slot - 1]!
      slot--
    }
    best[slot] = similarity
    bestRows[slot] = row
    floor = best[size - 1]!
  }
  if (matrix.kernel) {
    const dots = matrix.kernel.scores(query, rows)
    for (let row = 0; row < rows; row++) {
      const similarity = dots[row]! * inverseNorms[row]! * inverseQuery
      if (similarity > floor) keep(row, similarity)
    }
  } else {
    const unrolled = dimensions - (dimensions % 4)
    for (let row = 0; row < rows; row++) {
      const offset = row * dimensions
      let a0 = 0
      let a1 = 0
      let a2 = 0
      let a3 = 0
      for (let d = 0; d < unrolled; d += 4) {
        a0 += vectors[offset + d]! * query[d]!
        a1 += vectors[offset + d + 1]! * query[d + 1]!
        a2 += vectors[offset + d + 2]! * query[d + 2]!
        a3 += vectors[offset + d + 3]! * query[d + 3]!
      }
      for (let d = unrolled; d < dimensions; d++) a0 += vectors[offset + d]! * query[d]!
      const similarity = (a0 + a1 + a2 + a3) * inverseNorms[row]! * inverseQuery
      if (similarity > floor) keep(row, similarity)
    }
  }
  const hits: { chunkId: number; distance: number | null }[] = []
  for (let i = 0; i < size; i++) if (bestRows[i]! >= 0) hits.push({ chunkId: ids[bestRows[i]!]!, distance: inverseNorms[bestRows[i]!] ? 1 - best[i]! : null })
  return hits
}

/** Whether a kept slot already holds a twin of `row`: the same key and the same score. */
function isTwin(keys: Int32Array, best: Float64Array, bestRows: Int32Array, row: number, score: number): boolean {
  const key = keys[row]!
  for (let slot = 0; slot < bestRows.length; slot++) if (bestRows[slot]! >= 0 && best[slot] === score && keys[bestRows[slot]!] === key) return true
  return false
}

/** The first k of `found` (best first), each row that is a twin of a better one left out (and counted in `report.dropped`). */
function distinctRows(found: { row: number; similarity: number }[], keys: Int32Array, k: number, report: { dropped: number }): { row: number; similarity: number }[] {
  return firstDistinct(
    found,
    k,
    (hit) => keys[hit.row],
    (hit) => hit.similarity,
    report,
  )
}

let checkedRows = new Uint8Array(0)

/** Below this many rows the float scan is as fast as the int8 one plus its re-rank. */
export const QUANTIZED_MIN_ROWS = 4096

/**
 * Exact cosine similarity of a row and a query, in float64, summed over `columns`: the query's
 * non-zero ones, in order. The terms left out are ±0, which change no sum, so it is the sum over
 * every column, bit for bit.
 */
function exactSimilarity(matrix: Matrix, row: number, query: Float32Array, columns: Int32Array, inverseQuery: number): number {
  const { dimensions, vectors } = matrix
  let dot = 0
  for (let i = 0, offset = row * dimensions; i < columns.length; i++) dot += vectors[offset + columns[i]!]! * query[columns[i]!]!
  return dot * matrix.inverseNorms[row]! * inverseQuery
}

/**
 * The exact top-k through the int8 copy. The int8 scan reads a quarter of the bytes at most (only
 * the query's non-zero columns: the built-in embedder's questions have 4 to 90 of 384); its estimate
 * of each row's dot product is off by at most ‖v‖₁·s_q/2 + ‖q‖₁·s_v/2 + D·s_v·s_q/4 (s: the int8
 * scales; rounding moves each component by at most half a step). The best rows by estimate are
 * re-ranked with their float32 vectors; then every other row whose estimate plus that bound could
 * still reach the k-th exact similarity is computed exactly too. The result is the exact top-k,
 * ordered as the float scan orders it (similarity, then row).
 */
function quantizedNearest(matrix: Matrix, query: Float32Array, k: number, inverseQuery: number, distinct?: { dropped: number }): { chunkId: number; distance: number | null }[] {
  const { dimensions, rows, inverseNorms, ids, keys } = matrix
  let largest = 0
  let queryL1 = 0
  const nonZero: number[] = []
  for (let d = 0; d < dimensions; d++) {
    largest = Math.max(largest, Math.abs(query[d]!))
    queryL1 += Math.abs(query[d]!)
    if (query[d] !== 0) nonZero.push(d)
  }
  const columns = Int32Array.from(nonZero)
  const queryScale = largest / 127
  const quantizedQuery = new Int8Array(dimensions)
  for (let d = 0; d < dimensions; d++) quantizedQuery[d] = Math.round(query[d]! / queryScale)
  const dots = matrix.quantized!.scores(quantizedQuery, rows)

  const bestRows = rowsByEstimate(dots, matrix.estimateScales, rows, Math.min(rows, Math.max(k * 4, 64)), distinct ? keys : null)
  // A flag per row, in one scratch array for every scan (a scan runs to its end synchronously).
  if (checkedRows.length < rows) checkedRows = new Uint8Array(Math.max(rows, checkedRows.length * 2))
  const checked = checkedRows.subarray(0, rows).fill(0)
  const found: { row: number; similarity: number }[] = []
  for (let slot = 0; slot < bestRows.length; slot++) {
    const row = bestRows[slot]!
    if (row < 0) continue
    checked[row] = 1
    found.push({ row, similarity: exactSimilarity(matrix, row, query, columns, inverseQuery) })
  }
  const order = (a: { row: number; similarity: number }, b: { row: number; similarity: number }) => b.similarity - a.similarity || a.row - b.row
  found.sort(order)
  // Every row that could still beat the k-th: estimate + bound ≥ threshold (a hair of slack for float
  // rounding). With s the row's scale, n its norm, the test
  //   (dot·s·s_q + ‖v‖₁·s_q/2 + ‖q‖₁·s/2 + D·s·s_q/4) / (n·‖q‖) ≥ threshold
  // is, divided by s_q/‖q‖ (> 0), estimateScale·(dot + ‖q‖₁/(2·s_q)) + boundTerm ≥ threshold·‖q‖/s_q.
  const threshold = found.length >= k ? found[k - 1]!.similarity - 1e-6 : Number.NEGATIVE_INFINITY
  const queryTerm = queryL1 / (2 * queryScale)
  const reach = threshold / (inverseQuery * queryScale)
  const within = rowsWithinReach(dots, matrix.estimateScales, matrix.boundTerms, rows, queryTerm, reach)
  for (let i = 0; i < within.length; i++) {
    const row = within[i]!
    if (!checked[row]) found.push({ row, similarity: exactSimilarity(matrix, row, query, columns, inverseQuery) })
  }
  found.sort(order)
  const chosen = distinct ? distinctRows(found, keys, k, distinct) : found.slice(0, k)
  return chosen.map(({ row, similarity }) => ({ chunkId: ids[row]!, distance: inverseNorms[row] ? 1 - similarity : null }))
}

/**
 * The `pool` rows with the best estimates (dot × estimate scale), best first; with `keys`, a twin of
 * a row already kept (same key, same estimate: the same int8 row) is left out.
 */
function rowsByEstimate(dots: Int32Array, estimateScales: Float64Array, rows: number, pool: number, keys: Int32Array | null): Int32Array {
  const best = new Float64Array(pool).fill(Number.NEGATIVE_INFINITY)
  const bestRows = new Int32Array(pool).fill(-1)
  let floor = Number.NEGATIVE_INFINITY
  for (let row = 0; row < rows; row++) {
    const estimate = dots[row]! * estimateScales[row]!
    if (estimate <= floor) continue
    // Where it goes: after every slot at least as good (binary search: best is in descending order).
    let low = 0
    let high = pool - 1
    while (low < high) {
      const middle = (low + high) >> 1
      if (best[middle]! >= estimate) low = middle + 1
      else high = middle
    }
    // Slots with this very estimate sit just before: a twin among them is no other passage.
    if (keys && isTwinBefore(keys, best, bestRows, low, row, estimate)) continue
    best.copyWithin(low + 1, low, pool - 1)
    bestRows.copyWithin(low + 1, low, pool - 1)
    best[low] = estimate
    bestRows[low] = row
    floor = best[pool - 1]!
  }
  return bestRows
}

/** Whether one of the slots before `slot` that hold `estimate` holds a row with `row`'s key. */
function isTwinBefore(keys: Int32Array, best: Float64Array, bestRows: Int32Array, slot: number, row: number, estimate: number): boolean {
  const key = keys[row]!
  for (let before = slot - 1; before >= 0 && best[before] === estimate; before--) if (keys[bestRows[before]!] === key) return true
  return false
}

/** The rows whose estimate plus error bound could reach `reach` (see quantizedNearest). */
function rowsWithinReach(dots: Int32Array, estimateScales: Float64Array, boundTerms: Float64Array, rows: number, queryTerm: number, reach: number): number[] {
  const within: number[] = []
  for (let row = 0; row < rows; row++) if (estimateScales[row]! * (dots[row]! + queryTerm) + boundTerms[row]! >= reach) within.push(row)
  return within
}
