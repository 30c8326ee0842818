// Search with the synonym expansion of the session before (frozen here, for `bun run bench answers`):
// the synonyms of each query word's most frequent sense that a collection holds in at most 2 % of
// its chunks, searched as one OR query whose BM25 counts at 70 %, and the query's vector leaned
// towards all of them at once. Today's (src/modules/rag/ranking/expansion.ts) weighs several senses,
// counts a word once however many of its synonyms a chunk holds, and looks two-word terms up whole.
import type { Embedder } from '../../src/ml'
import { rankingParams } from '../../src/modules/rag/ranking/params'
import { synonymsOf } from '../../src/modules/rag/ranking/expansion'
import { type Candidate, candidatePools, cosineDistance, rankCandidates, similarity } from '../../src/modules/rag/ranking/scoring'
import { contentWords, type RagService } from '../../src/modules/rag/service'

const SHARE = 0.7
const VECTOR_SHARE = 0.5
const MOST = 12

export async function firstSenseSearch(rag: RagService, embedder: Embedder, user: string, name: string, query: string, limit: number): Promise<{ id: string }[]> {
  const collection = rag.collection(user, name)
  const params = rankingParams(embedder.id)
  const found = rag.store.queryTerms(collection, synonymsOf(query).join(' '))
  const most = Math.max(20, found.chunks * 0.02)
  const kept = found.terms.filter((term) => !term.phrase && term.df > 0 && term.df <= most).slice(0, MOST)
  const [own, other] = await embedder.embed([query, kept.map((term) => term.word).join(' ') || query])
  const vector = Float32Array.from(own!)
  if (kept.length) {
    let norm = 0
    for (let i = 0; i < vector.length; i++) norm += (vector[i]! += VECTOR_SHARE * other![i]!) ** 2
    for (let i = 0; i < vector.length; i++) vector[i]! /= Math.sqrt(norm)
  }
  const pools = { ...candidatePools(limit, params), rareShare: params.rareShare }
  const { candidates, terms, chunks } = rag.candidates(collection, vector, query, pools, { words: [] })
  const byId = new Map<number, Candidate>(candidates.map((c) => [c.chunkId, c]))
  const added: number[] = []
  for (const hit of kept.length ? rag.store.keywordCandidates(collection, { ...found, terms: kept }, pools.keywordPool) : []) {
    const known = byId.get(hit.chunkId)
    if (known) known.synonymBm25 = SHARE * hit.bm25
    else {
      byId.set(hit.chunkId, { chunkId: hit.chunkId, similarity: 0, synonymBm25: SHARE * hit.bm25, held: [], features: 0, vectorRank: Infinity, keywordRank: Infinity })
      added.push(hit.chunkId)
    }
  }
  for (const [chunkId, stored] of rag.store.vectors(collection, added)) byId.get(chunkId)!.similarity = similarity(cosineDistance(vector, stored))
  const more = rag.store.chunks(added)
  for (const id of added) byId.get(id)!.features = contentWords(more.get(id)?.content ?? '')
  const all = new Map([...chunks, ...more])
  return rankCandidates([...byId.values()], terms, params)
    .slice(0, limit)
    .map((hit) => ({ id: all.get(hit.chunkId)!.docId }))
}
