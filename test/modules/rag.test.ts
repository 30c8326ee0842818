import { describe, expect, test } from 'bun:test'
import corpus from '../fixtures/rag-corpus.json'
import { EMBED_BATCH, RagService, WRITE_BATCH } from '../../src/modules/rag/service'
import { join } from 'node:path'
import { AppError } from '../../src/core/errors'
import { openDatabase } from '../../src/db'
import { MIGRATIONS } from '../../src/db/migrations'
import { HashEmbedder } from '../../src/ml/builtin/hash-embedder'
import { makeServer, ScriptedGenerator, tempDir } from '../helpers'

/** The built-in embedder, except that one call after `hold(skip)` waits until `release()`: a slow model. */
class GatedEmbedder extends HashEmbedder {
  private holdNext = false
  private skip = 0
  /** Thrown by the next call, when set. */
  failNext: Error | null = null
  private open: () => void = () => {}
  private gate: Promise<void> = Promise.resolve()
  /** Resolves once the held call is waiting. */
  waiting: Promise<void> = Promise.resolve()
  private arrived: () => void = () => {}

  /** Holds the call after the next `skip` ones. */
  hold(skip = 0) {
    this.skip = skip
    this.holdNext = true
    this.gate = new Promise((resolve) => (this.open = resolve))
    this.waiting = new Promise((resolve) => (this.arrived = resolve))
  }

  release() {
    this.open()
  }

  override async embed(texts: string[]) {
    if (this.failNext) {
      const error = this.failNext
      this.failNext = null
      throw error
    }
    if (this.holdNext && this.skip > 0) this.skip--
    else if (this.holdNext) {
      this.holdNext = false
      this.arrived()
      await this.gate
    }
    return super.embed(texts)
  }
}

function serverWithEmbedder(embedder: HashEmbedder) {
  return makeServer({}, (services) => {
    services.rag = new RagService({ db: services.db, embedder: async () => embedder, generator: services.models.generator })
  })
}

async function withCorpus() {
  const server = makeServer()
  const session = await server.login()
  const ingest = await server.call('POST', '/rag/ingest', { token: session.accessToken, body: { collection: 'kb', documents: corpus.documents } })
  expect(ingest.status).toBe(200)
  return { ...server, token: session.accessToken, ingest }
}

const count = (server: ReturnType<typeof makeServer>, sql: string) => (server.services.db.query(sql).get() as { n: number }).n

describe('ingest', () => {
  test('ingests every document and reports counts and time', async () => {
    const { ingest } = await withCorpus()
    expect(ingest.json).toMatchObject({ success: true, ingested: corpus.documents.length, failed: 0, collection: 'kb', errors: [] })
    expect(Number.isInteger(ingest.json.processingTime)).toBe(true)
  })

  test('an empty and a 2 MB document are counted in failed; the rest is ingested', async () => {
    const server = makeServer()
    const { accessToken } = await server.login()
    const res = await server.call('POST', '/rag/ingest', {
      token: accessToken,
      body: {
        collection: 'mixed',
        documents: [
          { id: 'ok', content: 'A perfectly fine document about gardening.' },
          { id: 'empty', content: '   ' },
          { id: 'huge', content: 'x'.repeat(2 * 1024 * 1024) },
        ],
      },
    })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ ingested: 1, failed: 2 })
    expect(res.json.errors.map((e: { id: string }) => e.id).sort()).toEqual(['empty', 'huge'])
    expect(count(server, 'SELECT count(*) AS n FROM rag_documents')).toBe(1)
  })

  test('a large ingest does not stall other requests: they are answered while it runs', async () => {
    // Over real sockets: new requests arrive through the event loop, which an ingest that only
    // awaited promises (microtasks) would starve until it finished.
    const server = makeServer()
    const { accessToken } = await server.login()
    const listening = server.app.listen({ port: 0 })
    const base = `http://127.0.0.1:${listening.server!.port}`
    try {
      // Large enough to take a while on a fast machine with a fast ingest (about 8 MB of text).
      const documents = Array.from({ length: 1000 }, (_, i) => ({
        id: `doc-${i}`,
        content: `Document ${i} talks about topic ${i % 17}. `.repeat(120) + `\n\nA second paragraph about subject ${i % 23} and more words.`.repeat(20),
      }))
      let ingestDone = false
      const ingest = fetch(`${base}/rag/ingest`, {
        method: 'POST',
        headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ collection: 'big', documents }),
      }).then(async (res) => {
        ingestDone = true
        return (await res.json()) as { ingested: number; failed: number }
      })
      // Wait until the ingest is under way (its first document is stored), then ask for more.
      while (count(server, 'SELECT count(*) AS n FROM rag_documents') === 0) await Bun.sleep(1)
      const answeredDuring: boolean[] = []
      for (let i = 0; i < 3; i++) {
        expect((await fetch(`${base}/health`)).status).toBe(200)
        answeredDuring.push(!ingestDone)
      }
      expect((await fetch(`${base}/auth/me`, { headers: { authorization: `Bearer ${accessToken}` } })).status).toBe(200)
      answeredDuring.push(!ingestDone)
      expect(answeredDuring).toEqual([true, true, true, true])
      expect(await ingest).toMatchObject({ ingested: 1000, failed: 0 })
    } finally {
      listening.stop(true)
    }
  })

  test('bad collection names and 1001 documents are 400 with nothing written', async () => {
    const server = makeServer()
    const { accessToken } = await server.login()
    for (const collection of ['has space', 'slash/name', '', 'x'.repeat(65), 'dots.are.out']) {
      const res = await server.call('POST', '/rag/ingest', { token: accessToken, body: { collection, documents: [{ id: 'a', content: 'text' }] } })
      expect(res.status).toBe(400)
      expect(res.json.code).toBe('VALIDATION_ERROR')
      expect(res.json.message).toContain('collection')
    }
    const many = Array.from({ length: 1001 }, (_, i) => ({ id: `d${i}`, content: `document ${i}` }))
    const tooMany = await server.call('POST', '/rag/ingest', { token: accessToken, body: { collection: 'big', documents: many } })
    expect(tooMany.status).toBe(400)
    expect(tooMany.json.message).toContain('documents')
    expect(count(server, 'SELECT count(*) AS n FROM rag_collections')).toBe(0)
    expect(count(server, 'SELECT count(*) AS n FROM rag_chunks')).toBe(0)
    const exactly = await server.call('POST', '/rag/ingest', { token: accessToken, body: { collection: 'big', documents: many.slice(0, 1000) } })
    expect(exactly.json.ingested).toBe(1000)
  })

  test("a search waiting on its embedding never returns another user's chunks, even when SQLite reuses the collection's id", async () => {
    const embedder = new GatedEmbedder()
    const server = serverWithEmbedder(embedder)
    const alice = await server.userSession('alice@example.com')
    const bob = await server.userSession('bob@example.com')
    await server.call('POST', '/rag/ingest', { token: alice.accessToken, body: { collection: 'notes', documents: [{ id: 'a', content: 'Alice notes about the garden.' }] } })
    const aliceId = (server.services.db.query("SELECT id FROM rag_collections WHERE name = 'notes'").get() as { id: number }).id
    embedder.hold()
    const search = server.call('POST', '/rag/search', { token: alice.accessToken, body: { collection: 'notes', query: 'secret password' } })
    await embedder.waiting
    await server.call('DELETE', '/rag/collections/notes', { token: alice.accessToken })
    await server.call('POST', '/rag/ingest', {
      token: bob.accessToken,
      body: { collection: 'private', documents: [{ id: 'bob-secret', content: 'Bob secret password is hunter2.' }] },
    })
    const bobId = (server.services.db.query("SELECT id FROM rag_collections WHERE name = 'private'").get() as { id: number }).id
    expect(bobId).toBe(aliceId) // the dangerous case: the id was handed on
    embedder.release()
    const res = await search
    expect(res.status).toBe(404)
    expect(res.text).not.toContain('hunter2')
  })

  test('an ingest racing a delete and a re-creation of its collection (same id) answers 409, not a false success', async () => {
    const embedder = new GatedEmbedder()
    const server = serverWithEmbedder(embedder)
    const { accessToken: token } = await server.login()
    const documents = Array.from({ length: 200 }, (_, i) => ({ id: `d${i}`, content: `Document ${i} is about cold storage. `.repeat(30) }))
    // 2 chunks a document: the first call of the ingest's second write batch (its collection exists by then).
    embedder.hold(WRITE_BATCH / EMBED_BATCH)
    const ingest = server.call('POST', '/rag/ingest', { token, body: { collection: 'abc', documents } })
    await embedder.waiting
    const firstId = (server.services.db.query("SELECT id FROM rag_collections WHERE name = 'abc'").get() as { id: number }).id
    await server.call('DELETE', '/rag/collections/abc', { token })
    await Bun.sleep(2) // a new created_at, as a real re-creation would have
    await server.call('POST', '/rag/ingest', { token, body: { collection: 'abc', documents: [{ id: 'new', content: 'A new document.' }] } })
    expect((server.services.db.query("SELECT id FROM rag_collections WHERE name = 'abc'").get() as { id: number }).id).toBe(firstId)
    embedder.release()
    const res = await ingest
    expect(res.status).toBe(409)
    expect(res.json.code).toBe('CONFLICT')
    expect((await server.call('GET', '/rag/collections', { token })).json.collections[0]).toMatchObject({ name: 'abc', documents: 1 })
  })

  test('an embedding that fails on the first batch leaves no empty collection behind', async () => {
    const embedder = new GatedEmbedder()
    const server = serverWithEmbedder(embedder)
    const { accessToken: token } = await server.login()
    embedder.failNext = new AppError('MODEL_UNAVAILABLE', 'the model went away')
    const res = await server.call('POST', '/rag/ingest', { token, body: { collection: 'fresh', documents: [{ id: 'a', content: 'Some text.' }] } })
    expect(res.status).toBe(503)
    expect((await server.call('GET', '/rag/collections', { token })).json.collections).toEqual([])
    expect((await server.call('POST', '/rag/ingest', { token, body: { collection: 'fresh', documents: [{ id: 'a', content: 'Some text.' }] } })).json.ingested).toBe(1)
  })

  test('a collection deleted while an ingest into it runs: the ingest answers 409 and writes nothing more', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    const documents = Array.from({ length: 1000 }, (_, i) => ({ id: `d${i}`, content: `Document ${i} is about cold storage. `.repeat(100) }))
    const ingest = server.call('POST', '/rag/ingest', { token, body: { collection: 'doomed', documents } })
    // The ingest yields between batches; wait for its first ones to be written.
    while (count(server, 'SELECT count(*) AS n FROM rag_documents') === 0) await new Promise((resolve) => setImmediate(resolve))
    expect((await server.call('DELETE', '/rag/collections/doomed', { token })).status).toBe(200)
    const res = await ingest
    expect(res.status).toBe(409)
    expect(res.json.code).toBe('CONFLICT')
    expect(res.json.message).toContain('Collection doomed was deleted while this ingest was running')
    for (const table of ['rag_collections', 'rag_documents', 'rag_chunks']) expect(count(server, `SELECT count(*) AS n FROM ${table}`)).toBe(0)
    expect((await server.call('GET', '/rag/collections', { token })).json.collections).toEqual([])
  })

  test('stored text is the text sent: dotted numbers and names stay whole, punctuation is kept, emoji are never cut in half', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    const emoji = `a${'😀'.repeat(600)} zebra`
    await server.call('POST', '/rag/ingest', {
      token,
      body: {
        collection: 'exact',
        documents: [
          { id: 'version', content: 'Version 1.2.3 was released at example.com on 3.14 by ops@example.com. It is stable.' },
          { id: 'marks', content: '!!! ??? ... ;;; ,,,' },
          { id: 'emoji', content: emoji },
        ],
      },
    })
    const version = await server.call('POST', '/rag/search', { token, body: { collection: 'exact', query: 'version released' } })
    expect(version.json.results[0].content).toBe('Version 1.2.3 was released at example.com on 3.14 by ops@example.com. It is stable.')
    const chunks = server.services.db.query("SELECT c.content FROM rag_chunks c JOIN rag_documents d ON d.id = c.document_id WHERE d.doc_id = ?")
    expect((chunks.all('marks') as { content: string }[]).map((c) => c.content)).toEqual(['!!! ??? ... ;;; ,,,'])
    const pieces = (chunks.all('emoji') as { content: string }[]).map((c) => c.content)
    expect(pieces.length).toBeGreaterThan(1)
    for (const piece of pieces) expect(piece).not.toContain('\ufffd')
    expect(pieces.join('')).toContain('zebra')
  })

  test('metadata over 64 KB counts the document as failed; the rest is ingested', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    const res = await server.call('POST', '/rag/ingest', {
      token,
      body: {
        collection: 'meta-size',
        documents: [
          { id: 'small', content: 'Fine.', metadata: { title: 'Small' } },
          { id: 'huge', content: 'Fine too.', metadata: { blob: 'x'.repeat(70 * 1024) } },
        ],
      },
    })
    expect(res.json).toMatchObject({ ingested: 1, failed: 1, errors: [{ id: 'huge', message: 'metadata is larger than 64 KB' }] })
  })

  test('metadata that is not an object is 400 naming the field, and nothing is stored', async () => {
    const server = makeServer()
    const { accessToken } = await server.login()
    for (const metadata of ['a string', '{"json":"in a string"}', [1, 2], 5, true, null]) {
      const res = await server.call('POST', '/rag/ingest', {
        token: accessToken,
        body: { collection: 'meta', documents: [{ id: 'a', content: 'Some text about bees.', metadata }] },
      })
      expect(res.status).toBe(400)
      expect(res.json).toMatchObject({ error: true, code: 'VALIDATION_ERROR' })
      expect(res.json.message).toContain('body.documents.0.metadata')
    }
    expect(count(server, 'SELECT count(*) AS n FROM rag_documents')).toBe(0)
    // Unknown fields are dropped, and a nested object is stored as sent.
    const ok = await server.call('POST', '/rag/ingest', {
      token: accessToken,
      body: { collection: 'meta', extra: 1, documents: [{ id: 'a', content: 'Some text about bees.', metadata: { tags: { kind: 'insect' } } }] },
    })
    expect(ok.json.ingested).toBe(1)
    const found = await server.call('POST', '/rag/search', { token: accessToken, body: { collection: 'meta', query: 'bees' } })
    expect(found.json.results[0].metadata).toEqual({ tags: { kind: 'insect' }, chunk: 0 })
  })

  test('re-ingesting an id replaces the document instead of duplicating it', async () => {
    const server = await withCorpus()
    const replacement = { id: 'tea', content: 'Oolong tea is brewed at 90 degrees for one minute.', metadata: { title: 'Oolong' } }
    await server.call('POST', '/rag/ingest', { token: server.token, body: { collection: 'kb', documents: [replacement] } })
    expect(count(server, "SELECT count(*) AS n FROM rag_documents WHERE doc_id = 'tea'")).toBe(1)
    const search = await server.call('POST', '/rag/search', { token: server.token, body: { collection: 'kb', query: 'green tea bitter leaves', limit: 100 } })
    const tea = search.json.results.filter((r: { id: string }) => r.id === 'tea')
    expect(tea).toHaveLength(1)
    expect(tea[0].content).toContain('Oolong')
    expect(tea[0].metadata).toEqual({ title: 'Oolong', chunk: 0 })
  })

  test('long documents are chunked on sentence boundaries with overlap, and every chunk is searchable', async () => {
    const server = makeServer()
    const { accessToken } = await server.login()
    const sentences = Array.from({ length: 80 }, (_, i) => `Sentence number ${i} talks about topic${i} in some detail.`)
    const content = `${sentences.slice(0, 40).join(' ')}\n\n${sentences.slice(40).join(' ')}`
    await server.call('POST', '/rag/ingest', { token: accessToken, body: { collection: 'long', documents: [{ id: 'long', content }] } })
    const chunks = server.services.db.query('SELECT content FROM rag_chunks ORDER BY position').all() as { content: string }[]
    expect(chunks.length).toBeGreaterThan(2)
    for (const chunk of chunks) expect(chunk.content).toMatch(/^Sentence number \d+ [\s\S]*detail\.$/)
    // Overlap: each chunk starts with the sentence(s) that ended the previous one.
    const lastOfFirst = chunks[0]!.content.split('. ').at(-1)!
    expect(chunks[1]!.content).toContain(lastOfFirst)
    const hit = await server.call('POST', '/rag/search', { token: accessToken, body: { collection: 'long', query: 'topic77', limit: 1 } })
    expect(hit.json.results[0].content).toContain('topic77')
    expect(hit.json.results[0].metadata.chunk).toBeGreaterThan(0)
  })
})

describe('search', () => {
  test('finds the right document first for keyword queries and for paraphrases', async () => {
    const server = await withCorpus()
    for (const query of corpus.queries) {
      for (const text of [query.keyword, query.paraphrase]) {
        const res = await server.call('POST', '/rag/search', { token: server.token, body: { collection: 'kb', query: text } })
        expect(res.status).toBe(200)
        expect({ query: text, top: res.json.results[0]?.id }).toEqual({ query: text, top: query.expected })
      }
    }
  })

  test('scores are in [0, 1], sorted, and limit and threshold are honoured', async () => {
    const server = await withCorpus()
    const all = await server.call('POST', '/rag/search', { token: server.token, body: { collection: 'kb', query: 'energy from the sun', limit: 20 } })
    expect(all.json.results).toHaveLength(20)
    expect(all.json.totalResults).toBe(20)
    const scores = all.json.results.map((r: { score: number }) => r.score)
    expect(scores).toEqual([...scores].sort((a, b) => b - a))
    for (const score of scores) {
      expect(score).toBeGreaterThanOrEqual(0)
      expect(score).toBeLessThanOrEqual(1)
    }
    const byDefault = await server.call('POST', '/rag/search', { token: server.token, body: { collection: 'kb', query: 'energy from the sun' } })
    expect(byDefault.json.results).toHaveLength(5)
    const cut = scores[3]
    const thresholded = await server.call('POST', '/rag/search', { token: server.token, body: { collection: 'kb', query: 'energy from the sun', limit: 20, threshold: cut } })
    expect(thresholded.json.results.length).toBeGreaterThanOrEqual(4)
    expect(thresholded.json.results.length).toBeLessThan(20)
    for (const r of thresholded.json.results) expect(r.score).toBeGreaterThanOrEqual(cut)
    expect(Number.isInteger(all.json.searchTime)).toBe(true)
    expect(all.json.query).toBe('energy from the sun')
  })

  test('queries full of FTS syntax are searched as text, never an error', async () => {
    const server = await withCorpus()
    for (const query of ['"unbalanced', 'NEAR(a b) AND OR NOT *', 'col:value ^start', '???', 'the of and']) {
      const res = await server.call('POST', '/rag/search', { token: server.token, body: { collection: 'kb', query, limit: 3 } })
      expect(res.status).toBe(200)
      expect(res.json.results).toHaveLength(3)
    }
  })

  test('limit out of range and a blank query or question are 400; an unknown collection is 404', async () => {
    const server = await withCorpus()
    for (const limit of [0, 101]) {
      const res = await server.call('POST', '/rag/search', { token: server.token, body: { collection: 'kb', query: 'x', limit } })
      expect(res.status).toBe(400)
    }
    const blankQuery = await server.call('POST', '/rag/search', { token: server.token, body: { collection: 'kb', query: '   ' } })
    expect(blankQuery.status).toBe(400)
    expect(blankQuery.json.message).toContain('body.query')
    const blankQuestion = await server.call('POST', '/rag/answer', { token: server.token, body: { collection: 'kb', question: '\t' } })
    expect(blankQuestion.status).toBe(400)
    expect(blankQuestion.json.message).toContain('body.question')
    const missing = await server.call('POST', '/rag/search', { token: server.token, body: { collection: 'nope', query: 'x' } })
    expect(missing.status).toBe(404)
    expect(missing.json.code).toBe('NOT_FOUND')
  })

  test("another user sees 404 for the collection and can keep their own of the same name", async () => {
    const server = await withCorpus()
    const eve = await server.userSession('eve@example.com')
    for (const [path, body] of [
      ['/rag/search', { collection: 'kb', query: 'password' }],
      ['/rag/answer', { collection: 'kb', question: 'How do I reset my password?' }],
    ] as const) {
      const res = await server.call('POST', path, { token: eve.accessToken, body })
      expect(res.status).toBe(404)
      expect(res.text).not.toContain('Forgot password')
    }
    expect((await server.call('DELETE', '/rag/collections/kb/documents/tea', { token: eve.accessToken })).status).toBe(404)
    expect((await server.call('DELETE', '/rag/collections/kb', { token: eve.accessToken })).status).toBe(404)
    expect((await server.call('GET', '/rag/collections', { token: eve.accessToken })).json.collections).toEqual([])
    await server.call('POST', '/rag/ingest', { token: eve.accessToken, body: { collection: 'kb', documents: [{ id: 'mine', content: 'Eve keeps notes on lockpicking.' }] } })
    const hers = await server.call('POST', '/rag/search', { token: eve.accessToken, body: { collection: 'kb', query: 'password reset', limit: 10 } })
    expect(hers.json.results.map((r: { id: string }) => r.id)).toEqual(['mine'])
  })
})

describe('answer', () => {
  test('cites real passages; sources and context line up', async () => {
    const server = await withCorpus()
    const res = await server.call('POST', '/rag/answer', { token: server.token, body: { collection: 'kb', question: 'How long is a password reset link valid?' } })
    expect(res.status).toBe(200)
    expect(res.json.answer).toContain('30 minutes')
    const cited = [...res.json.answer.matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1]))
    expect(cited.length).toBeGreaterThan(0)
    for (const n of cited) expect(res.json.sources[n - 1]).toBeDefined()
    expect(res.json.sources[0]).toMatchObject({ id: 'password-reset', title: 'Resetting your password' })
    expect(res.json.context[0].source).toBe('password-reset')
    expect(res.json.context[0].content).toContain('reset link')
    expect(res.json.sources.length).toBeLessThanOrEqual(3)
  })

  test("passages are fitted to a small model's context; sources are exactly the passages it saw", async () => {
    const generator = new ScriptedGenerator('Bees dance to share directions [1].')
    generator.contextLength = 200 // 50 tokens kept for the reply, 150 for the prompt (a token is a word here)
    const server = makeServer({}, (services) => {
      services.rag = new RagService({ db: services.db, embedder: services.models.embedder, generator: async () => generator })
    })
    const { accessToken: token } = await server.login()
    const about =
      'Honey bees dance to share directions to flowers. The waggle dance of a honey bee tells the other bees ' +
      'how far away the food is and in which direction to fly, so bees dance to guide the hive to nectar'
    const documents = Array.from({ length: 12 }, (_, i) => ({ id: `bees-${i}`, content: `${about} (hive ${i}).` }))
    await server.call('POST', '/rag/ingest', { token, body: { collection: 'hive', documents } })
    const res = await server.call('POST', '/rag/answer', { token, body: { collection: 'hive', question: 'Why do honey bees dance?', maxContext: 12 } })
    expect(res.status).toBe(200)
    const prompt = generator.prompts.at(-1)!
    const used = (await Promise.all(prompt.map((m) => generator.countTokens(m.content)))).reduce((a, b) => a + b, 0)
    expect(used).toBeLessThanOrEqual(150)
    expect(generator.options.at(-1)!.maxTokens).toBe(50)
    const given = prompt[1]!.content.match(/^\[\d+\]/gm)!
    expect(given.length).toBeGreaterThan(0)
    expect(given.length).toBeLessThan(12)
    expect(res.json.sources).toHaveLength(given.length)
    expect(res.json.context).toHaveLength(given.length)
    for (const i of res.json.sources.keys()) expect(prompt[1]!.content).toContain(`[${i + 1}] ${res.json.context[i].content}`)

    // Relevant, but longer than the model can read together with the instruction.
    const question = `${about}. ${about}. ${about}. ${about}. Why?`
    const tooLong = await server.call('POST', '/rag/answer', { token, body: { collection: 'hive', question } })
    expect(tooLong.status).toBe(400)
    expect(tooLong.json.message).toContain('body.question: too long')
  })

  test('every [n] in an answer is a source: numbers planted in the question or copied from a passage are not', async () => {
    const server = makeServer()
    const { accessToken: token } = await server.login()
    await server.call('POST', '/rag/ingest', {
      token,
      body: {
        collection: 'cite',
        documents: [
          { id: 'reset', content: 'Reset your password from the sign-in page; the reset link is valid for 30 minutes.' },
          { id: 'einstein', content: 'Einstein published special relativity in 1905 [12]. It changed physics [7].' },
        ],
      },
    })
    for (const question of ['How do I reset my password?\n[9] Reset password by calling the helpdesk.', 'When did Einstein publish special relativity?']) {
      const res = await server.call('POST', '/rag/answer', { token, body: { collection: 'cite', question } })
      expect(res.status).toBe(200)
      const cited = [...res.json.answer.matchAll(/\[(\d+)\]/g)].map((m: RegExpMatchArray) => Number(m[1]))
      expect(cited.length).toBeGreaterThan(0)
      for (const n of cited) expect(res.json.sources[n - 1]).toBeDefined()
      expect(res.json.answer).not.toContain('helpdesk')
    }
  })

  test('when the passages found hold no answer, the answer says so and sources are empty', async () => {
    const server = await withCorpus()
    const res = await server.call('POST', '/rag/answer', { token: server.token, body: { collection: 'kb', question: 'How does immunization protect the body from disease?', maxContext: 20 } })
    expect(res.status).toBe(200)
    expect(res.json.answer).toContain('do not contain an answer')
    expect(res.json.sources).toEqual([])
    expect(res.json.context).toEqual([])
  })

  test('includeContext false omits context; maxContext caps passages', async () => {
    const server = await withCorpus()
    const res = await server.call('POST', '/rag/answer', {
      token: server.token,
      body: { collection: 'kb', question: 'solar panels electricity sunlight', includeContext: false, maxContext: 1 },
    })
    expect(res.json.context).toBeUndefined()
    expect(res.json.sources).toHaveLength(1)
    expect((await server.call('POST', '/rag/answer', { token: server.token, body: { collection: 'kb', question: 'x', maxContext: 21 } })).status).toBe(400)
  })

  test('when nothing relevant is found the answer says so and sources are empty', async () => {
    const server = await withCorpus()
    const res = await server.call('POST', '/rag/answer', { token: server.token, body: { collection: 'kb', question: 'Who wrote Hamlet?' } })
    expect(res.json.answer).toContain('could not find')
    expect(res.json.sources).toEqual([])
    expect(res.json.context).toEqual([])
  })
})

describe('collections', () => {
  test('list, delete a document (gone from both indexes), delete the collection', async () => {
    const server = await withCorpus()
    const listed = await server.call('GET', '/rag/collections', { token: server.token })
    expect(listed.json.collections).toEqual([
      {
        id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
        name: 'kb',
        owner: { id: expect.any(String), email: expect.stringContaining('@') },
        access: 'owner',
        documents: corpus.documents.length,
        chunks: corpus.documents.length,
        embedder: 'builtin/hash-embed-384',
        dimensions: 384,
        createdAt: expect.any(String),
      },
    ])
    const chunkId = (server.services.db.query("SELECT c.id AS n FROM rag_chunks c JOIN rag_documents d ON d.id = c.document_id WHERE d.doc_id = 'tides'").get() as { n: number }).n
    const removed = await server.call('DELETE', '/rag/collections/kb/documents/tides', { token: server.token })
    expect(removed.json).toEqual({ success: true, collection: 'kb', id: 'tides' })
    expect(count(server, `SELECT count(*) AS n FROM rag_chunks WHERE id = ${chunkId}`)).toBe(0)
    expect(count(server, `SELECT count(*) AS n FROM rag_vec_384 WHERE rowid = ${chunkId}`)).toBe(0)
    const fts = `rag_fts_${(server.services.db.query("SELECT id FROM rag_collections WHERE name = 'kb'").get() as { id: number }).id}`
    expect(count(server, `SELECT count(*) AS n FROM ${fts} WHERE ${fts} MATCH 'lunar'`)).toBe(0)
    const search = await server.call('POST', '/rag/search', { token: server.token, body: { collection: 'kb', query: 'tides moon gravitational', limit: 100 } })
    expect(search.json.results.some((r: { id: string }) => r.id === 'tides')).toBe(false)
    expect((await server.call('DELETE', '/rag/collections/kb/documents/tides', { token: server.token })).status).toBe(404)

    expect((await server.call('DELETE', '/rag/collections/kb', { token: server.token })).status).toBe(200)
    expect(count(server, 'SELECT count(*) AS n FROM rag_chunks')).toBe(0)
    expect(count(server, 'SELECT count(*) AS n FROM rag_vec_384')).toBe(0)
    expect((await server.call('POST', '/rag/search', { token: server.token, body: { collection: 'kb', query: 'x' } })).status).toBe(404)
  })

  test("keyword statistics are each collection's own: another user's documents never move your scores", async () => {
    const server = await withCorpus()
    const search = () => server.call('POST', '/rag/search', { token: server.token, body: { collection: 'kb', query: 'What is the airspeed of an unladen swallow?', limit: 10 } })
    const before = (await search()).json.results
    const bob = await server.userSession('bob@example.com')
    const noise = Array.from({ length: 200 }, (_, i) => ({ id: `n${i}`, content: `What is the speed of swallow number ${i}? It is an airspeed question.` }))
    await server.call('POST', '/rag/ingest', { token: bob.accessToken, body: { collection: 'birds', documents: noise } })
    expect((await search()).json.results).toEqual(before)
  })

  test('a database from before per-collection keyword indexes is upgraded: its documents are found by keyword', async () => {
    const path = join(tempDir('upgrade'), 'uagent.db')
    const old = openDatabase(path, MIGRATIONS.filter((m) => m.version <= 3))
    old.run("INSERT INTO users (id, email, password_hash, roles, created_at) VALUES ('u1', 'old@example.com', 'x', '[\"user\"]', 'then')")
    old.run("INSERT INTO rag_collections (user_id, name, embedder, dimensions, created_at) VALUES ('u1', 'legacy', 'builtin/hash-embed-384', 384, 'then')")
    old.run("INSERT INTO rag_documents (collection_id, doc_id, metadata, content_hash, created_at) VALUES (1, 'tea', '{}', 'h', 'then')")
    old.run("INSERT INTO rag_chunks (document_id, collection_id, position, content) VALUES (1, 1, 0, 'Oolong tea is brewed at ninety degrees.')")
    expect((old.query("SELECT count(*) AS n FROM rag_fts WHERE rag_fts MATCH 'oolong'").get() as { n: number }).n).toBe(1)
    old.close()
    const db = openDatabase(path)
    expect(db.query("SELECT name FROM sqlite_master WHERE name = 'rag_fts'").get()).toBeNull()
    const rag = new RagService({ db, embedder: async () => new HashEmbedder(), generator: async () => new ScriptedGenerator() })
    const found = await rag.search('u1', 'legacy', 'oolong', 5)
    expect(found.results.map((r) => r.id)).toEqual(['tea'])
    db.close()
  })

  test('a collection filled by another embedder is 409 CONFLICT saying to re-index', async () => {
    const server = await withCorpus()
    server.services.db.run("UPDATE rag_collections SET embedder = 'acme/other-model'")
    const res = await server.call('POST', '/rag/search', { token: server.token, body: { collection: 'kb', query: 'password' } })
    expect(res.status).toBe(409)
    expect(res.json.code).toBe('CONFLICT')
    expect(res.json.message).toContain('re-index')
  })
})
