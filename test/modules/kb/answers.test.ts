import { describe, expect, test } from 'bun:test'
import set from '../../fixtures/kb-labelled.json'
import { ExtractiveGenerator } from '../../../src/ml/builtin/extractive-generator'
import { sentences } from '../../../src/ml/text'
import { makeServer } from '../../helpers'

async function harbor() {
  const server = makeServer()
  const { accessToken: token } = await server.login()
  const ingest = await server.call('POST', '/rag/ingest', { token, body: { collection: 'harbor', documents: set.documents } })
  expect(ingest.json.ingested).toBe(set.documents.length)
  const answer = (question: string, body: Record<string, unknown> = {}) => server.call('POST', '/rag/answer', { token, body: { collection: 'harbor', question, ...body } })
  return { ...server, token, answer }
}

/** The answer's sentences without their citations. */
const answerSentences = (answer: string) => sentences(answer.replace(/\s*\[\d+\]/g, ''))

describe('honest answers (labelled set in test/fixtures/kb-labelled.json)', () => {
  test('ten off-topic questions get the no-answer response with no sources', async () => {
    const server = await harbor()
    expect(set.offTopic).toHaveLength(10)
    for (const question of set.offTopic) {
      const res = await server.answer(question)
      expect(res.status).toBe(200)
      expect({ question, answer: res.json.answer, sources: res.json.sources }).toEqual({
        question,
        answer: expect.stringContaining('could not find anything relevant'),
        sources: [],
      })
      expect(res.json.context).toEqual([])
    }
  }, 60_000)

  test('ten on-topic questions are answered from the right document, citing it', async () => {
    const server = await harbor()
    expect(set.onTopic).toHaveLength(10)
    for (const { question, expected } of set.onTopic) {
      const res = await server.answer(question)
      expect({ question, first: res.json.sources[0]?.id }).toEqual({ question, first: expected })
      expect(res.json.answer).not.toContain('could not find')
      expect(res.json.answer).not.toContain('do not contain an answer')
      const cited = [...res.json.answer.matchAll(/\[(\d+)\]/g)].map((m: RegExpMatchArray) => Number(m[1]))
      expect(cited).toContain(1)
    }
  }, 60_000)

  test('answers pick the answering sentence', async () => {
    const server = await harbor()
    expect((await server.answer('How long are deleted files kept in the trash?')).json.answer).toContain('kept for 30 days')
    expect((await server.answer('What port does Harbor listen on by default?')).json.answer).toContain('port 8443 by default')
    expect((await server.answer('What is the default storage quota per user?')).json.answer).toContain('storage quota of 10 GB')
  }, 60_000)
})

describe('extractive answers', () => {
  const generator = new ExtractiveGenerator()
  const ask = async (passages: string[], question: string) =>
    (await generator.generate([{ role: 'user', content: `Sources:\n${passages.map((p, i) => `[${i + 1}] ${p}`).join('\n')}\n\nQuestion: ${question}` }])).text

  test('a sentence shared by two overlapping passages is said once, citing the first passage', async () => {
    const shared = 'The backup job runs every night at 02:00 and keeps fourteen snapshots.'
    const text = await ask([`Backups protect your data. ${shared}`, `${shared} Snapshots older than that are pruned.`], 'When does the backup job run?')
    expect(text.split(shared)).toHaveLength(2)
    expect(text).toContain(`${shared} [1]`)
    const said = answerSentences(text)
    expect(new Set(said).size).toBe(said.length)
  }, 60_000)

  test('over a real collection with overlapping chunks, no answer ever repeats a sentence', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    const facts = Array.from({ length: 60 }, (_, i) => `Server ${i} in rack ${i % 7} runs the ${['mail', 'web', 'backup', 'build'][i % 4]} service on port ${8000 + i}.`)
    await server.call('POST', '/rag/ingest', { token, body: { collection: 'racks', documents: [{ id: 'inventory', content: facts.join(' ') }] } })
    const chunks = server.services.db.query('SELECT content FROM rag_chunks ORDER BY position').all() as { content: string }[]
    // The chunks overlap: some sentence is in two of them.
    expect(chunks.some((c, i) => i > 0 && sentences(chunks[i - 1]!.content).some((s) => c.content.includes(s)))).toBe(true)
    for (const question of ['Which server runs the backup service in rack 3?', 'What runs on port 8021?', 'Which servers run the mail service?']) {
      const res = await server.call('POST', '/rag/answer', { token, body: { collection: 'racks', question, maxContext: 10 } })
      const said = answerSentences(res.json.answer)
      expect(said.length).toBeGreaterThan(0)
      expect(new Set(said).size).toBe(said.length)
    }
  }, 60_000)

  test('"what is" questions get the defining sentence; a sentence that leans on the previous one brings it along', async () => {
    const definition = await ask(
      ['Many teams use a proxy in front of their servers. A reverse proxy is a server that forwards client requests to backend servers. Reverse proxy logs are kept for a week.'],
      'What is a reverse proxy?',
    )
    expect(definition).toContain('A reverse proxy is a server that forwards client requests to backend servers. [1]')
    const leaning = await ask(['The vault seals itself after five failed unlock attempts. It then stays sealed until an operator unseals it with three key shares.'], 'Who unseals it, and with what?')
    expect(leaning).toContain('The vault seals itself after five failed unlock attempts. [1] It then stays sealed')
  }, 60_000)
})
