// The checks behind the critic's verdict and the task's confidence: is every step of the task
// addressed by the work, are its citations real, did the research find anything.
import { keyTerms } from '../../ml/text'
import { quotedToolCalls } from './plugin-work'
import { ownerOf, splitSteps, textUnits } from './text-work'
import type { AgentInput, AgentResult } from './types'

/** The steps of the task: the planner's, when one ran, else the task's own split. */
export function stepsOf(input: Pick<AgentInput, 'task' | 'earlier'>): string[] {
  const planned = [...input.earlier].reverse().find((r) => r.steps?.length)?.steps
  return planned ?? splitSteps(input.task).map((s) => s.text)
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

export interface Review {
  objections: string[]
  /** Steps nothing in the work addresses. */
  unaddressed: string[]
  /** Share of steps addressed, 0..1. */
  addressed: number
}

/**
 * Reviews `work` against the steps of its task. A step counts as addressed when a sentence of the work (with
 * the step's own wording taken out, so restating it is not answering it) carries at least half of
 * the step's key terms; a step asking for the write-up itself ("write a summary", "draft…") when a
 * writer or summarizer produced text.
 */
export function reviewWork(work: AgentResult[], steps: string[]): Review {
  const objections: string[] = []
  for (const result of work) if (!result.response.trim()) objections.push(`The ${result.agent} produced no output.`)
  const researched = work.filter((r) => r.agent === 'researcher')
  if (researched.length && researched.every((r) => !r.sources?.length && !quotedToolCalls(r).length)) {
    objections.push('The research found no passage on this task in your collections, so nothing in the work is backed by a source.')
  }
  const sourceCount = Math.max(0, ...researched.map((r) => r.sources?.length ?? 0))
  for (const result of work) {
    if (result.agent === 'researcher') continue
    const invented = [...new Set([...result.response.matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1])))].filter((n) => n < 1 || n > sourceCount)
    if (invented.length) objections.push(`The ${result.agent} cites ${invented.map((n) => `[${n}]`).join(', ')}, which ${invented.length === 1 ? 'is' : 'are'} not among the ${sourceCount} sources found.`)
  }
  let text = work.map((r) => r.response).join('\n')
  for (const step of [...steps].sort((a, b) => b.length - a.length)) text = text.replace(new RegExp(escape(step), 'gi'), ' ')
  const termSets = textUnits(text).map((s) => new Set(keyTerms(s)))
  // A step that asks for the write-up itself is addressed by a writer or summarizer that wrote something.
  const wroteUp = work.some((r) => (r.agent === 'writer' || r.agent === 'summarizer') && textUnits(r.response).length > 0)
  const unaddressed = steps.filter((step) => {
    if (wroteUp && ['writer', 'summarizer'].includes(ownerOf(step)) && /^(write|draft|compose|summar|condens|recap)/i.test(step)) return false
    const terms = [...new Set(keyTerms(step))]
    const needed = Math.max(1, Math.ceil(terms.length / 2))
    return !termSets.some((set) => terms.filter((t) => set.has(t)).length >= needed)
  })
  for (const step of unaddressed) objections.push(`Nothing in the work addresses the step "${step}".`)
  return { objections, unaddressed, addressed: steps.length ? (steps.length - unaddressed.length) / steps.length : 1 }
}

/** Words of a text as a set of key terms (for overlap counts). */
export function termSet(text: string): Set<string> {
  return new Set(keyTerms(text))
}
