import { describe, expect, test } from 'bun:test'
import { openDatabase } from '../../src/db'
import { ExtractiveGenerator } from '../../src/ml/builtin/extractive-generator'
import { HashEmbedder } from '../../src/ml/builtin/hash-embedder'
import { bm25, exactPhrases, keywordPlan, queryPhrases } from '../../src/modules/rag/ranking/scoring'
import { RagService } from '../../src/modules/rag/service'
import { makeServer } from '../helpers'
import corpus from '../fixtures/rag-corpus.json'
import { FILLER, fillerDocuments } from '../fixtures/filler'

function service(options: { keywordPostings?: number; minRows?: number } = {}) {
  const db = openDatabase(':memory:')
  db.run("INSERT INTO users (id, email, password_hash, roles, created_at) VALUES ('u', 'u@example.com', 'x', '[\"user\"]', '')")
  const embedder = new HashEmbedder()
  const rag = new RagService({
    db,
    embedder: async () => embedder,
    generator: async () => new ExtractiveGenerator(),
    keywordPostings: options.keywordPostings,
    vectorCache: options.minRows === undefined ? undefined : { minRows: options.minRows, budgetBytes: 256 * 1024 * 1024 },
  })
  return { db, rag, embedder }
}


describe('keyword search at scale', () => {
  test('a query of only common words still returns results, also when its matches exceed what is ranked', async () => {
    const { rag } = service({ keywordPostings: 50 })
    await rag.ingest(
      'u',
      'kb',
      Array.from({ length: 300 }, (_, i) => ({ id: `f${i}`, content: `${FILLER[i % FILLER.length]} Note ${i}.` })),
    )
    const collection = rag.collection('u', 'kb')
    // "the", "is", "what": in most chunks; ranked from a capped set of matches, never none.
    const keyword = rag.store.keywordCandidates(collection, rag.store.queryTerms(collection, 'what is the'), 10)
    expect(keyword).toHaveLength(10)
    const { results } = await rag.search('u', 'kb', 'what is the', 5)
    expect(results).toHaveLength(5)
    // Over HTTP as well.
    const server = makeServer()
    const { accessToken: token } = await server.login()
    await server.call('POST', '/rag/ingest', { token, body: { collection: 'kb', documents: FILLER.map((content, i) => ({ id: `f${i}`, content })) } })
    const res = await server.call('POST', '/rag/search', { token, body: { collection: 'kb', query: 'how is it what the', limit: 3 } })
    expect(res.status).toBe(200)
    expect(res.json.results.length).toBeGreaterThan(0)
  }, 30_000)

  test('a term present in every chunk does not dominate the ranking', async () => {
    const { rag } = service()
    const topics = ['tax returns are filed in April', 'the printer on floor two is jammed', 'holiday requests go through the portal', 'the parking garage closes at ten']
    const documents = Array.from({ length: 40 }, (_, i) => ({
      id: `d${i}`,
      // Every chunk says "Contoso", most of them many times.
      content: `Contoso ${'Contoso '.repeat(i % 7)}memo ${i}: ${topics[i % topics.length]}.`,
    }))
    documents.push({ id: 'refund', content: 'Contoso refund policy: a refund is paid within 30 days of the return.' })
    await rag.ingest('u', 'kb', documents)
    const { results } = await rag.search('u', 'kb', 'Contoso refund', 5)
    expect(results[0]!.id).toBe('refund')
    // Alone, it still finds chunks: every one of them holds it.
    expect((await rag.search('u', 'kb', 'Contoso', 5)).results).toHaveLength(5)
  })

  test('the fixed corpus keeps its expected document first for keyword and paraphrased queries when candidates come from the rarest words', async () => {
    // A budget of 40 postings: only the rarest words of each query find candidates among 32 documents and 300 of filler.
    const { rag } = service({ keywordPostings: 40 })
    await rag.ingest('u', 'kb', [...corpus.documents, ...fillerDocuments(300)])
    for (const query of corpus.queries) {
      for (const text of [query.keyword, query.paraphrase]) {
        const { results } = await rag.search('u', 'kb', text, 5)
        expect({ query: text, top: results[0]?.id }).toEqual({ query: text, top: query.expected })
      }
    }
  }, 30_000)

  test('keyword candidates are scored with every word of the query: the same BM25 as FTS5 gives one OR query of them all', async () => {
    const { rag } = service({ keywordPostings: 5 })
    await rag.ingest('u', 'kb', [...corpus.documents, ...FILLER.map((content, i) => ({ id: `filler-${i}`, content }))])
    const collection = rag.collection('u', 'kb')
    const query = 'how do I rebase a git branch onto main and keep the history clean'
    const all = new Map(rag.store.keywordMatches(collection, '"how" OR "do" OR "rebase" OR "git" OR "branch" OR "onto" OR "main" OR "and" OR "keep" OR "the" OR "history" OR "clean"', 1000).map((h) => [h.chunkId, h.bm25]))
    const candidates = rag.store.keywordCandidates(collection, rag.store.queryTerms(collection, query), 10)
    expect(candidates.length).toBeGreaterThan(0)
    for (const hit of candidates) expect(hit.bm25).toBeCloseTo(all.get(hit.chunkId)!, 9)
  })

  test('keywordPlan: rarest words find candidates within the budget; function and common words only score', () => {
    const plan = keywordPlan(
      [
        { word: 'how', df: 50 },
        { word: 'the', df: 990 },
        { word: 'window', df: 30 },
        { word: 'functions', df: 400 },
        { word: 'xyzzy', df: 0 },
        { word: 'frame', df: 60 },
      ],
      1000,
      100,
    )
    expect(plan.words).toEqual(['window', 'frame'])
    expect(plan.scored.sort()).toEqual(['frame', 'functions', 'how', 'the', 'window'])
    expect(plan.capped).toBe(false)
    // Only common words: the rarest one is used, and its matches are capped when too many.
    const common = keywordPlan([{ word: 'the', df: 990 }, { word: 'is', df: 800 }], 1000, 100)
    expect(common.words).toEqual(['is'])
    expect(common.capped).toBe(true)
    expect(keywordPlan([{ word: 'nothing', df: 0 }], 1000).query).toBeNull()
    // BM25: a word in every chunk adds (next to) nothing; a rare one a lot.
    expect(bm25([{ tf: 3, df: 1000 }], 10, 10, 1000)).toBeGreaterThan(-1e-5)
    expect(bm25([{ tf: 1, df: 2 }], 10, 10, 1000)).toBeLessThan(-5)
  })
})

describe('exact terms (issue 23, first part)', () => {
  const identifiers = ['ERR_SSL_PROTOCOL_ERROR', '0x80070005', 'fs.readFileSync', 'CVE-2024-3094', 'v1.4.30', 'user@example.com']

  test('queryPhrases: quoted text and identifiers FTS5 would split, kept whole', () => {
    expect(queryPhrases('why "connection reset by peer" on ERR_SSL_PROTOCOL_ERROR and 0x80070005?')).toEqual([
      { words: ['connection', 'reset', 'by', 'peer'], quoted: true, exact: true },
      { words: ['err', 'ssl', 'protocol', 'error'], quoted: false, exact: true },
    ])
    // An ordinary hyphenated word is a phrase too, but not an exact one; identifiers are, whatever their joiners.
    expect(
      queryPhrases('show one-line descriptions of point-in-time recovery, git-commit-graph, from/to and fs.readFileSync, CVE-2024-3094, keepDaily-Mode, /etc/passwd, usr/share/doc').map((p) => [
        p.words.join(' '),
        p.exact,
      ]),
    ).toEqual([
      ['one line', false],
      ['point in time', false],
      ['git commit graph', false],
      ['from to', false],
      ['fs readfilesync', true],
      ['cve 2024 3094', true],
      ['keepdaily mode', true],
      ['etc passwd', true],
    ])
    expect(exactPhrases('read usr/share/doc and "point in time"')).toEqual(new Set(['usr share doc', 'point in time']))
    expect(queryPhrases('fs.readFileSync CVE-2024-3094 v1.4.30 user@example.com').map((p) => p.words.join(' '))).toEqual([
      'fs readfilesync',
      'cve 2024 3094',
      'v1 4 30',
      'user example com',
    ])
  })

  test('each identifier form finds its own document first, whole and by its parts, among documents sharing those parts', async () => {
    const { rag } = service()
    const filler = 'The service restarted after the update and the logs were rotated as usual by the operations team.'
    const documents = identifiers.map((identifier, i) => ({ id: `id-${i}`, content: `${filler} Incident note: we saw ${identifier} on the gateway. ${filler}` }))
    // Decoys holding the same parts, but not together: "error", "ssl", "protocol", "fs", "2024", "example"…
    documents.push(
      { id: 'decoy-1', content: `${filler} An SSL error, a protocol error and another error, error after error.` },
      { id: 'decoy-2', content: `${filler} Read the file with fs, then sync; readFileSync is mentioned in 2024 and 3094 times for CVE reports.` },
      { id: 'decoy-3', content: `${filler} The user wrote to example.org about com ports on version 1.4 and 30 more.` },
    )
    await rag.ingest('u', 'kb', documents)
    for (const [i, identifier] of identifiers.entries()) {
      const { results } = await rag.search('u', 'kb', identifier, 5)
      expect({ identifier, top: results[0]?.id }).toEqual({ identifier, top: `id-${i}` })
      const inQuestion = await rag.search('u', 'kb', `what does ${identifier} mean`, 5)
      expect({ identifier, top: inQuestion.results[0]?.id }).toEqual({ identifier, top: `id-${i}` })
    }
  }, 30_000)

  test('a quoted phrase ranks the chunks holding it exactly first', async () => {
    const { rag } = service()
    await rag.ingest('u', 'kb', [
      { id: 'scattered', content: 'Reset the peer list. The connection was slow, and by noon the router had a reset of its connection table by the peer.' },
      { id: 'exact', content: 'The client logged: connection reset by peer. It retried later.' },
      { id: 'other', content: 'Connection pooling keeps connections open; a reset is rare; peer review by the team.' },
    ])
    const { results } = await rag.search('u', 'kb', '"connection reset by peer"', 3)
    expect(results[0]!.id).toBe('exact')
    // Without quotes it is ranked like any query, all three found.
    expect((await rag.search('u', 'kb', 'connection reset by peer', 3)).results.map((r) => r.id).sort()).toEqual(['exact', 'other', 'scattered'])
  })
})
