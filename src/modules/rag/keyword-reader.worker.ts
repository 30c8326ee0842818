// The keyword thread of SqliteRagStore: runs a large collection's keyword queries on a read-only
// connection of its own to the same database file, and answers with the matches' rowids and BM25
// in two flat arrays, handed over without a copy; or counts the chunks of the index's common terms
// (see SqliteRagStore.warmFrequencies).
import { Database } from 'bun:sqlite'

declare const self: Worker

type Call = { id: number; file: string; table: string } & ({ kind: 'matches'; query: string; limit: number } | { kind: 'frequent'; min: number })

let db: Database | null = null
let open = ''

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
    const rows = db.query<unknown, [string, number]>(`SELECT rowid, bm25(${table}) FROM ${table} WHERE ${table} MATCH ? LIMIT ?`).values(call.query, call.limit) as [number, number][]
    const ids = new Float64Array(rows.length)
    const ranks = new Float64Array(rows.length)
    rows.forEach(([rowid, rank], i) => {
      ids[i] = rowid
      ranks[i] = rank
    })
    self.postMessage({ id, ids, ranks }, [ids.buffer, ranks.buffer])
  } catch (error) {
    self.postMessage({ id, failure: (error as Error)?.message ?? String(error) })
  }
})
