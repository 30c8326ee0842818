// The text work built-in agents do themselves, whatever the model: splitting a task into steps,
// picking the sentences that matter, checking which parts of a task a text covers.
import { keyTerms, sentences } from '../../ml/text'

/** Words that start a new step when they open a clause: "…, then compare", "finally write…". */
const STEP_BREAK = /\s*(?:;|,?\s+(?:and then|then|after that|afterwards|finally|next|lastly)\s+|\n+)\s*/i
const ENUMERATION = /(?:^|\n)\s*(?:\d{1,2}[.)]|[-*•])\s+/

/** Which agent suits a step, from the verbs it uses. */
const STEP_OWNERS: [RegExp, string][] = [
  [/\b(find|search|research|look(?:\s+up)?|gather|collect|source|investigate|discover|identify)\w*/i, 'researcher'],
  [/\b(calculat|comput|compar|analy[sz]|measur|estimat|count|evaluat|quantif|assess)\w*/i, 'analyst'],
  [/\b(review|check|verif|critic|proofread|validat|test)\w*/i, 'critic'],
  [/\b(summar|condens|shorten|recap|tl;?dr)\w*/i, 'summarizer'],
  [/\b(plan|schedul|organi[sz]|outline|break)\w*/i, 'planner'],
  [/\b(write|draft|compose|explain|describe|report|document|present|prepare|list)\w*/i, 'writer'],
]

export interface Step {
  text: string
  owner: string
  terms: string[]
}

function clean(step: string): string {
  const trimmed = step.replace(/^[\s,.;:-]+|[\s,.;:]+$/g, '').replace(/^(?:(?:and|also|please|then|finally|next|lastly|afterwards|after that)\s+)+/i, '')
  return trimmed ? trimmed[0]!.toUpperCase() + trimmed.slice(1) : ''
}

/**
 * Splits a task into steps: at sentence ends, enumerations ("1.", "-"), semicolons, line breaks
 * and sequencing words ("then", "finally"); a clause joined by "and" becomes its own step when
 * both sides have at least three words and the second opens with a verb another step would own.
 */
export function splitSteps(task: string): Step[] {
  const parts: string[] = []
  for (const block of task.split(ENUMERATION)) {
    for (const sentence of sentences(block.replace(/\n+/g, '; '))) {
      for (const clause of sentence.split(STEP_BREAK)) {
        const pieces = clause.split(/,?\s+and\s+/i)
        let current = pieces[0]!
        for (const next of pieces.slice(1)) {
          const owned = STEP_OWNERS.some(([pattern]) => new RegExp(`^${pattern.source}`, 'i').test(next.trim()))
          if (owned && current.split(/\s+/).length >= 3 && next.split(/\s+/).length >= 3) {
            parts.push(current)
            current = next
          } else current = `${current} and ${next}`
        }
        parts.push(current)
      }
    }
  }
  const steps = parts.map(clean).filter((text) => keyTerms(text).length > 0)
  return steps.map((text) => ({ text, owner: ownerOf(text), terms: [...new Set(keyTerms(text))] }))
}

/** The agent whose verb comes first in the step; the writer when none does. */
export function ownerOf(step: string): string {
  let owner = 'writer'
  let first = Number.POSITIVE_INFINITY
  for (const [pattern, agent] of STEP_OWNERS) {
    const at = step.search(pattern)
    if (at >= 0 && at < first) {
      first = at
      owner = agent
    }
  }
  return owner
}

/** What the researcher says when it found nothing. */
export const NOTHING_FOUND = 'No passage in your collections'
export const NO_COLLECTIONS = 'You have no collections to search'

/** Lines that report on the work rather than do it: never material, nor proof that a step is addressed. */
const META = new RegExp(`^(?:Gaps|Key points of the task|Calculation needed|Calculation failed|Tool failed)\\b|^\\(.*\\)$|^(?:${NOTHING_FOUND}|${NO_COLLECTIONS})`)

/**
 * The statements of an agent's text: line by line (lists stay apart), without list markers,
 * labels such as "Evidence (researcher):", headings that end in a colon, notes about the work
 * (gaps, placeholders, "nothing found"), or the sources list.
 */
export function textUnits(text: string): string[] {
  const body = text.replace(/(^|\n)Sources\b[^\n]*:[\s\S]*$/, '')
  const units: string[] = []
  for (const raw of body.split('\n')) {
    const item = raw.trim().replace(/^(?:[-*•]|\d{1,2}[.)])\s+/, '')
    if (META.test(item)) continue
    const line = item
      .replace(/^[A-Z][\w ]{0,30}(?:\s\([\w ]+\))?:\s+/, '')
    if (!line || /:$/.test(line)) continue
    for (const sentence of sentences(line)) {
      // "… minutes. [1] Next…": a citation belongs to the sentence before it.
      const cited = /^((?:\[\d+\]\s*)+)(.*)$/.exec(sentence)
      if (cited && units.length) {
        units[units.length - 1] += ` ${cited[1]!.trim()}`
        if (cited[2]!.trim()) units.push(cited[2]!.trim())
      } else units.push(sentence)
    }
  }
  return units
}

export interface Sentence {
  text: string
  origin: string
  order: number
}

/**
 * The `limit` sentences that best represent the texts: each scored by how many of the focus terms
 * (the task's) and of the texts' own frequent terms it carries, per word, so a long sentence does
 * not win by length; returned in their original order.
 */
export function keySentences(texts: { origin: string; text: string }[], focus: string, limit: number): Sentence[] {
  const all: Sentence[] = []
  const seen = new Set<string>()
  for (const { origin, text } of texts) {
    for (const sentence of textUnits(text)) {
      // The same statement passed along by several agents counts once.
      const key = sentence.replace(/\s*\[\d+\]/g, '').toLowerCase()
      if (seen.has(key)) continue
      seen.add(key)
      all.push({ text: sentence, origin, order: all.length })
    }
  }
  if (all.length <= limit) return all
  const frequency = new Map<string, number>()
  for (const sentence of all) for (const term of new Set(keyTerms(sentence.text))) frequency.set(term, (frequency.get(term) ?? 0) + 1)
  const wanted = new Set(keyTerms(focus))
  const scored = all.map((sentence) => {
    const terms = keyTerms(sentence.text)
    if (!terms.length) return { sentence, score: 0 }
    let score = 0
    for (const term of new Set(terms)) score += (wanted.has(term) ? 2 : 0) + (frequency.get(term)! > 1 ? 1 : 0)
    return { sentence, score: score / Math.sqrt(terms.length) }
  })
  return scored
    .sort((a, b) => b.score - a.score || a.sentence.order - b.sentence.order)
    .slice(0, limit)
    .map((entry) => entry.sentence)
    .sort((a, b) => a.order - b.order)
}

/** Arithmetic expressions written in a text, e.g. "12 * (3 + 4)" or "15% of 240". */
export function arithmeticIn(text: string): string[] {
  const found = new Set<string>()
  for (const match of text.matchAll(/(\d+(?:\.\d+)?)\s*%\s*of\s*(\d+(?:\.\d+)?)/gi)) found.add(`${match[1]} / 100 * ${match[2]}`)
  const expression = /[(\d][\d\s.()]*(?:\s*[-+*/×÷^]\s*[(\d][\d\s.()]*)+/g
  for (const match of text.matchAll(expression)) {
    const candidate = match[0].replace(/×/g, '*').replace(/÷/g, '/').trim().replace(/[\s(]+$/, '')
    const open = (candidate.match(/\(/g) ?? []).length
    const close = (candidate.match(/\)/g) ?? []).length
    if (/[-+*/^]/.test(candidate) && /\d\s*[-+*/^]\s*[(\d]/.test(candidate) && open === close && !/^\d{4}-\d{2}-\d{2}/.test(candidate)) found.add(candidate)
  }
  return [...found].slice(0, 5)
}
