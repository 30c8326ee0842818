import { AppError } from '../../core/errors'
import type { ModelUsage } from '../../core/usage'
import { type ChatMessage, type Generator, promptBudget, replyBudget } from '../../ml'
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
 * The passages that fit the model's context beside the instruction, the question and the reply,
 * best first. When not even the best one fits whole, it is cut to what does.
 */
export async function fitPassages(generator: Generator, question: string, passages: SearchResult[]): Promise<SearchResult[]> {
  const budget = promptBudget(generator)
  const [system, user] = answerPrompt(question, [])
  let used = (await generator.countTokens(system!.content)) + (await generator.countTokens(user!.content))
  const fitted: SearchResult[] = []
  for (const [i, passage] of passages.entries()) {
    const cost = (await generator.countTokens(`[${i + 1}] ${passage.content}`)) + 1
    if (used + cost > budget) {
      if (fitted.length === 0 && budget - used > 16) {
        // Cut the best passage down to the room left (token counts follow length roughly; recheck).
        let content = passage.content.slice(0, Math.floor((passage.content.length * (budget - used)) / cost))
        while (content && used + (await generator.countTokens(`[1] ${content}`)) + 1 > budget) content = content.slice(0, Math.floor(content.length * 0.9))
        if (content) fitted.push({ ...passage, content })
      }
      break
    }
    used += cost
    fitted.push(passage)
  }
  return fitted
}

/**
 * Retrieves up to `maxContext` passages above the relevance floor, keeps those that fit the
 * model's context, asks the generator for an answer citing them as [n] (sources[n-1] is passage
 * n), and adds the citations itself when a model left them out, so every answer points at real passages.
 */
export async function answerQuestion(
  rag: RagService,
  userId: string,
  input: { question: string; collection: string; maxContext: number; includeContext: boolean },
  onUsage?: (usage: ModelUsage) => void,
) {
  const found = await rag.search(userId, input.collection, input.question, input.maxContext, RELEVANCE_FLOOR)
  const best = found.results[0]?.score ?? 0
  const relevant = found.results.filter((p) => p.score >= best * RELATIVE_FLOOR)
  const generator = relevant.length ? await rag.generator() : null
  // Only what the model is given is cited: sources[n-1] is the passage it saw as [n].
  let passages = generator ? await fitPassages(generator, input.question, relevant) : []
  if (generator && passages.length === 0) {
    throw new AppError('VALIDATION_ERROR', `body.question: too long for ${generator.id} (it reads ${generator.contextLength} tokens): shorten it`)
  }
  let answer: string
  if (!generator) {
    answer = `I could not find anything relevant to that question in the collection "${input.collection}".`
  } else {
    const result = await generator.generate(answerPrompt(input.question, passages), { maxTokens: replyBudget(generator) })
    onUsage?.({ model: generator.id, promptTokens: result.promptTokens, completionTokens: result.completionTokens })
    if (result.noAnswer) {
      // The engine found the passages do not answer the question: nothing relevant, say so.
      answer = result.text.trim()
      passages = []
    } else {
      // Every [n] left in the answer points at a source: numbers the model made up (or copied from
      // a passage's own footnotes) are removed.
      answer = result.text.trim().replace(/\s?\[(\d+)\]/g, (marker, n: string) => (Number(n) >= 1 && Number(n) <= passages.length ? marker : ''))
      const cited = new Set([...answer.matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1])))
      if (cited.size === 0) answer += `\n\nSources: ${passages.map((p, i) => `[${i + 1}] ${title(p)}`).join('; ')}`
    }
  }
  return {
    answer,
    sources: passages.map((p) => ({ id: p.id, title: title(p), relevanceScore: p.score })),
    ...(input.includeContext ? { context: passages.map((p) => ({ content: p.content, source: p.id, confidence: p.score })) } : {}),
  }
}
