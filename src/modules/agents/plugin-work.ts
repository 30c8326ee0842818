// Plugin tools used without a model: the researcher (and a writer that researches for itself)
// picks the enabled, read-only tools its agent may use that fit the task, fills their required
// parameters from the task's own words, calls them (a few, each with a time limit) and turns their
// results into material that names where it came from.
import { datesIn } from '../../ml/intent/entities'
import { keyTerms, sentences, words } from '../../ml/text'
import { validate } from '../plugins/json-schema'
import { arithmeticIn, ownerOf } from './text-work'
import { MAX_TOOL_CALLS } from './turn'
import type { AgentInput, AgentResult } from './types'
import type { ToolCallRecord, ToolDefinition } from './tools'

/** Tool calls one agent turn makes on its own: a few, within the model path's MAX_TOOL_CALLS. */
export const PLUGIN_CALLS = Math.min(3, MAX_TOOL_CALLS)
/** Time one call may take before it is given up (recorded as an error). */
export const PLUGIN_CALL_MS = 5000
/** Characters of one tool result kept as material. */
const RESULT_CHARS = 600

/** Steps the researcher gathers for: not those that review, condense or plan the work. */
const GATHERING_OWNERS = new Set(['researcher', 'writer', 'analyst'])

/** Recognises a sentence drawn from a plugin tool. */
export const PLUGIN_ATTRIBUTION = /\(from plugin [a-z0-9][a-z0-9-]*, tool [A-Za-z_][A-Za-z0-9_]*\)/

/** The attribution every sentence drawn from a tool carries. */
export function attribution(tool: Pick<ToolDefinition, 'plugin' | 'action'>): string {
  return `(from plugin ${tool.plugin}, tool ${tool.action})`
}

/** Parameter names that take a whole question, and names that take the thing looked up. */
const QUERY_NAMES = /^(?:q|query|question|search|search_?query|prompt|ask)$/i
const TERM_NAMES = /^(?:term|terms|word|keyword|keywords|topic|subject|name|title|entity|phrase|lookup|item|city|place|country|location)$/i
const EXPRESSION_NAMES = /^(?:expression|expr|formula|equation|calculation)$/i
const ZONE_NAMES = /^(?:timezone|time_?zone|tz|zone)$/i
const DATE_NAMES = /^(?:date|datetime|date_?time|time|when|day|from|to|start|end|since|until|begin|finish)$/i
/** Words that ask for the work rather than name its subject: never the term looked up. */
const ASKING = /^(?:find|search|look|lookup|up|tell|give|show|explain|describe|define|definition|mean|meaning|write|draft|list|get|need|want|know|please|also)$/i

/** What the step holds that a tool's parameters may take. */
interface StepFacts {
  text: string
  terms: Set<string>
  expressions: string[]
  dates: string[]
  zones: string[]
  numbers: number[]
  quoted: string[]
}

const ISO = /\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b/g

let cities: [RegExp, string][] | undefined
/** IANA zones by their city, as a pattern for the city's name ("Lisbon" → Europe/Lisbon, "New York" → America/New_York). */
function zoneCities(): [RegExp, string][] {
  if (cities) return cities
  cities = []
  const zones = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : []
  for (const zone of zones) {
    if (!/^(?:Africa|America|Asia|Atlantic|Australia|Europe|Indian|Pacific)\//.test(zone)) continue
    const city = zone.split('/').at(-1)!
    if (city.length >= 4) cities.push([new RegExp(`(?<![\\p{L}/])${city.replace(/_/g, '[ _]')}(?![\\p{L}])`, 'u'), zone])
  }
  return cities
}

/** IANA zones a text names, in order: written out ("Europe/Paris", "UTC") or by their city. */
export function zonesIn(text: string): string[] {
  const found: { at: number; zone: string }[] = []
  for (const match of text.matchAll(/\b(?:UTC|GMT|[A-Z][A-Za-z]+\/[A-Z][A-Za-z_]+(?:\/[A-Z][A-Za-z_]+)?)\b/g)) {
    try {
      found.push({ at: match.index, zone: new Intl.DateTimeFormat('en-US', { timeZone: match[0] }).resolvedOptions().timeZone })
    } catch {
      // not a zone this runtime knows
    }
  }
  for (const [city, zone] of zoneCities()) {
    const at = text.search(city)
    if (at >= 0) found.push({ at, zone })
  }
  return [...new Set(found.sort((a, b) => a.at - b.at).map((f) => f.zone))]
}

/** Passages a text quotes ("…", “…”, '…'), two words or more. */
const quotesIn = (text: string) =>
  [...text.matchAll(/"([^"]+)"|“([^”]+)”|(?<![\p{L}\p{N}])'([^']+)'(?![\p{L}\p{N}])/gu)].map((m) => (m[1] ?? m[2] ?? m[3])!.trim()).filter((q) => q.split(/\s+/).length >= 2)

/** What a step holds; a passage quoted in the task that the step's splitting cut (at a sentence end inside it) counts as the step's. */
function factsOf(text: string, task = text): StepFacts {
  const expressions = arithmeticIn(text)
  const dates = [...text.matchAll(ISO)].map((m) => m[0].replace(' ', 'T'))
  let rest = text.replace(ISO, ' ')
  for (const expression of expressions) rest = rest.replace(expression, ' ')
  const numbers = [...rest.matchAll(/(?<![\p{L}\p{N}.])-?\d+(?:\.\d+)?(?![\p{L}\p{N}])/gu)].map((m) => Number(m[0]))
  let quoted = quotesIn(text)
  if (!quoted.length) quoted = quotesIn(task).filter((quote) => text.includes(quote.slice(0, 24).replace(/[\s.!?]+$/, '').split(/(?<=[.!?])\s/)[0]!))
  return { text, terms: new Set(keyTerms(text)), expressions, dates, zones: zonesIn(text), numbers, quoted }
}

type Kind = 'expression' | 'zone' | 'date' | 'number' | 'query' | 'term' | 'text' | null

/** What a parameter takes, from its name, type and description. */
function kindOf(name: string, schema: Record<string, unknown>): Kind {
  const type = Array.isArray(schema.type) ? schema.type : [schema.type]
  const description = typeof schema.description === 'string' ? schema.description : ''
  if (type.includes('number') || type.includes('integer')) return 'number'
  if (!type.includes('string') || Array.isArray(schema.enum) || schema.const !== undefined) return null
  if (EXPRESSION_NAMES.test(name)) return 'expression'
  if (ZONE_NAMES.test(name) || /\bIANA\b|\btime ?zone\b/i.test(description)) return 'zone'
  if (DATE_NAMES.test(name) || /\bISO 8601\b|\bdate\b/i.test(description)) return 'date'
  if (QUERY_NAMES.test(name)) return 'query'
  if (TERM_NAMES.test(name)) return 'term'
  if (/^(?:text|input|content|body)$/i.test(name)) return 'text'
  return null
}

/** The words of the step its tool does not already say: what a lookup is about. */
function subjectOf(facts: StepFacts, toolTerms: Set<string>): string {
  const kept = (facts.text.match(/[\p{L}\p{N}][\p{L}\p{N}'’_-]*/gu) ?? []).filter((word) => {
    if (ASKING.test(word)) return false
    const terms = keyTerms(word)
    return terms.length > 0 && terms.every((term) => !toolTerms.has(term)) && !/^\d+$/.test(word)
  })
  return kept.join(' ')
}

export interface PlannedCall {
  tool: ToolDefinition
  args: Record<string, unknown>
  /** The step it serves. */
  step: string
  /** Task terms the tool's name and description share, plus what the task gave its parameters. */
  score: number
}

/** A tool's own vocabulary: its plugin, its action (split at _ and case changes) and descriptions. */
function toolTerms(tool: ToolDefinition): Set<string> {
  const action = tool.action.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/_/g, ' ')
  return new Set(keyTerms(`${tool.plugin.replace(/-/g, ' ')} ${action} ${tool.description}`))
}

/**
 * The call one tool would take for one step, or null: every required parameter filled from the
 * step (and the arguments valid against the schema), and the tool fitting the step — sharing a
 * term with it, or taking the arithmetic the step writes. A tool none of whose parameters the step
 * fills needs two shared terms (one with a place or zone it can take).
 */
function planCall(tool: ToolDefinition, facts: StepFacts, expression = 0): PlannedCall | null {
  const properties = (tool.parameters.properties ?? {}) as Record<string, Record<string, unknown>>
  const required = new Set(Array.isArray(tool.parameters.required) ? (tool.parameters.required as string[]) : [])
  const vocabulary = toolTerms(tool)
  const shared = [...facts.terms].filter((term) => vocabulary.has(term)).length
  const args: Record<string, unknown> = {}
  const used = { date: 0, zone: 0, number: 0 }
  let specific = 0
  let filled = 0
  const names = [...required, ...Object.keys(properties).filter((name) => !required.has(name))]
  for (const name of names) {
    const schema = properties[name] ?? {}
    const needed = required.has(name) && schema.default === undefined
    const kind = kindOf(name, schema)
    let value: unknown
    if (kind === 'expression') value = facts.expressions[expression]
    else if (kind === 'zone') value = facts.zones[used.zone++]
    else if (needed && kind === 'date') value = facts.dates[used.date++]
    else if (needed && kind === 'number') value = facts.numbers[used.number++]
    else if (needed && kind === 'query') value = facts.text
    else if (needed && kind === 'term') value = subjectOf(facts, vocabulary) || undefined
    else if (needed && kind === 'text') value = facts.quoted[0]
    if (value === undefined) {
      if (needed) return null
      continue
    }
    args[name] = value
    filled++
    if (kind === 'expression') specific++
  }
  if (!specific && shared === 0) return null
  if (!specific && !required.size && shared + filled < 2) return null
  if (!validate(tool.parameters, args, 'parameters').ok) return null
  return { tool, args, step: facts.text, score: shared + 2 * specific }
}

/** Whether `agent` may use the plugin behind `tool`. */
const allowedTo = (plugins: string[] | '*', tool: ToolDefinition) => plugins === '*' || plugins.includes(tool.plugin)

/**
 * The calls to make for the task's steps (the planner's, else the task's own split), best first,
 * at most PLUGIN_CALLS and never the same call twice: read-only tools of enabled plugins the agent
 * may use, except `knowledge` (the researcher searches the collections itself).
 */
export async function planPluginCalls(tools: ToolDefinition[], plugins: string[] | '*', steps: string[], task = steps.join(' ')): Promise<PlannedCall[]> {
  const usable = tools.filter((tool) => tool.readOnly === true && tool.plugin !== 'knowledge' && allowedTo(plugins, tool))
  if (!usable.length) return []
  const takesDates = (tool: ToolDefinition) => Object.entries((tool.parameters.properties ?? {}) as Record<string, Record<string, unknown>>).some(([name, schema]) => kindOf(name, schema) === 'date')
  const planned: (PlannedCall & { order: number })[] = []
  const seen = new Set<string>()
  for (const step of steps) {
    if (!GATHERING_OWNERS.has(ownerOf(step))) continue
    const facts = factsOf(step, task)
    // Dates in words ("March 3, 2025") are read (chrono, loaded on first use) only for a step a date-taking tool fits.
    if (!facts.dates.length && usable.some((tool) => takesDates(tool) && [...facts.terms].some((term) => toolTerms(tool).has(term)))) facts.dates = await datesIn(step)
    for (const tool of usable) {
      // A tool that takes an expression is called for each one the step writes.
      const variants = Object.keys((tool.parameters.properties ?? {}) as object).some((name) => EXPRESSION_NAMES.test(name)) ? Math.max(1, facts.expressions.length) : 1
      for (let variant = 0; variant < variants; variant++) {
        const call = planCall(tool, facts, variant)
        if (!call) continue
        const key = `${tool.name} ${JSON.stringify(call.args)}`
        if (seen.has(key)) continue
        seen.add(key)
        planned.push({ ...call, order: planned.length })
      }
    }
  }
  return planned
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .slice(0, PLUGIN_CALLS)
    .sort((a, b) => a.order - b.order)
}

/** A tool's result as prose: strings as they are, records as "field value, …", lists joined. */
export function renderResult(value: unknown, depth = 0): string {
  if (value === null || value === undefined) return ''
  if (typeof value === 'string') return value.replace(/\s+/g, ' ').trim()
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  if (depth > 2) return JSON.stringify(value) ?? ''
  if (Array.isArray(value)) return value.slice(0, 5).map((item) => renderResult(item, depth + 1)).filter(Boolean).join('; ')
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== null && v !== undefined)
  if (entries.length === 1) return renderResult(entries[0]![1], depth + 1)
  const main = entries.find(([key, v]) => /^(?:answer|definition|meaning|summary|text|result|value|content|description|output)$/i.test(key) && typeof v !== 'object')
  if (main) return renderResult(main[1], depth + 1)
  return entries
    .slice(0, 8)
    .map(([key, v]) => `${key} ${typeof v === 'object' ? renderResult(v, depth + 1) : String(v)}`)
    .join(', ')
}

const cut = (text: string, chars: number) => (text.length > chars ? `${text.slice(0, chars).replace(/\s+\S*$/, '')}…` : text)

/**
 * Material from one result: its sentences (three at most), each ending with the attribution; none
 * when the result says nothing the task did not already say (a tool that echoes its input).
 */
function materialOf(call: PlannedCall, result: unknown, task: string): string[] {
  let text = cut(renderResult(result), RESULT_CHARS)
  if (!text) return []
  const known = new Set(words(task))
  if (words(text).every((word) => known.has(word))) return []
  const expression = Object.entries(call.args).find(([name]) => EXPRESSION_NAMES.test(name))?.[1]
  if (typeof expression === 'string' && typeof result === 'object' && result && 'value' in result) text = `${expression} = ${text}`
  const tag = attribution(call.tool)
  return sentences(text)
    .slice(0, 3)
    .map((sentence) => `${sentence.replace(/[\s.!?…]+$/, '')} ${tag}.`)
}

export interface PluginMaterial {
  /** One line per sentence drawn from a tool, each attributed. */
  lines: string[]
  /** Lines saying which calls failed (notes, never material). */
  failures: string[]
  toolCalls: ToolCallRecord[]
}

/**
 * Makes the planned calls for an agent that works without a model: concurrently, each with the
 * caller's identity, the task's abort signal and its own time limit, every call recorded in
 * `toolCalls` as the model path records them (`result` or `error`). A failing call is recorded and
 * the work goes on; a cancelled task stops here.
 */
export async function gatherFromPlugins(input: AgentInput, plugins: string[] | '*', steps: string[], limitMs = PLUGIN_CALL_MS): Promise<PluginMaterial> {
  const planned = await planPluginCalls(input.tools.list(), plugins, steps, input.task)
  if (input.signal.aborted) throw input.signal.reason
  const outcomes = await Promise.all(
    planned.map(async (call) => {
      const limit = new AbortController()
      const timer = setTimeout(() => limit.abort(new Error(`The call took longer than ${limitMs / 1000} s`)), limitMs)
      const signal = AbortSignal.any([input.signal, limit.signal])
      // A tool that ignores the signal is left behind when the time is up or the task is cancelled.
      let onAbort = () => {}
      const stopped = new Promise<never>((_, reject) => {
        onAbort = () => reject(signal.reason)
        signal.addEventListener('abort', onAbort, { once: true })
      })
      try {
        return { call, result: await Promise.race([input.tools.call(call.tool.name, call.args, input.caller, signal), stopped]) }
      } catch (error) {
        const reason = limit.signal.aborted && !input.signal.aborted ? limit.signal.reason : error
        return { call, error: (reason as Error)?.message ?? String(reason) }
      } finally {
        clearTimeout(timer)
        signal.removeEventListener('abort', onAbort)
      }
    }),
  )
  if (input.signal.aborted) throw input.signal.reason
  const material: PluginMaterial = { lines: [], failures: [], toolCalls: [] }
  for (const outcome of outcomes) {
    const { tool, args } = outcome.call
    if ('error' in outcome) {
      material.toolCalls.push({ tool: tool.name, arguments: args, error: outcome.error })
      material.failures.push(`Tool failed: plugin ${tool.plugin}, tool ${tool.action}: ${outcome.error}`)
      continue
    }
    material.toolCalls.push({ tool: tool.name, arguments: args, result: outcome.result })
    material.lines.push(...materialOf(outcome.call, outcome.result, `${input.task}\n${outcome.call.step}`))
  }
  return material
}

/** The draft's section of plugin material (and failures), or '' when there is none. */
export function pluginSection(material: PluginMaterial): string {
  const lines = [...material.lines.map((line) => `- ${line}`), ...material.failures.map((line) => `- ${line}`)]
  return lines.length ? `From your plugins:\n${lines.join('\n')}` : ''
}

/** The successful calls of a result whose material its response quotes: evidence from plugins. */
export function quotedToolCalls(result: Pick<AgentResult, 'response' | 'toolCalls'>): ToolCallRecord[] {
  return result.toolCalls.filter((call) => {
    if (call.error !== undefined) return false
    const at = call.tool.indexOf('__')
    return at > 0 && result.response.includes(attribution({ plugin: call.tool.slice(0, at), action: call.tool.slice(at + 2) }))
  })
}
