import { AppError } from '../../../core/errors'
import { type Generator, promptBudget } from '../../../ml'
import { followUpQuery } from '../../../ml/follow-up'
import { answerPassages, passageBlock, relevantPassages, title } from './answer'
import type { DocumentLibrary } from '../documents/library'
import type { RagService, SearchResult } from '../service'
import type { RagStore } from '../store'

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
  /** With `optional` collections: how many of them the caller cannot read (left out). */
  skipped?: number
}

/** Collections that are left out, rather than a 404, when the caller cannot read them (an assistant's). */
export interface GroundingOptions {
  optional?: ReadonlySet<string>
}

/** Grounds chat replies in collections (implemented by the RAG module, used by chat). */
export interface Grounding {
  ground(userId: string, collections: string[], message: string, earlierQuestions: string[], generator: Generator, options?: GroundingOptions): Promise<Grounded>
}

export const GROUNDING_INSTRUCTION =
  'Answer using only the numbered sources below. Cite the sources you use as [1], [2] right after the sentences they support. ' +
  'If the sources do not contain the answer, say so.'

/** Passages per reply, at most. */
const MAX_PASSAGES = 4

export { isFollowUp } from '../../../ml/follow-up'

/**
 * Grounds a chat message in the caller's collections: retrieves passages for the message (for a
 * follow-up, with the content words of the earlier questions it leans on, so "and how do I disable
 * it?" retrieves from what "it" was; when the message alone finds nothing, with the previous question), keeps those above the
 * relevance floor, and numbers them for the prompt. An unknown collection (or another user's) is 404.
 */
export class CollectionGrounding implements Grounding {
  constructor(
    private readonly rag: RagService<RagStore>,
    private readonly library: DocumentLibrary,
  ) {}

  private async retrieve(userId: string, collections: string[], query: string): Promise<(SearchResult & { collection: string })[]> {
    const found: (SearchResult & { collection: string })[] = []
    let answering = 0
    for (const name of collections) {
      // A collection whose passages leave the question's telling words uncovered does not answer it.
      const covered = await answerPassages(this.rag, userId, name, query, MAX_PASSAGES * 2)
      if (covered.length) answering++
      found.push(...(await this.library.withPages(userId, name, covered)).map((r) => ({ ...r, collection: name })))
    }
    // One collection answers: its passages as answerPassages ordered them; several: the best of all.
    if (answering <= 1) return found.slice(0, MAX_PASSAGES)
    return relevantPassages(query, found.sort((a, b) => b.score - a.score)).slice(0, MAX_PASSAGES)
  }

  async ground(userId: string, collections: string[], message: string, earlierQuestions: string[], generator: Generator, options: GroundingOptions = {}): Promise<Grounded> {
    // Every collection is checked (404 when it is not the caller's) before anything is retrieved;
    // an optional one the caller cannot read is left out and counted, never named.
    let skipped = 0
    const readable: string[] = []
    for (const name of collections) {
      if (!options.optional?.has(name)) {
        await this.rag.collection(userId, name)
        readable.push(name)
        continue
      }
      try {
        const { collection, access } = await this.rag.resolve(userId, name)
        // Named as its owner names it when that is the caller (an id otherwise: no extra look-up).
        readable.push(access === 'owner' ? collection.name : name)
      } catch (error) {
        if (!(error instanceof AppError && (error.code === 'NOT_FOUND' || error.code === 'FORBIDDEN'))) throw error
        skipped++
      }
    }
    if (options.optional) return { ...(await this.groundReadable(userId, readable, message, earlierQuestions, generator)), skipped }
    return this.groundReadable(userId, readable, message, earlierQuestions, generator)
  }

  private async groundReadable(userId: string, collections: string[], message: string, earlierQuestions: string[], generator: Generator): Promise<Grounded> {
    if (!collections.length) return { context: null, sources: [] }
    // A follow-up is searched with the words of the questions before it; a message that finds
    // nothing on its own, with the previous question too.
    const query = followUpQuery(message, earlierQuestions)
    const previous = earlierQuestions.at(-1)
    let passages = await this.retrieve(userId, collections, query)
    if (previous && query === message && passages.length === 0) passages = await this.retrieve(userId, collections, `${previous}\n${message}`)
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
