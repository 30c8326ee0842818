// Ranking quality on the checking half of the labelled set (test/fixtures/ranking-labelled.json):
// recall@10, MRR@10 and top-1 per corpus, today's chunker and scoring (with the settings fitted for
// the active embedder) beside the chunker and scoring of before (bench/ranking/before), in one run.
import { activeEmbedder, corpora, evaluateBefore, GROUPS, ingestBefore, ingestNow, type Metrics, metrics, prepare, set, top10 } from './ranking/harness'
import { isFitted, rankingParams } from '../src/modules/rag/ranking/params'
import { rankingOnPostgres } from './ranking/postgres'

export async function benchRanking() {
  const embedder = await activeEmbedder()
  console.log(`\n== RAG ranking on the checking half of the labelled set (${embedder.id}${isFitted(embedder.id) ? ', fitted settings' : ', default settings: not fitted for it'})`)
  const docs = corpora()
  if (!docs) return
  const check = set.queries.filter((q) => q.half === 'check')
  const now = await ingestNow(embedder, docs)
  const params = rankingParams(embedder.id)
  const after = (await prepare(embedder, now, check)).map((p) => ({ query: p.query, docs: top10(p, params).map((r) => r.doc) }))
  const before = await evaluateBefore(embedder, await ingestBefore(embedder, docs), check)
  const row = (name: string, m: Metrics, b: Metrics) =>
    console.log(
      `${name.padEnd(24)} ${String(m.queries).padStart(5)}   recall@10 ${b.recall.toFixed(3)} → ${m.recall.toFixed(3)}   MRR@10 ${b.mrr.toFixed(3)} → ${m.mrr.toFixed(3)}   top-1 ${b.top1.toFixed(3)} → ${m.top1.toFixed(3)}`,
    )
  console.log(`${'queries (before → after)'.padEnd(24)}`)
  for (const group of GROUPS) {
    const pick = (rows: { query: (typeof check)[number]; docs: string[] }[]) => metrics(rows.filter((r) => group.of(r.query)).map((r) => ({ expected: r.query.expected, docs: r.docs })))
    row(group.name, pick(after), pick(before))
  }
  for (const form of [...new Set(check.filter((q) => q.form).map((q) => q.form!))]) {
    const pick = (rows: { query: (typeof check)[number]; docs: string[] }[]) =>
      metrics(rows.filter((r) => r.query.form === form && r.query.kind === 'identifier').map((r) => ({ expected: r.query.expected, docs: r.docs })))
    row(`  ${form}`, pick(after), pick(before))
  }
  const all = metrics(after.map((r) => ({ expected: r.query.expected, docs: r.docs })))
  const allBefore = metrics(before.map((r) => ({ expected: r.query.expected, docs: r.docs })))
  console.log(`goals: recall@10 >= 0.92 ${all.recall >= 0.92 ? 'ok' : 'MISSED'}; MRR@10 higher than before ${all.mrr > allBefore.mrr ? 'ok' : 'MISSED'}`)
  await rankingOnPostgres(embedder, docs, check, after)
}

if (import.meta.main) await benchRanking()
