import { describe, expect, test } from 'bun:test'
import { openDatabase } from '../../src/db'
import { ExtractiveGenerator } from '../../src/ml/builtin/extractive-generator'
import { HashEmbedder } from '../../src/ml/builtin/hash-embedder'
import { bm25, keywordPlan } from '../../src/modules/rag/scoring'
import { RagService } from '../../src/modules/rag/service'
import { makeServer } from '../helpers'
import corpus from '../fixtures/rag-corpus.json'

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

// Ordinary sentences of common words, none of them naming a topic of the fixed corpus.
const FILLER = [
  'This is what the team said about the plan for the next week and how it will work.',
  'There are many things that we can do when the time is right, and some of them are easy.',
  'It was a long day, but the work is done and everyone can go home now.',
  'What you see here is only a part of the whole story that they told us.',
  'How it all began is not known, but it has been like this for a long time.',
]

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
    const keyword = rag.store.keywordCandidates(collection, 'what is the', 10)
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
  })

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
    await rag.ingest('u', 'kb', [...corpus.documents, ...Array.from({ length: 300 }, (_, i) => ({ id: `filler-${i}`, content: `${FILLER[i % FILLER.length]} ${FILLER[(i + 2) % FILLER.length]}` }))])
    for (const query of corpus.queries) {
      for (const text of [query.keyword, query.paraphrase]) {
        const { results } = await rag.search('u', 'kb', text, 5)
        expect({ query: text, top: results[0]?.id }).toEqual({ query: text, top: query.expected })
      }
    }
  })

  test('keyword candidates are scored with every word of the query: the same BM25 as FTS5 gives one OR query of them all', async () => {
    const { rag } = service({ keywordPostings: 5 })
    await rag.ingest('u', 'kb', [...corpus.documents, ...FILLER.map((content, i) => ({ id: `filler-${i}`, content }))])
    const collection = rag.collection('u', 'kb')
    const query = 'how do I rebase a git branch onto main and keep the history clean'
    const all = new Map(rag.store.keywordMatches(collection, '"how" OR "do" OR "rebase" OR "git" OR "branch" OR "onto" OR "main" OR "and" OR "keep" OR "the" OR "history" OR "clean"', 1000).map((h) => [h.chunkId, h.bm25]))
    const candidates = rag.store.keywordCandidates(collection, query, 10)
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
