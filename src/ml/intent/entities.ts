import { wordsToDigits } from './numbers'

/**
 * chrono-node and compromise, loaded on the first voice command rather than at start: together
 * they take about 50 MB of memory, which a server nobody speaks to should not carry.
 */
let parsers: Promise<{ chrono: typeof import('chrono-node'); nlp: typeof import('compromise').default }> | undefined
const loadParsers = () => (parsers ??= Promise.all([import('chrono-node'), import('compromise')]).then(([chrono, compromise]) => ({ chrono, nlp: compromise.default })))

export interface KnownNames {
  collections: string[]
  plugins: string[]
  agents: string[]
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
/** A name as it may be said or typed: `team-notes` matches "team notes", "team_notes", "Team-Notes". */
const namePattern = (name: string) => new RegExp(`(^|[^\\p{L}\\p{N}])${name.split(/[-_\s]+/).map(escape).join('[-_\\s]+')}(?=$|[^\\p{L}\\p{N}])`, 'iu')

/** The names in `names` that `text` mentions, longest first (so `team-notes` wins over `notes`). */
export function mentioned(text: string, names: string[]): string[] {
  return [...new Set(names)].sort((a, b) => b.length - a.length).filter((name) => namePattern(name).test(text))
}

function isoDate(date: Date, timeZone?: string): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(date)
}

/**
 * Entities as `type:value`: dates (`date:YYYY-MM-DD`, from chrono), numbers (`number:17`, spoken or
 * written), `collection:`, `plugin:` and `agent:` names that exist for this user, and people, places
 * and organizations compromise finds.
 */
export async function extractEntities(text: string, names: KnownNames, options: { now?: Date; timeZone?: string } = {}): Promise<string[]> {
  const { chrono, nlp } = await loadParsers()
  const entities: string[] = []
  const now = options.now ?? new Date()
  for (const result of chrono.parse(text, now, { forwardDate: true })) entities.push(`date:${isoDate(result.start.date(), options.timeZone)}`)
  // Numbers that are part of a date ("March 3") are the date's, not numbers of their own.
  const withoutDates = chrono.parse(text, now).reduce((rest, result) => rest.replace(result.text, ' '), text)
  for (const match of wordsToDigits(withoutDates.replace(/[,]/g, ' ')).matchAll(/(?<![\p{L}\d.])-?\d+(?:\.\d+)?(?![\p{L}\d])/gu)) {
    entities.push(`number:${Number(match[0])}`)
  }
  for (const name of mentioned(text, names.collections)) entities.push(`collection:${name}`)
  for (const name of mentioned(text, names.plugins)) entities.push(`plugin:${name}`)
  for (const name of mentioned(text, names.agents)) entities.push(`agent:${name}`)
  const doc = nlp(text)
  for (const person of doc.people().out('array') as string[]) entities.push(`person:${person.replace(/[.,!?]+$/, '')}`)
  for (const place of doc.places().out('array') as string[]) entities.push(`place:${place.replace(/[.,!?]+$/, '')}`)
  for (const organization of doc.organizations().out('array') as string[]) entities.push(`organization:${organization.replace(/[.,!?]+$/, '')}`)
  return [...new Set(entities)]
}

let chronoOnly: Promise<typeof import('chrono-node')> | undefined

/**
 * The dates and times a text writes, in order, as ISO 8601 as written: `YYYY-MM-DD` for a date
 * alone, `YYYY-MM-DDTHH:MM:SS` (no offset: the wall-clock time written) when it gives a time.
 * "March 3, 2025", "3/4/2025 at 9:30", "2025-03-03", "next Friday" (relative to `now`).
 * Loads chrono alone, on first use.
 */
export async function datesIn(text: string, now = new Date()): Promise<string[]> {
  const chrono = await (chronoOnly ??= import('chrono-node'))
  const pad = (n: number, width = 2) => String(n).padStart(width, '0')
  const found: string[] = []
  for (const result of chrono.parse(text, now, { forwardDate: true })) {
    for (const moment of [result.start, result.end]) {
      if (!moment) continue
      const date = `${pad(moment.get('year') ?? now.getUTCFullYear(), 4)}-${pad(moment.get('month') ?? 1)}-${pad(moment.get('day') ?? 1)}`
      found.push(moment.isCertain('hour') ? `${date}T${pad(moment.get('hour') ?? 0)}:${pad(moment.get('minute') ?? 0)}:${pad(moment.get('second') ?? 0)}` : date)
    }
  }
  return found
}

const OPERATORS: [RegExp, string][] = [
  [/\bmultiplied by\b|\btimes\b|\bx\b|×/g, '*'],
  [/\bdivided by\b|\bover\b|÷/g, '/'],
  [/\bplus\b/g, '+'],
  [/\bminus\b/g, '-'],
  [/\bto the power of\b|\bpower\b/g, '^'],
  [/\bsquared\b/g, '^2'],
  [/\bcubed\b/g, '^3'],
  [/\bmod(?:ulo)?\b/g, '%'],
]

/**
 * The arithmetic a spoken or typed request asks for, as an expression for the calculator plugin:
 * "what is seventeen plus twenty five" → `17 + 25`, "divide 100 by 4" → `100 / 4`,
 * "15 percent of 80" → `15 / 100 * 80`. Null when there is none.
 */
export function arithmeticExpression(text: string): string | null {
  let t = ` ${wordsToDigits(text.toLowerCase().replace(/[?!,]/g, ' '))} `
  t = t
    .replace(/(\d)\s*%\s*of\b/g, '$1 percent of')
    .replace(/\bsquare root of (\d+(?:\.\d+)?)/g, 'sqrt($1)')
    .replace(/(\d+(?:\.\d+)?) percent of (\d+(?:\.\d+)?)/g, '$1 / 100 * $2')
    .replace(/\b(?:add|sum)\s+(\d+(?:\.\d+)?)\s+(?:and|to)\s+(\d+(?:\.\d+)?)((?:\s+and\s+\d+(?:\.\d+)?)*)/g, (_m, a, b, rest: string) => [a, b, ...rest.split(/\s+and\s+/).filter(Boolean)].join(' + '))
    .replace(/\bsubtract\s+(\d+(?:\.\d+)?)\s+from\s+(\d+(?:\.\d+)?)/g, '$2 - $1')
    .replace(/\bmultiply\s+(\d+(?:\.\d+)?)\s+(?:by|and|with)\s+(\d+(?:\.\d+)?)/g, '$1 * $2')
    .replace(/\bdivide\s+(\d+(?:\.\d+)?)\s+by\s+(\d+(?:\.\d+)?)/g, '$1 / $2')
  for (const [pattern, symbol] of OPERATORS) t = t.replace(pattern, ` ${symbol} `)
  // The longest run of numbers, operators and parentheses that holds an operator.
  const runs = t.match(/(?:sqrt\(\s*\d+(?:\.\d+)?\s*\)|\d+(?:\.\d+)?|[-+*/^%()]|\s)+/g) ?? []
  const candidates = runs.map((run) => run.replace(/\s+/g, ' ').trim()).filter((run) => /\d/.test(run) && /[-+*/^%]|sqrt/.test(run) && !/^[-+*/^%]|[-+*/%]$/.test(run.replace(/\^\s*$/, '')))
  candidates.sort((a, b) => b.length - a.length)
  return candidates[0] ?? null
}

const LEADING = /^(?:please\s+)?(?:search|find|look\s+(?:up|for|through|in)|show me|query|list)\b/
/** What a search is for: the words after "for", "about", "on"… without the collection and filler. */
export function searchTopic(text: string, collections: string[]): string {
  let t = text.toLowerCase().replace(/[?!.,]/g, ' ')
  for (const name of collections) t = t.replace(namePattern(name), ' ')
  t = t.replace(/\b(?:in|from|of)\s+(?:my|the)\s+(?:documents|docs|notes|files|collection|knowledge base|handbook)\b/g, ' ')
  const after = /\b(?:for|about|on|regarding|mentioning|mention|say about|says about|tell me about)\s+(.+)$/.exec(t)
  const topic = (after ? after[1]! : t.replace(LEADING, ' '))
    .replace(/\b(?:my|the|documents|docs|notes|files|collection|anything|everything|in|what|do|does|say|according to)\b/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
  return topic || text.trim()
}
