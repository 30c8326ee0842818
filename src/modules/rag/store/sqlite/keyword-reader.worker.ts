// The keyword thread of SqliteRagStore: runs a large collection's keyword queries on a read-only
// connection of its own to the same database file, and answers with the matches' rowids and BM25
// in two flat arrays, handed over without a copy; or counts the chunks of the index's common terms
// (see SqliteRagStore.warmFrequencies); or reads common terms' postings into shared memory, or
// answers a top-k query over them (see keyword-topk.ts).
import { Database } from 'bun:sqlite'
import { buildPostings, ChunkLengthsCache, searchTopK, type TopKTerm } from './postings'

declare const self: Worker

type Call = { id: number; file: string; table: string } & (
  | { kind: 'matches'; query: string; limit: number }
  | { kind: 'frequent'; min: number }
  | { kind: 'postings'; terms: string[]; deletions: number }
  | { kind: 'topk'; terms: TopKTerm[]; k: number; averageLength: number; deleted: Uint32Array }
)

let db: Database | null = null
let open = ''
let scratchIds = new Float64Array(0)
let scratchRanks = new Float64Array(0)
const lengths = new ChunkLengthsCache()

self.addEventListener('message', (event: MessageEvent<Call>) => {
  const call = event.data
  const { id, file, table } = call
  try {
    if (!/^rag_fts_\d+$/.test(table)) throw new Error(`not a keyword index: ${table}`)
    if (!db || open !== file) {
      db?.close()
      db = new Database(file, { readonly: true })
      lengths.clear()
      db.run('PRAGMA busy_timeout = 5000')
      open = file
    }
    if (call.kind === 'postings') {
      // Shared memory: the server's thread keeps the arrays and hands them to the reader thread, no copy either way.
      const { postings, upto } = buildPostings(db, table, call.terms, call.deletions, lengths, true)
      self.postMessage({ id, postings, upto })
      return
    }
    if (call.kind === 'topk') {
      const found = searchTopK(db, table, call.terms, call.k, call.averageLength, call.deleted.length ? new Set(call.deleted) : null)
      if (!found) self.postMessage({ id, failure: 'postings cannot be read' })
      else self.postMessage({ id, ids: found.ids, scores: found.scores }, [found.ids.buffer, found.scores.buffer])
      return
    }
    if (call.kind === 'frequent') {
      db.run(`CREATE VIRTUAL TABLE IF NOT EXISTS temp.${table}_terms USING fts5vocab(main, ${table}, row)`)
      const rows = db.query<unknown, [number]>(`SELECT term, doc FROM temp.${table}_terms WHERE doc >= ?`).values(call.min) as [string, number][]
      self.postMessage({ id, terms: rows.map((row) => row[0]), counts: rows.map((row) => row[1]) })
      return
    }
    // Row by row into this thread's scratch arrays (kept from call to call), then one copy of what
    // was found, handed over: no array per row, a few thousand of them per query, for the
    // collector to find (it runs late, and the process's memory grew meanwhile).
    if (scratchIds.length < call.limit) {
      scratchIds = new Float64Array(call.limit)
      scratchRanks = new Float64Array(call.limit)
    }
    let count = 0
    for (const row of db.query<{ id: number; rank: number }, [string, number]>(`SELECT rowid AS id, bm25(${table}) AS rank FROM ${table} WHERE ${table} MATCH ? LIMIT ?`).iterate(call.query, call.limit)) {
      scratchIds[count] = row.id
      scratchRanks[count++] = row.rank
    }
    const ids = scratchIds.slice(0, count)
    const ranks = scratchRanks.slice(0, count)
    self.postMessage({ id, ids, ranks }, [ids.buffer, ranks.buffer])
  } catch (error) {
    self.postMessage({ id, failure: (error as Error)?.message ?? String(error) })
  }
})
