// usearch (npm `usearch`, its prebuilt linux-x64 binary inside the package; nothing is compiled or
// downloaded at install) loaded where it can be: without it, every collection is searched exactly.

/** The part of usearch's Index the vector index uses. */
export interface UsearchIndex {
  add(keys: BigUint64Array, vectors: Float32Array, threads?: number): void
  search(vector: Float32Array, k: number, threads?: number): { keys: BigUint64Array; distances: Float32Array }
  contains(key: bigint): boolean
  remove(key: bigint): number
  size(): number
  capacity(): number
  save(path: string): void
  load(path: string): void
  view(path: string): void
}

export interface UsearchLibrary {
  Index: new (options: { dimensions: number; metric: string; quantization: string; connectivity: number; expansion_add: number; expansion_search: number }) => UsearchIndex
}

/**
 * How the indexes are built (measured in docs/knowledge-base.md, "At library scale"): cosine over
 * int8 vectors (a quarter of float32's bytes; the candidates are rescored exactly anyway), 16 links
 * per node, 128 candidates kept while building.
 */
export const INDEX_SETTINGS = { metric: 'cos', quantization: 'i8', connectivity: 16, expansion_add: 128, expansion_search: 128 } as const

/**
 * How they are opened for search: usearch walks the graph keeping max(expansion_search, k)
 * candidates, so a view made with a small expansion_search is searched as deeply as each query's k
 * asks (see SEARCH_EXPANSION): one mapped file, any depth per query, and the first k of a deeper
 * search are the same keys, in the same order, as a search of that depth asking for fewer.
 */
export const SEARCH_SETTINGS = { ...INDEX_SETTINGS, expansion_search: 16 } as const

/**
 * Candidates kept while walking the graph (UAGENT_ANN_EXPANSION's default), asked for as k. The
 * built-in embedder's vectors are sparse (hashed words), which HNSW walks poorly: at 20,000 chunks
 * of the scale corpus, 128 found 0.82 of the exact ten, 512 0.965, 2,048 0.998 (ties counted, the
 * best 100 rescored); measured in docs/knowledge-base.md, "At library scale".
 */
export const SEARCH_EXPANSION = 1024

let loaded: { library: UsearchLibrary | null; problem: string | null } | undefined

/** usearch, or null when it cannot be loaded here (its problem then in `indexLibraryProblem`). */
export function loadIndexLibrary(): UsearchLibrary | null {
  if (!loaded) {
    try {
      const module = require('usearch') as UsearchLibrary & { default?: UsearchLibrary }
      const library = module.Index ? module : module.default!
      // A tiny index, searched: the native part answers, not only its JavaScript.
      const probe = new library.Index({ dimensions: 2, ...INDEX_SETTINGS })
      probe.add(new BigUint64Array([1n]), new Float32Array([1, 0]))
      if (probe.search(new Float32Array([1, 0]), 1).keys[0] !== 1n) throw new Error('a probe search found nothing')
      loaded = { library, problem: null }
    } catch (error) {
      loaded = { library: null, problem: (error as Error)?.message ?? String(error) }
    }
  }
  return loaded.library
}

/** Why usearch could not be loaded (null when it was, or was not tried). */
export function indexLibraryProblem(): string | null {
  return loaded?.problem ?? null
}
