// Prints the scores behind RELEVANCE_FLOOR (src/modules/rag/answer.ts): the labelled set of
// test/fixtures/kb-labelled.json is ingested with the built-in embedder, and each question's best
// passage is shown with its score and whether it shares a content word with the question.
// Run: bun scripts/calibrate-relevance.ts
import set from '../test/fixtures/kb-labelled.json'
import { keyTerms } from '../src/ml/text'
import { RELEVANCE_FLOOR } from '../src/modules/rag/answer'
import { makeServer } from '../test/helpers'

const server = makeServer()
const { accessToken: token } = await server.login()
await server.call('POST', '/rag/ingest', { token, body: { collection: 'labelled', documents: set.documents } })

async function best(question: string) {
  const res = await server.call('POST', '/rag/search', { token, body: { collection: 'labelled', query: question, limit: 1 } })
  const top = res.json.results[0] as { id: string; score: number; content: string }
  const asked = new Set(keyTerms(question))
  return { id: top.id, score: top.score, shares: keyTerms(top.content).some((t) => asked.has(t)) }
}

const on = await Promise.all(set.onTopic.map(async (q) => ({ question: q.question, expected: q.expected, ...(await best(q.question)) })))
const off = await Promise.all(set.offTopic.map(async (question) => ({ question, ...(await best(question)) })))
for (const row of on) console.log(`on   ${row.score.toFixed(4)}  ${row.shares ? 'shares' : '      '}  ${row.id === row.expected ? 'right' : 'WRONG'}  ${row.question}`)
for (const row of off) console.log(`off  ${row.score.toFixed(4)}  ${row.shares ? 'shares' : '      '}         ${row.question}`)
const weakestOn = Math.min(...on.map((r) => r.score))
const strongestOff = Math.max(...off.map((r) => r.score))
console.log(`\nweakest on-topic ${weakestOn.toFixed(4)}, strongest off-topic ${strongestOff.toFixed(4)}, midpoint ${((weakestOn + strongestOff) / 2).toFixed(4)}; RELEVANCE_FLOOR = ${RELEVANCE_FLOOR}`)
