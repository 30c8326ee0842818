import { createDotKernel, type DotKernel } from './simd-dot'

/**
 * An exact in-memory copy of large collections' vectors. sqlite-vec's scan runs ~0.5 µs per
 * 384-dimension vector here (about 55 ms at 100,000 chunks); a contiguous matrix scored by a
 * WebAssembly SIMD kernel (./simd-dot.ts) is about three times faster, and just as exact
 * (a plain-TypeScript loop with four accumulators, when dimensions are not a multiple of 16,
 * about 1.7 times). Collections below
 * `minRows` chunks are left to sqlite-vec; the copies are built lazily from the vec0 table,
 * dropped when their collection changes, and evicted least-recently-used past `budgetBytes`.
 */
export interface VectorCacheOptions {
  minRows: number
  budgetBytes: number
}

export const DEFAULT_VECTOR_CACHE: VectorCacheOptions = { minRows: 10_000, budgetBytes: 512 * 1024 * 1024 }

interface Matrix {
  dimensions: number
  ids: Float64Array
  vectors: Float32Array
  /** 1 / norm of each row (0 for a zero vector). */
  inverseNorms: Float32Array
  /** chunk id → row, built on first use. */
  rowOf?: Map<number, number>
  bytes: number
  /** The SIMD kernel that owns `vectors`, when there is one. */
  kernel: DotKernel | null
}

/** A row of a cached matrix as its own vector, or undefined when the chunk is not in it. */
export function cachedVector(matrix: Matrix, chunkId: number): Float32Array | undefined {
  matrix.rowOf ??= new Map(Array.from(matrix.ids, (id, row) => [id, row]))
  const row = matrix.rowOf.get(chunkId)
  return row === undefined ? undefined : matrix.vectors.subarray(row * matrix.dimensions, (row + 1) * matrix.dimensions)
}

export class VectorCache {
  private readonly matrices = new Map<number, Matrix>()
  private bytes = 0

  constructor(readonly options: VectorCacheOptions = DEFAULT_VECTOR_CACHE) {}

  /** The cached matrix of a collection, if there is one (no loading). */
  peek(collectionId: number): Matrix | undefined {
    return this.matrices.get(collectionId)
  }

  invalidate(collectionId: number): void {
    const matrix = this.matrices.get(collectionId)
    if (!matrix) return
    this.bytes -= matrix.bytes
    this.matrices.delete(collectionId)
  }

  /**
   * The collection's matrix: cached, or built with `load` when the collection is large enough
   * and fits the budget; null means "use sqlite-vec".
   */
  matrix(collectionId: number, countRows: () => number, dimensions: number, load: () => { id: number; bytes: Uint8Array }[]): Matrix | null {
    const cached = this.matrices.get(collectionId)
    if (cached) {
      // Re-insert: Map order is the LRU order.
      this.matrices.delete(collectionId)
      this.matrices.set(collectionId, cached)
      return cached
    }
    const rows = countRows()
    const bytes = rows * (dimensions * 4 + 12)
    if (rows < this.options.minRows || bytes > this.options.budgetBytes) return null
    for (const [id, matrix] of this.matrices) {
      if (this.bytes + bytes <= this.options.budgetBytes) break
      this.bytes -= matrix.bytes
      this.matrices.delete(id)
    }
    const loaded = load()
    const kernel = createDotKernel(loaded.length, dimensions)
    const matrix: Matrix = {
      dimensions,
      ids: new Float64Array(loaded.length),
      vectors: kernel?.vectors ?? new Float32Array(loaded.length * dimensions),
      inverseNorms: new Float32Array(loaded.length),
      bytes,
      kernel,
    }
    // Blobs from SQLite need not be 4-byte aligned: copy their bytes into the aligned matrix.
    const raw = new Uint8Array(matrix.vectors.buffer)
    loaded.forEach((row, i) => {
      matrix.ids[i] = row.id
      raw.set(row.bytes, i * dimensions * 4)
      let norm = 0
      for (let d = i * dimensions; d < (i + 1) * dimensions; d++) norm += matrix.vectors[d]! * matrix.vectors[d]!
      matrix.inverseNorms[i] = norm > 0 ? 1 / Math.sqrt(norm) : 0
    })
    this.matrices.set(collectionId, matrix)
    this.bytes += bytes
    return matrix
  }
}

/** Exact top-k by cosine distance over a matrix: `[{ chunkId, distance }]`, nearest first. */
export function scanNearest(matrix: Matrix, query: Float32Array, k: number): { chunkId: number; distance: number | null }[] {
  const { dimensions, vectors, inverseNorms, ids } = matrix
  let queryNorm = 0
  for (let d = 0; d < dimensions; d++) queryNorm += query[d]! * query[d]!
  const rows = ids.length
  const size = Math.min(k, rows)
  const best = new Float64Array(size).fill(Number.NEGATIVE_INFINITY)
  const bestRows = new Int32Array(size).fill(-1)
  if (queryNorm === 0 || size === 0) return []
  const inverseQuery = 1 / Math.sqrt(queryNorm)
  let floor = Number.NEGATIVE_INFINITY
  const keep = (row: number, similarity: number) => {
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
    const dots = matrix.kernel.scores(query)
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
