// Measures ways to cut the built-in embedder's collision noise (issue: "more dimensions, several
// hashes per feature, or idf-weighted features — measure which"): for each variant, how similar
// four-word documents of common words look to identifier queries by chance (the noise), ranking on
// the checking half of the labelled set with the product's fitted settings, and embedding speed.
// Run: bun scripts/measure-embedders.ts        (BENCH_CACHE=<folder> to reuse downloaded packages)
import { corpora, ingestNow, metrics, prepare, set, top10 } from '../bench/ranking/harness'
import { HashEmbedder } from '../src/ml/builtin/hash-embedder'
import { rankingParams } from '../src/modules/rag/ranking/params'
import { cosineDistance, similarity } from '../src/modules/rag/ranking/scoring'
import { COMMON, identifierCorpus, random } from '../test/fixtures/identifier-corpus'

const VARIANTS = [
  { dimensions: 384, hashes: 1 },
  { dimensions: 384, hashes: 2 },
  { dimensions: 384, hashes: 4 },
  { dimensions: 768, hashes: 1 },
  { dimensions: 768, hashes: 2 },
]
const params = rankingParams('builtin/hash-embed-384')
const docs = corpora()
if (!docs) process.exit(1)
const check = set.queries.filter((q) => q.half === 'check')
const next = random(99)
const tiny = Array.from({ length: 3000 }, () => Array.from({ length: 4 }, () => COMMON[Math.floor(next() * COMMON.length)]).join(' '))
const notes = identifierCorpus(200, 600, 5)
const sample = [...docs.values()].flat().slice(0, 2000).map((d) => d.content.slice(0, 1000))

console.log('variant              noise: best 4-word doc   own note   4-word doc first    check half: recall@10  MRR@10    embed chunks/s')
for (const variant of VARIANTS) {
  const embedder = new HashEmbedder(variant)
  // Noise: each identifier query's highest similarity to any four-word document, against its own note's.
  const tinyVectors = await embedder.embed(tiny)
  const noteVectors = await embedder.embed(notes.map((n) => n.content))
  let noise = 0
  let own = 0
  let beaten = 0
  for (const [i, note] of notes.entries()) {
    const [query] = await embedder.embed([note.identifier])
    const best = Math.max(...tinyVectors.map((v) => similarity(cosineDistance(query!, v))))
    const mine = similarity(cosineDistance(query!, noteVectors[i]!))
    noise += best
    own += mine
    if (best > mine) beaten++
  }
  const started = performance.now()
  await embedder.embed(sample)
  const perSecond = sample.length / ((performance.now() - started) / 1000)
  const now = await ingestNow(embedder, docs)
  const ranked = (await prepare(embedder, now, check)).map((p) => ({ expected: p.query.expected, docs: top10(p, params).map((r) => r.doc) }))
  const m = metrics(ranked)
  console.log(
    `${embedder.id.padEnd(24)} ${(noise / notes.length).toFixed(3).padStart(12)} ${(own / notes.length).toFixed(3).padStart(10)} ${String(beaten).padStart(10)}/${notes.length}  ${m.recall.toFixed(3).padStart(20)} ${m.mrr.toFixed(3).padStart(7)} ${perSecond.toFixed(0).padStart(14)}`,
  )
}
