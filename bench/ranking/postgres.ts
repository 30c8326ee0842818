// The labelled set's checking half ranked from a PostgreSQL store (tsvector keyword index, BM25 as
// FTS5 computes it, vectors in memory) beside the SQLite store's figures. Goal: recall@10 within
// 0.02 of SQLite's.
import { openDatabase } from '../../src/db'
import type { Embedder } from '../../src/ml'
import { ExtractiveGenerator } from '../../src/ml/builtin/extractive-generator'
import { rankingParams } from '../../src/modules/rag/ranking/params'
import { RagService } from '../../src/modules/rag/service'
import type { RagStore } from '../../src/modules/rag/store'
import { PostgresRagStore } from '../../src/modules/rag/store/postgres'
import { BENCH_DATABASE_SKIPPED, scratchPostgres } from '../postgres-database'
import { GROUPS, ingestNow, type LabelledQuery, metrics, prepare, top10 } from './harness'

export async function rankingOnPostgres(embedder: Embedder, docs: Map<string, { id: string; content: string }[]>, check: LabelledQuery[], sqlite: { query: LabelledQuery; docs: string[] }[]) {
  console.log('-- the same on PostgreSQL (recall@10 SQLite → PostgreSQL)')
  const database = await scratchPostgres()
  if (!database) {
    console.log(BENCH_DATABASE_SKIPPED)
    return
  }
  try {
    const db = openDatabase(':memory:')
    const rag = new RagService<RagStore>({ db, store: new PostgresRagStore(database.sql), embedder: async () => embedder, generator: async () => new ExtractiveGenerator() })
    const started = performance.now()
    const now = await ingestNow(embedder, docs, rag)
    const ingestSeconds = (performance.now() - started) / 1000
    const params = rankingParams(embedder.id)
    const postgres = (await prepare(embedder, now, check)).map((p) => ({ query: p.query, docs: top10(p, params).map((r) => r.doc) }))
    for (const group of GROUPS) {
      const pick = (rows: { query: LabelledQuery; docs: string[] }[]) => metrics(rows.filter((r) => group.of(r.query)).map((r) => ({ expected: r.query.expected, docs: r.docs })))
      const [a, b] = [pick(sqlite), pick(postgres)]
      console.log(`${group.name.padEnd(24)} ${String(b.queries).padStart(5)}   recall@10 ${a.recall.toFixed(3)} → ${b.recall.toFixed(3)}   MRR@10 ${a.mrr.toFixed(3)} → ${b.mrr.toFixed(3)}   top-1 ${a.top1.toFixed(3)} → ${b.top1.toFixed(3)}`)
    }
    const all = (rows: { query: LabelledQuery; docs: string[] }[]) => metrics(rows.map((r) => ({ expected: r.query.expected, docs: r.docs }))).recall
    const gap = Math.abs(all(sqlite) - all(postgres))
    console.log(`PostgreSQL corpora ingested in ${ingestSeconds.toFixed(1)} s; goal: recall@10 within 0.02 of SQLite's (|Δ| ${gap.toFixed(3)}) ${gap <= 0.02 ? 'ok' : 'MISSED'}`)
    db.close()
  } finally {
    await database.drop()
  }
}
