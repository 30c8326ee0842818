// Chooses the refusal rule's coverage floor (COVERAGE_FLOOR in src/modules/rag/answer.ts) on the
// calibration family of bench/answers/refusal.ts: the Git manual as a handbook beside hundreds of
// manual pages, its questions and the `calibrate` half of test/fixtures/world-questions.json. For
// each question, the coverage of the passages /rag/answer would answer from; for each floor, the
// share of handbook questions answered and of world questions refused. `bun scripts/fit-refusal.ts`
import { join } from 'node:path'
import { openDatabase } from '../src/db'
import { HashEmbedder } from '../src/ml/builtin/hash-embedder'
import { ExtractiveGenerator } from '../src/ml/builtin/extractive-generator'
import { questionCoverage, relevantPassages } from '../src/modules/rag/answer/answer'
import { RagService } from '../src/modules/rag/service'
import { type Family, gitFamily, licenceFamily } from '../bench/answers/refusal'

export async function coverages(family: Family) {
  const db = openDatabase(':memory:')
  db.run("INSERT INTO users (id, email, password_hash, roles, created_at) VALUES ('u', 'u@example.com', 'x', '[\"user\"]', '')")
  const embedder = new HashEmbedder()
  const rag = new RagService({ db, embedder: async () => embedder, generator: async () => new ExtractiveGenerator() })
  await rag.ingest('u', 'kb', [...family.handbook, ...family.noise])
  const floor = rag.relevanceFloor('u', 'kb')
  const of = async (question: string) => {
    const { results } = await rag.search('u', 'kb', question, 5, floor)
    const relevant = relevantPassages(question, results)
    return relevant.length ? questionCoverage(rag.questionTerms('u', 'kb', question), relevant) : -1
  }
  const answerable: number[] = []
  for (const q of family.answerable) answerable.push(await of(q.question))
  const world: number[] = []
  for (const q of family.world) world.push(await of(q))
  return { answerable, world }
}

if (import.meta.main) {
  const family = process.argv.includes('--check') ? licenceFamily() : gitFamily(process.env.BENCH_CACHE ?? join(import.meta.dir, '../.bench'))
  if (!family) process.exit(1)
  console.log(family.name)
  const { answerable, world } = await coverages(family)
  console.log('floor   answered  refused')
  for (let floor = 0.3; floor <= 0.9001; floor += 0.025) {
    const answered = answerable.filter((c) => c >= floor).length / answerable.length
    const refused = world.filter((c) => c < floor).length / world.length
    console.log(`${floor.toFixed(3)}   ${answered.toFixed(3)}     ${refused.toFixed(3)}`)
  }
  if (process.argv.includes('--verbose')) {
    console.log('world:', world.map((c, i) => `${family.world[i]} ${c.toFixed(2)}`).join('\n'))
    console.log('answerable:', answerable.map((c, i) => `${family.answerable[i]!.question} ${c.toFixed(2)}`).join('\n'))
  }
}
