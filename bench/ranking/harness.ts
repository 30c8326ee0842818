// The labelled ranking set at work: its corpora ingested in process (each corpus one collection, as a
// user would have it), every query's candidates gathered once with large pools, and the metrics of a
// ranking over them. Shared by scripts/fit-ranking.ts (fitting) and bench/ranking.ts (evaluation).
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { createModels, type Embedder } from '../../src/ml'
import { chunkOptionsFor } from '../../src/modules/rag/chunking'
import { type Candidate, candidatePools, type RankingParams, rankCandidates, type RankingTerms } from '../../src/modules/rag/ranking/scoring'
import { questionFocus } from '../../src/modules/rag/ranking/question'
import type { RagService } from '../../src/modules/rag/service'
import type { CollectionRow, RagStore } from '../../src/modules/rag/store'
import { fillerDocuments } from '../../test/fixtures/filler'
import { identifierCorpus } from '../../test/fixtures/identifier-corpus'
import { inMemoryRag } from '../../test/rag-service'
import labelled from '../../test/fixtures/ranking-labelled.json'
import kb from '../../test/fixtures/kb-labelled.json'
import intranet from '../../test/fixtures/rag-corpus.json'
import { ensurePackages, loadPages } from '../debian-docs'
import { chunkDocument as chunkBefore } from './before/chunking'
import { retrieveBefore } from './before/scoring'

export const root = join(import.meta.dir, '..', '..')
export const CACHE = process.env.BENCH_CACHE ?? join(root, '.bench')

export interface LabelledQuery {
  corpus: string
  query: string
  expected: string[]
  half: 'fit' | 'check'
  kind: 'question' | 'paraphrase' | 'identifier' | 'part'
  form?: string
}

export const set = labelled as { packages: { name: string; version: string }[]; offTopic: string[]; queries: LabelledQuery[] }

/** The corpora by name: Debian documentation packages, generated identifier notes and the knowledge-base set. */
export function corpora(): Map<string, { id: string; content: string }[]> | null {
  const packages = set.packages.map((p) => p.name)
  if (!ensurePackages(CACHE, packages)) return null
  const out = new Map<string, { id: string; content: string }[]>()
  for (const name of packages) out.set(name, loadPages(CACHE, [name]).map((page) => ({ id: page.id, content: page.text })))
  out.set('identifiers', identifierCorpus().map((d) => ({ id: d.id, content: d.content })))
  out.set('kb', kb.documents.map((d) => ({ id: d.id, content: d.content })))
  // The fixed corpus of the RAG tests among 300 filler notes, as its test has it.
  out.set('intranet', [...intranet.documents.map((d) => ({ id: d.id, content: d.content })), ...fillerDocuments(300)])
  return out
}

/** The embedder the server would use with this configuration (models/ and the environment), as fitted values belong to it. */
export async function activeEmbedder(): Promise<Embedder> {
  return createModels(loadConfig()).embedder()
}

export interface Prepared {
  query: LabelledQuery
  /** Document of each candidate chunk. */
  docs: Map<number, string>
  candidates: Candidate[]
  terms: RankingTerms
}

/** Every corpus ingested as it is now (RagService: today's chunker), one collection each. */
export async function ingestNow(embedder: Embedder, docs: Map<string, { id: string; content: string }[]>, rag: RagService<RagStore> = inMemoryRag({ user: 'bench', embedder }).rag) {
  const collections = new Map<string, CollectionRow>()
  for (const [name, documents] of docs) {
    for (let i = 0; i < documents.length; i += 500) await rag.ingest('bench', name, documents.slice(i, i + 500))
    collections.set(name, await rag.collection('bench', name))
  }
  return { rag, collections }
}

/** Every corpus ingested with the chunker of before (bench/ranking/before), for the baseline. */
export async function ingestBefore(embedder: Embedder, docs: Map<string, { id: string; content: string }[]>) {
  const { rag } = inMemoryRag({ user: 'bench', embedder })
  const options = chunkOptionsFor(embedder.maxTokens)
  const collections = new Map<string, CollectionRow>()
  for (const [name, documents] of docs) {
    const collection = rag.store.createCollection('bench', name, embedder.id, embedder.dimensions)
    for (let i = 0; i < documents.length; i += 200) {
      const batch = documents.slice(i, i + 200).map((d) => ({ docId: d.id, content: d.content, metadata: {}, chunks: chunkBefore(d.content, options), vectors: [] as Float32Array[] }))
      for (const d of batch) d.vectors = await embedder.embed(d.chunks)
      rag.store.writeDocuments(collection, batch)
    }
    collections.set(name, collection)
  }
  return { rag, collections }
}

/** Pools and rare-term share the candidates are gathered with: the largest any setting of the fit uses. */
export const WIDEST = { vectorPool: 160, keywordPool: 160, rareShare: 0.2 }

export async function prepare(embedder: Embedder, now: Awaited<ReturnType<typeof ingestNow>>, queries: LabelledQuery[]): Promise<Prepared[]> {
  const out: Prepared[] = []
  for (const query of queries) {
    const collection = now.collections.get(query.corpus)!
    // As retrieve asks it: without the words that only make it a question (questionFocus).
    const asked = questionFocus(query.query)
    // The vector search would use: the query's, leaned towards its synonyms' (RagService.queryVector).
    const synonyms = await now.rag.expansion(collection, asked)
    const vector = await now.rag.queryVector(embedder, asked, synonyms)
    const { candidates, terms, chunks } = await now.rag.candidates(collection, vector, asked, WIDEST, synonyms)
    out.push({ query, candidates, terms, docs: new Map([...chunks].map(([id, chunk]) => [id, chunk.docId])) })
  }
  return out
}

/** Documents of the first ten results of a prepared query under `params` (pools as retrieve takes them for 10 results). */
export function top10(prepared: Prepared, params: RankingParams): { chunkId: number; doc: string; score: number }[] {
  // The candidates retrieve would have taken with these pools, from the widest it was gathered with.
  const { vectorPool, keywordPool } = candidatePools(10, params)
  const taken = prepared.candidates.filter((c) => c.vectorRank < vectorPool || c.keywordRank < keywordPool)
  return rankCandidates(taken, prepared.terms, params)
    .slice(0, 10)
    .map((hit) => ({ chunkId: hit.chunkId, doc: prepared.docs.get(hit.chunkId)!, score: hit.score }))
}

export interface Metrics {
  queries: number
  recall: number
  mrr: number
  top1: number
}

/** Recall@10 (an expected document among the first ten results), MRR@10 and top-1 of ranked document lists. */
export function metrics(rows: { expected: string[]; docs: string[] }[]): Metrics {
  let recall = 0
  let mrr = 0
  let top1 = 0
  for (const row of rows) {
    const at = row.docs.slice(0, 10).findIndex((doc) => row.expected.includes(doc))
    if (at >= 0) {
      recall++
      mrr += 1 / (at + 1)
    }
    if (at === 0) top1++
  }
  const n = rows.length || 1
  return { queries: rows.length, recall: recall / n, mrr: mrr / n, top1: top1 / n }
}

/** Metrics of the baseline (chunker and scoring of before) on `queries`. */
export async function evaluateBefore(embedder: Embedder, before: Awaited<ReturnType<typeof ingestBefore>>, queries: LabelledQuery[]) {
  const rows: { query: LabelledQuery; docs: string[] }[] = []
  for (const query of queries) {
    const [vector] = await embedder.embed([query.query])
    rows.push({ query, docs: retrieveBefore(before.rag.store, before.collections.get(query.corpus)!, vector!, query.query, 10) })
  }
  return rows
}

/** Groups of the labelled set the figures are given for. */
export const GROUPS: { name: string; of: (q: LabelledQuery) => boolean }[] = [
  { name: 'all', of: () => true },
  ...set.packages.map((p) => ({ name: p.name, of: (q: LabelledQuery) => q.corpus === p.name })),
  { name: 'intranet (keywords)', of: (q: LabelledQuery) => q.corpus === 'intranet' && q.kind === 'question' },
  { name: 'intranet (paraphrases)', of: (q: LabelledQuery) => q.kind === 'paraphrase' },
  { name: 'knowledge base', of: (q: LabelledQuery) => q.corpus === 'kb' },
  { name: 'identifiers (whole)', of: (q: LabelledQuery) => q.kind === 'identifier' },
  { name: 'identifiers (parts)', of: (q: LabelledQuery) => q.kind === 'part' },
]
