// The keyword thread of SqliteRagStore: runs a large collection's keyword queries on a read-only
// connection of its own to the same database file, and answers with the matches' rowids and BM25
// in two flat arrays, handed over without a copy; or counts the chunks of the index's common terms
// (see SqliteRagStore.warmFrequencies).
import { Database } from 'bun:sqlite'

declare const self: Worker

type Call = { id: number; file: string; table: string } & ({ kind: 'matches'; query: string; limit: number } | { kind: 'frequent'; min: number })

let db: Database | null = null
let open = ''
let scratchIds = new Float64Array(0)
let scratchRanks = new Float64Array(0)

self.addEventListener('message', (event: MessageEvent<Call>) => {
  const call = event.data
  const { id, file, table } = call
  try {
    if (!/^rag_fts_\d+$/.test(table)) throw new Error(`not a keyword index: ${table}`)
    if (!db || open !== file) {
      db?.close()
      db = new Database(file, { readonly: true })
      db.run('PRAGMA busy_timeout = 5000')
      open = file
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
