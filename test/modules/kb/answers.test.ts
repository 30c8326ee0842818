import { describe, expect, test } from 'bun:test'
import set from '../../fixtures/kb-labelled.json'
import { ExtractiveGenerator } from '../../../src/ml/builtin/extractive-generator'
import { sentences } from '../../../src/ml/text'
import { makeServer } from '../../helpers'
import labelled from '../../fixtures/answers-labelled.json'
import { answerQuestion } from '../../../src/modules/rag/answer/answer'
import { inMemoryRag } from '../../rag-service'
import { answersWith } from '../../answers-metric'

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

describe('answers that answer (issue 37): sentences chosen for the question', () => {
  const generator = new ExtractiveGenerator()
  const ask = async (passages: string[], question: string) =>
    (await generator.generate([{ role: 'user', content: `Sources:\n${passages.map((p, i) => `[${i + 1}] ${p}`).join('\n')}\n\nQuestion: ${question}` }])).text

  const handbook = [
    'Retention policy',
    'Backups are kept according to the retention policy of the repository.',
    'Change this with keep-daily, keep-weekly and keep-monthly in harbor.conf, then run harbor prune.',
    'Old snapshots are removed by the next prune.',
  ].join('\n')

  test('"how do I" gets the sentence with the setting and the command, not the heading', async () => {
    const text = await ask([handbook], 'How do I change the retention policy?')
    expect(text.startsWith('Change this with keep-daily, keep-weekly and keep-monthly in harbor.conf, then run harbor prune. [1]')).toBe(true)
    expect(text).not.toMatch(/^Retention policy/)
  })

  test('an underlined heading and a manual page term are headings, not answers', async () => {
    const setext = await ask(['Log rotation\n------------\nLogs are rotated weekly by logrotate.\nRotated logs are compressed with gzip after one day.'], 'When are logs rotated?')
    expect(setext.startsWith('Logs are rotated weekly by logrotate. [1]')).toBe(true)
    const man = await ask(['DSHELL\n       The login shell to be used for all new users.  Defaults to /bin/bash.\nDHOME\n       The directory in which new home directories should be created.  Defaults to /home.'], 'Where are new home directories created?')
    expect(man.startsWith('The directory in which new home directories should be created. [1]')).toBe(true)
  })

  test('"how many" gets the number, "where" the path, "why" the reason', async () => {
    const facts = [
      'The mirror holds packages for several architectures. It keeps 14 daily snapshots of every suite. Snapshots are listed in the web interface.',
      'Configuration lives in a text file. The mirror reads its settings from /etc/mirror/mirror.conf at start. Settings can also be given on the command line.',
      'Downloads are verified. The mirror checks every file against the signed Release file because a compromised upstream must not reach clients. Checks run in parallel.',
    ]
    // "It keeps…" leans on the sentence before it, which comes along, right before it.
    expect((await ask(facts, 'How many daily snapshots does the mirror keep?')).startsWith('The mirror holds packages for several architectures. [1] It keeps 14 daily snapshots of every suite. [1]')).toBe(true)
    expect((await ask(facts, 'Where does the mirror read its settings from?')).startsWith('The mirror reads its settings from /etc/mirror/mirror.conf at start. [2]')).toBe(true)
    expect((await ask(facts, 'Why does the mirror check every file?')).startsWith('The mirror checks every file against the signed Release file because')).toBe(true)
  })

  test('at most three sentences, even when more in a row answer; six when a list is asked for', async () => {
    const free = 'When we speak of free software, we mean freedom. Free software may be copied. Free software may be changed. Free software may be sold. Free software may be shared with anyone.'
    const three = await ask([free], 'What may I do with free software?')
    expect(three.match(/\[1\]/g)?.length).toBe(3)
    expect(three.startsWith('When we speak of free software')).toBe(false)
    const list = await ask([free], 'List all I may do with free software')
    expect(list.match(/\[1\]/g)?.length).toBeGreaterThan(3)
  })

  test('never a piece of a sentence cut by a chunk boundary', async () => {
    const cut = 'modifications, and in Source or Object form, provided that You meet the following conditions. You must give any other recipients of the Work a copy of this License. You may add Your own copyright statement to Your modifications and may provide additional or different license terms and conditions for use, reproduction, or distribution of Your'
    const text = await ask([cut], 'What must I give other recipients of the work, and under which conditions may I distribute modifications?')
    expect(text).toContain('You must give any other recipients of the Work a copy of this License. [1]')
    expect(text).not.toContain('modifications, and in Source or Object form')
    expect(text).not.toContain('distribution of Your [1]')
  })

  test('"can I sublicense the software?" over the GPL and the Apache licence alone is answered from the Apache grant, over HTTP and in a grounded chat', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    const licences = labelled.documents.filter((d) => d.id === 'GPL-3' || d.id === 'Apache-2.0')
    expect((await server.call('POST', '/rag/ingest', { token, body: { collection: 'licences', documents: licences } })).json.ingested).toBe(2)
    const res = await server.call('POST', '/rag/answer', { token, body: { collection: 'licences', question: 'can I sublicense the software?' } })
    expect(res.status).toBe(200)
    expect(res.json.sources[0].id).toBe('Apache-2.0')
    expect(res.json.answer).toMatch(/^Subject to the terms and conditions of this License, each Contributor hereby grants to You [^[]*sublicense, and distribute the Work[^[]*\. \[1\]/)
    // A world question over the same two texts is still refused.
    const world = await server.call('POST', '/rag/answer', { token, body: { collection: 'licences', question: 'What is the capital of Australia?' } })
    expect(world.json.sources).toEqual([])
    const chat = await server.call('POST', '/chat', { token, body: { message: 'can I sublicense the software?', collections: ['licences'] } })
    expect(chat.status).toBe(200)
    expect(chat.json.response).toContain('sublicense')
  })

  test('on real documents (test/fixtures/answers-labelled.json), the first sentence answers at least 70 % of the questions', async () => {
    const { rag } = inMemoryRag()
    await rag.ingest('u', 'debian', labelled.documents)
    let hits = 0
    for (const q of labelled.questions) {
      const { answer } = await answerQuestion(rag, 'u', { question: q.question, collection: 'debian', maxContext: 5, includeContext: false })
      if (answersWith(answer, q.answer)) hits++
    }
    expect(labelled.questions.length).toBeGreaterThanOrEqual(50)
    expect(hits / labelled.questions.length).toBeGreaterThanOrEqual(0.7)
  }, 120_000)
})
