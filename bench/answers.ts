// Answers without a model: what the built-in engines give a newcomer, before issue 37 (the frozen
// engine in bench/answers/baseline-extractive.ts) beside now, in one run. Figures, never asserted.
//   sentence-hit@1  test/fixtures/answers-labelled.json: real Debian documents in one collection,
//                   each question asked through answerQuestion (retrieval + the built-in engine);
//                   a hit when the answer's first sentence (with the one it leans on) is the labelled one.
import set from '../test/fixtures/answers-labelled.json'
import { openDatabase } from '../src/db'
import type { Generator } from '../src/ml'
import { ExtractiveGenerator } from '../src/ml/builtin/extractive-generator'
import { HashEmbedder } from '../src/ml/builtin/hash-embedder'
import { answerQuestion } from '../src/modules/rag/answer'
import { RagService } from '../src/modules/rag/service'
import { BaselineExtractiveGenerator } from './answers/baseline-extractive'
import { answersWith, firstAnswerSentence } from '../test/answers-metric'

const USER = 'bench'
const squash = (text: string) => text.replace(/\s+/g, ' ').trim()

/** A knowledge base whose answer engine can be switched between runs: the same retrieval for both. */
export function knowledgeBase() {
  const db = openDatabase(':memory:')
  db.run("INSERT INTO users (id, email, password_hash, roles, created_at) VALUES (?, ?, 'x', '[\"user\"]', '')", [USER, `${USER}@example.com`])
  const embedder = new HashEmbedder()
  const engine: { current: Generator } = { current: new ExtractiveGenerator() }
  const rag = new RagService({ db, embedder: async () => embedder, generator: async () => engine.current })
  return { rag, engine, user: USER }
}

async function sentenceHits(kb: ReturnType<typeof knowledgeBase>, engine: Generator) {
  kb.engine.current = engine
  let hits = 0
  let sourced = 0
  const misses: string[] = []
  for (const q of set.questions) {
    const { answer, sources } = await answerQuestion(kb.rag, kb.user, { question: q.question, collection: 'debian', maxContext: 5, includeContext: false })
    if (sources.some((s) => s.id === q.document)) sourced++
    if (answersWith(answer, q.answer)) hits++
    else misses.push(`${q.question} → ${firstAnswerSentence(answer).slice(0, 110)}`)
  }
  return { hits: hits / set.questions.length, sourced: sourced / set.questions.length, misses }
}

export async function benchAnswers() {
  console.log('\n== Answers without a model (built-in engines), before issue 37 → now')
  const kb = knowledgeBase()
  await kb.rag.ingest(kb.user, 'debian', set.documents)
  const before = await sentenceHits(kb, new BaselineExtractiveGenerator())
  const after = await sentenceHits(kb, new ExtractiveGenerator())
  console.log(
    `sentence-hit@1        ${before.hits.toFixed(3)} → ${after.hits.toFixed(3)}   (${set.questions.length} questions over ${set.documents.length} real documents; ` +
      `answering document among the sources ${after.sourced.toFixed(3)})`,
  )
  if (process.env.BENCH_VERBOSE) for (const miss of after.misses) console.log(`  miss: ${miss}`)
}

if (import.meta.main) await benchAnswers()
