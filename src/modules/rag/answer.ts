import type { ChatMessage } from '../../ml'
import type { RagService, SearchResult } from './service'

/** Passages scoring below this are not relevant enough to answer from. */
export const RELEVANCE_FLOOR = 0.2
/** Passages far weaker than the best one are left out too. */
export const RELATIVE_FLOOR = 0.6

const INSTRUCTION =
  'Answer the question using only the numbered sources below. Cite the sources you use as [1], [2] ' +
  'right after the sentences they support. If the sources do not contain the answer, say so.'

function title(result: SearchResult): string {
  return typeof result.metadata.title === 'string' && result.metadata.title ? result.metadata.title : result.id
}

export function answerPrompt(question: string, passages: SearchResult[]): ChatMessage[] {
  const numbered = passages.map((p, i) => `[${i + 1}] ${p.content.replace(/\s*\n\s*/g, ' ')}`).join('\n')
  return [
    { role: 'system', content: INSTRUCTION },
    { role: 'user', content: `Sources:\n${numbered}\n\nQuestion: ${question}` },
  ]
}

/**
 * Retrieves up to `maxContext` passages above the relevance floor, asks the generator for an
 * answer citing them as [n] (sources[n-1] is passage n), and adds the citations itself when a
 * model left them out, so every answer points at real passages.
 */
export async function answerQuestion(
  rag: RagService,
  userId: string,
  input: { question: string; collection: string; maxContext: number; includeContext: boolean },
) {
  const found = await rag.search(userId, input.collection, input.question, input.maxContext, RELEVANCE_FLOOR)
  const best = found.results[0]?.score ?? 0
  const passages = found.results.filter((p) => p.score >= best * RELATIVE_FLOOR)
  let answer: string
  if (passages.length === 0) {
    answer = `I could not find anything relevant to that question in the collection "${input.collection}".`
  } else {
    const generator = await rag.generator()
    const result = await generator.generate(answerPrompt(input.question, passages), { maxTokens: 512 })
    answer = result.text.trim()
    const cited = new Set([...answer.matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1])).filter((n) => n >= 1 && n <= passages.length))
    if (cited.size === 0) answer += `\n\nSources: ${passages.map((p, i) => `[${i + 1}] ${title(p)}`).join('; ')}`
  }
  return {
    answer,
    sources: passages.map((p) => ({ id: p.id, title: title(p), relevanceScore: p.score })),
    ...(input.includeContext ? { context: passages.map((p) => ({ content: p.content, source: p.id, confidence: p.score })) } : {}),
  }
}
