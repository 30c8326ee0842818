import set from './test/fixtures/kb-labelled.json'
import { makeServer } from './test/helpers'
import { keyTerms } from './src/ml/text'
const server = makeServer()
const { accessToken: token } = await server.login()
await server.call('POST', '/rag/ingest', { token, body: { collection: 'h', documents: set.documents } })
const show = async (q: string, exp?: string) => {
  const r = await server.call('POST', '/rag/search', { token, body: { collection: 'h', query: q, limit: 3 } })
  const asked = new Set(keyTerms(q))
  console.log((exp ? (r.json.results[0].id === exp ? 'ON ok ' : 'ON BAD') : 'OFF   '), q.padEnd(55), r.json.results.map((x: any) => `${x.id}:${x.score}:${[...new Set(keyTerms(x.content))].filter(t => asked.has(t)).length}/${asked.size}`).join('  '))
}
for (const q of set.onTopic) await show(q.question, q.expected)
for (const q of set.offTopic) await show(q)
