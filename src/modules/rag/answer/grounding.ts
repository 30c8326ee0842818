import { type Generator, promptBudget } from '../../../ml'
import { passageBlock, relevantPassages, title } from './answer'
import type { DocumentLibrary } from '../documents/library'
import type { RagService, SearchResult } from '../service'

/** A passage a grounded chat reply was given, as `metadata.sources` lists it. */
export interface GroundingSource {
  id: string
  title: string
  chunk: number
  score: number
  collection: string
  page?: number
}

/** What grounding adds to a chat exchange: the sources block for the prompt (null when nothing is relevant), and the sources. */
export interface Grounded {
  context: string | null
  sources: GroundingSource[]
}

/** Grounds chat replies in collections (implemented by the RAG module, used by chat). */
export interface Grounding {
  ground(userId: string, collections: string[], message: string, earlierQuestions: string[], generator: Generator): Promise<Grounded>
}

export const GROUNDING_INSTRUCTION =
  'Answer using only the numbered sources below. Cite the sources you use as [1], [2] right after the sentences they support. ' +
  'If the sources do not contain the answer, say so.'

/** Passages per reply, at most. */
const MAX_PASSAGES = 4

/**
 * A message that only makes sense with the turn before it: it opens with a connective ("and…",
 * "what about…") or is short and points back with a pronoun ("how do I disable it?").
 */
const CONNECTIVE = /^\s*(and|also|but|so|then|ok(ay)?|what about|how about|what if)\b/i
const POINTS_BACK = /\b(it|its|that|this|they|them|those|these|there|one|ones|he|she|him|her)\b/i
export function isFollowUp(message: string): boolean {
  return CONNECTIVE.test(message) || (message.trim().split(/\s+/).length <= 12 && POINTS_BACK.test(message))
}

/**
 * Grounds a chat message in the caller's collections: retrieves passages for the message (for a
 * follow-up, or when the message alone finds nothing, for the message together with the previous
 * question, so "and how do I disable it?" retrieves from what "it" was), keeps those above the
 * relevance floor, and numbers them for the prompt. An unknown collection (or another user's) is 404.
 */
export class CollectionGrounding implements Grounding {
  constructor(
    private readonly rag: RagService,
    private readonly library: DocumentLibrary,
  ) {}

  private async retrieve(userId: string, collections: string[], query: string): Promise<(SearchResult & { collection: string })[]> {
    const found: (SearchResult & { collection: string })[] = []
    for (const name of collections) {
      const { results } = await this.rag.search(userId, name, query, MAX_PASSAGES * 2, this.rag.relevanceFloor(userId, name))
      found.push(...this.library.withPages(userId, name, results).map((r) => ({ ...r, collection: name })))
    }
    return relevantPassages(query, found.sort((a, b) => b.score - a.score)).slice(0, MAX_PASSAGES)
  }

  async ground(userId: string, collections: string[], message: string, earlierQuestions: string[], generator: Generator): Promise<Grounded> {
    // Every collection is checked (404 when it is not the caller's) before anything is retrieved.
    for (const name of collections) this.rag.collection(userId, name)
    const previous = earlierQuestions.at(-1)
    let passages = previous && isFollowUp(message) ? [] : await this.retrieve(userId, collections, message)
    if (previous && passages.length === 0) passages = await this.retrieve(userId, collections, `${previous}\n${message}`)
    if (!passages.length) return { context: null, sources: [] }
    // Sources take at most half of what the model reads, so the conversation and the reply still fit.
    const budget = Math.floor(promptBudget(generator) / 2)
    let used = await generator.countTokens(GROUNDING_INSTRUCTION)
    const kept: typeof passages = []
    for (const passage of passages) {
      const cost = await generator.countTokens(passageBlock(passage.content))
      if (kept.length && used + cost > budget) break
      used += cost
      kept.push(passage)
    }
    const context = `${GROUNDING_INSTRUCTION}\nSources:\n${kept.map((p, i) => `[${i + 1}] ${passageBlock(p.content)}`).join('\n')}`
    return {
      context,
      sources: kept.map((p) => ({
        id: p.id,
        title: title(p),
        chunk: p.metadata.chunk as number,
        score: p.score,
        collection: p.collection,
        ...(typeof p.metadata.page === 'number' ? { page: p.metadata.page } : {}),
      })),
    }
  }
}
