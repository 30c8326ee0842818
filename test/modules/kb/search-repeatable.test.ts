// A search's scores do not depend on the searches before it. The SQLite store keeps where a query's
// tokens occur in each chunk text (by the text), for later queries: twin texts (one licence in many
// packages) read in one call were counted once per twin, and a text read for one query's tokens had
// the tokens it already knew counted again when a later query read it for new ones, so a score
// drifted with what had been asked before (0.365 → 0.383), enough to flip a borderline answer.
import { expect, test } from 'bun:test'
import handbook from '../../fixtures/tool-handbook.json'
import { licenceFiles } from '../../licence-files'
import { inMemoryRag } from '../../rag-service'

const QUESTIONS = [
  'What compression does logtrim use out of the box?',
  "What compression is used if I don't configure any?",
  'Can I redistribute the software and sublicense it?',
  'How do I change when the timer fires?',
  'permission notice copyright software',
]

test('every question scores the same asked first, after the others, or again', async () => {
  const documents = [...handbook.documents, ...licenceFiles().slice(0, 200)]
  const scores = async (rag: ReturnType<typeof inMemoryRag>['rag'], question: string) =>
    (await rag.search('u', 'drive', question, 10, undefined, { passages: true })).results.map((r) => `${r.id}#${r.metadata.chunk} ${r.score.toFixed(6)}`)
  const first: string[][] = []
  for (const question of QUESTIONS) {
    const { rag } = inMemoryRag()
    await rag.ingest('u', 'drive', documents)
    first.push(await scores(rag, question))
  }
  const { rag } = inMemoryRag()
  await rag.ingest('u', 'drive', documents)
  for (const round of [0, 1]) {
    for (const [i, question] of (round ? [...QUESTIONS].reverse() : QUESTIONS).entries()) {
      const index = round ? QUESTIONS.length - 1 - i : i
      expect({ question, round, results: await scores(rag, question) }).toEqual({ question, round, results: first[index]! })
    }
  }
}, 120_000)
