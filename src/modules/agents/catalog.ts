// The built-in agents: a role, instructions for a model's turn, the tools each may call, and the
// work each does itself on its inputs (retrieval, planning, checks), which is its whole answer
// when only the built-in extractive engine is installed.
import { replyBudget } from '../../ml'
import { supportsToolCalls } from '../../ml/tool-calls'
import { MEANING_ONLY_FLOOR, RELATIVE_FLOOR, answerPrompt, fitPassages } from '../rag/answer/answer'
import { keyTerms } from '../../ml/text'
import { rankingParams } from '../rag/ranking/params'
import { collectionRef, type SearchResult } from '../rag/service'
import { NO_COLLECTIONS, NOTHING_FOUND, arithmeticIn, keySentences, ownerOf, splitSteps, textUnits } from './text-work'
import { reviewWork, stepsOf, termSet } from './review'
import type { AgentDefinition, AgentInput, AgentWork, Source } from './types'
import type { ToolCallRecord } from './tools'
import { gatherFromPlugins, pluginSection } from './plugin-work'

const SOURCES_PER_TASK = 5
/**
 * A passage below /rag/answer's relevance floor still counts as evidence when it shares a key term
 * with the task: in a small collection BM25 stays low, and a task's many small words dilute the
 * vector, so "What should I do if I lose my laptop?" scores 0.13 against "Report lost laptops…".
 */
const KEYWORD_FLOOR = 0.1
/** Words of a task that say what to make of the material and how ("write a short plan", "summarise", "compare"), not what it is about. */
const TASK_WORDS = new Set(
  keyTerms(
    'write draft create make prepare compose produce give provide summarise summarize summary compare comparison explain describe description ' +
      'outline list plan report overview note notes email letter memo brief short long quick detailed concise simple analysis analyse analyze ' +
      'review research find search look collect gather step steps',
  ),
)

function title(result: SearchResult): string {
  return typeof result.metadata.title === 'string' && result.metadata.title ? result.metadata.title : result.id
}

/** The plugins each agent may call (AgentDefinition.plugins), named once for the work that uses them. */
const RESEARCHER_PLUGINS = '*'
const WRITER_PLUGINS = ['text']

/**
 * The researcher's search: every allowed collection, best passages across them; and, when no model
 * calls tools itself, the read-only plugin tools that fit the task (plugin-work.ts), whose results
 * join the material with their attribution.
 */
export async function research(input: AgentInput, plugins: string[] | '*' = RESEARCHER_PLUGINS): Promise<AgentWork> {
  const { rag, caller } = input
  const fromPlugins =
    input.builtin || !supportsToolCalls(input.generator) ? await gatherFromPlugins(input, plugins, stepsOf(input)) : { lines: [], failures: [], toolCalls: [] }
  const pluginText = pluginSection(fromPlugins)
  const toolCalls = fromPlugins.toolCalls
  const names = input.collections ?? (await rag.listCollections(caller.userId)).collections.map(collectionRef)
  const embedder = await rag.embedder()
  const notes: string[] = []
  // A later round widens the search with what the critic found missing.
  const query = input.objections.length ? `${input.task} ${input.objections.join(' ')}` : input.task
  const limit = SOURCES_PER_TASK * (input.objections.length ? 2 : 1)
  const found: (SearchResult & { collection: string })[] = []
  const wanted = new Set([...termSet(query)].filter((term) => !TASK_WORDS.has(term)))
  for (const name of names) {
    const collection = await rag.collection(caller.userId, name)
    if (collection.embedder !== embedder.id) {
      notes.push(`Collection ${name} was embedded with ${collection.embedder}, not the active ${embedder.id}, so it was not searched.`)
      continue
    }
    const floor = rankingParams(embedder.id).relevanceFloor
    for (const hit of await rag.retrieve(caller.userId, collection, embedder, query, limit, KEYWORD_FLOOR, { passages: true })) {
      // A passage counts when it holds a word of what the task is about (not one of how to present it:
      // "short", "plan", "summary"), or when its score alone is a meaning match (MEANING_ONLY_FLOOR).
      if (hit.score >= MEANING_ONLY_FLOOR || (!wanted.size && hit.score >= floor) || [...termSet(hit.content)].some((term) => wanted.has(term))) found.push({ ...hit, collection: name })
    }
    if (input.signal.aborted) break
  }
  found.sort((a, b) => b.score - a.score)
  const best = found[0]?.score ?? 0
  const passages = found.filter((hit) => hit.score >= best * RELATIVE_FLOOR).slice(0, limit)
  const fitted = (passages.length ? await fitPassages(input.generator, input.task, passages) : []) as (SearchResult & { collection: string })[]
  const sources: Source[] = fitted.map((hit, i) => ({ n: i + 1, collection: hit.collection, id: hit.id, title: title(hit), score: Math.round(hit.score * 1000) / 1000 }))
  const searched = names.join(', ')
  if (!sources.length) {
    const found = names.length ? `${NOTHING_FOUND} (${searched}) matches this task.` : `${NO_COLLECTIONS}, so no passage backs this task.`
    const draft = `${found}${notes.length ? ` ${notes.join(' ')}` : ''}${pluginText ? `\n\n${pluginText}` : ''}`
    return { context: draft, draft, sources, toolCalls }
  }
  const list = sources.map((s) => `[${s.n}] ${s.title} (${s.collection}/${s.id}, score ${s.score.toFixed(2)})`).join('\n')
  const numbered = answerPrompt(input.task, fitted)[1]!.content
  let draft = ''
  if (input.builtin) {
    const reply = await input.generator.generate(answerPrompt(input.task, fitted), { maxTokens: replyBudget(input.generator) }, input.signal)
    const cited = reply.noAnswer
      ? `The passages found do not answer the task directly; the closest are listed below.`
      : reply.text.trim().replace(/\s?\[(\d+)\]/g, (marker, n: string) => (Number(n) >= 1 && Number(n) <= sources.length ? marker : ''))
    draft = `${cited}${pluginText ? `\n\n${pluginText}` : ''}\n\nSources (searched: ${searched}):\n${list}${notes.length ? `\n${notes.join(' ')}` : ''}`
  }
  const context = `${numbered.replace(/\n\nQuestion:[\s\S]*$/, '')}\n\nCite them as [n].${pluginText ? `\n\n${pluginText}` : ''}`
  return { context, draft, sources, toolCalls }
}

/** The planner: the task split into steps, each with the agent suited to it. */
async function plan(input: AgentInput): Promise<AgentWork> {
  const steps = splitSteps(input.task)
  const lines = steps.map((step, i) => `${i + 1}. ${step.text} (${step.owner})`)
  const draft = `Plan in ${steps.length} step${steps.length === 1 ? '' : 's'}:\n${lines.join('\n')}`
  return { context: `A first split of the task:\n${lines.join('\n')}`, draft, steps: steps.map((s) => s.text) }
}

/** The analyst: calculations (through the calculator tool), evidence, gaps. */
async function analyse(input: AgentInput): Promise<AgentWork> {
  const material = input.earlier.filter((r) => r.agent !== 'critic' && r.agent !== 'planner')
  const toolCalls: ToolCallRecord[] = []
  const lines: string[] = []
  const calculator = input.tools.list().find((tool) => tool.name === 'calculator__evaluate')
  // A model that calls tools itself does its own calculations; for any other, the analyst does them.
  const selfCompute = input.builtin || !supportsToolCalls(input.generator)
  const expressions = selfCompute ? arithmeticIn([input.task, ...material.map((r) => r.response)].join('\n')) : []
  for (const expression of expressions) {
    if (!calculator) {
      lines.push(`- Calculation needed: ${expression} (the calculator plugin is not enabled)`)
      continue
    }
    try {
      const result = await input.tools.call(calculator.name, { expression }, input.caller, input.signal)
      toolCalls.push({ tool: calculator.name, arguments: { expression }, result })
      const value = (result as { value?: unknown })?.value ?? result
      lines.push(`- Calculation: ${expression} = ${typeof value === 'object' ? JSON.stringify(value) : String(value)} (calculator)`)
    } catch (error) {
      const message = (error as Error).message
      toolCalls.push({ tool: calculator.name, arguments: { expression }, error: message })
      lines.push(`- Calculation failed: ${expression}: ${message}`)
    }
  }
  const evidence = keySentences(material.map((r) => ({ origin: r.agent, text: r.response })), input.task, 3)
  for (const sentence of evidence) lines.push(`- Evidence (${sentence.origin}): ${sentence.text}`)
  const figures = material.flatMap((r) => keySentences([{ origin: r.agent, text: r.response }], input.task, 50)).filter((s) => /\d/.test(s.text.replace(/\[\d+\]/g, '')))
  for (const sentence of figures.slice(0, 3)) if (!evidence.some((e) => e.text === sentence.text)) lines.push(`- Figure (${sentence.origin}): ${sentence.text}`)
  const review = reviewWork(material, stepsOf(input))
  if (material.length && review.unaddressed.length) lines.push(`- Gaps: nothing so far addresses ${review.unaddressed.map((s) => `"${s}"`).join(', ')}.`)
  if (!material.length) lines.push(`- Key points of the task: ${[...new Set(splitSteps(input.task).map((s) => s.text))].join('; ')}.`)
  const draft = `Analysis:\n${lines.join('\n')}`
  return { context: draft, draft, toolCalls }
}

/** A sources list as agents print it under their work. */
const sourceList = (sources: Source[]) => sources.map((s) => `[${s.n}] ${s.title} (${s.collection}/${s.id}, score ${s.score.toFixed(2)})`).join('\n')

/**
 * The writer: one part per step, each built from the sentences of the earlier work that share
 * the most terms with that step (every sentence goes to the step it fits best, at most once).
 * Without a model and without material from the agents before it (no researcher ran, or it found
 * nothing), the writer searches the caller's collections itself and drafts from what it finds,
 * citing it.
 */
async function write(input: AgentInput): Promise<AgentWork> {
  let texts = input.earlier.filter((r) => r.agent !== 'critic' && r.agent !== 'planner').map((r) => ({ origin: r.agent, text: r.response }))
  let sources: Source[] | undefined
  let searched = ''
  const hasMaterial = texts.some((t) => textUnits(t.text).length > 0)
  let toolCalls: ToolCallRecord[] = []
  if (input.builtin && !hasMaterial && !input.earlier.some((r) => r.agent === 'researcher')) {
    const found = await research(input, WRITER_PLUGINS)
    toolCalls = found.toolCalls ?? []
    if (found.sources?.length || textUnits(found.draft).length) {
      texts = [{ origin: 'writer', text: found.draft }]
      if (found.sources?.length) sources = found.sources
    } else searched = found.draft
  }
  const steps = stepsOf(input)
  const stepTerms = steps.map(termSet)
  const parts: { text: string; shared: number }[][] = steps.map(() => [])
  for (const sentence of keySentences(texts, input.task, 1000)) {
    const terms = termSet(sentence.text)
    const shared = stepTerms.map((set) => [...set].filter((term) => terms.has(term)).length / Math.max(1, set.size))
    const best = shared.indexOf(Math.max(...shared))
    if (best >= 0 && shared[best]! > 0) parts[best]!.push({ text: sentence.text, shared: shared[best]! })
  }
  const taken = new Set(parts.flat().map((p) => p.text))
  const sections = steps.map((step, i) => {
    let picked = parts[i]!.sort((a, b) => b.shared - a.shared).slice(0, 3).map((p) => p.text)
    // A step that asks for the write-up itself ("write a short summary") gets the best of the rest.
    if (!picked.length && ['writer', 'summarizer'].includes(ownerOf(step))) {
      picked = keySentences(texts, input.task, 2).map((s) => s.text)
      picked = picked.filter((text) => !taken.has(text)).concat(picked.filter((text) => taken.has(text))).slice(0, 2)
    }
    return `${step.replace(/[.!?:]+$/, '')}:\n${picked.length ? picked.join(' ') : '(no material on this part yet)'}`
  })
  const notes = searched ? `\n\n${searched}` : ''
  const cited = sources ? `\n\nSources:\n${sourceList(sources)}` : ''
  return {
    context: `Write one part per step:\n${steps.map((s, i) => `${i + 1}. ${s}`).join('\n')}`,
    draft: `${sections.join('\n\n')}${cited}${notes}`,
    ...(sources ? { sources } : {}),
    toolCalls,
  }
}

/** The critic: checks the others' work against the task. */
async function critique(input: AgentInput): Promise<AgentWork> {
  const others = input.earlier.filter((r) => r.agent !== 'critic')
  if (!others.length) {
    const draft = 'Nothing to review: no other agent has produced work for this task.'
    return { context: draft, draft, objections: [] }
  }
  const { objections } = reviewWork(others, stepsOf(input))
  const draft = objections.length
    ? `Objections:\n${objections.map((o) => `- ${o}`).join('\n')}`
    : `No objections: every part of the task is addressed${others.some((r) => r.sources?.length) ? ' and the findings cite their sources' : ''}.`
  return { context: `Automatic checks of the work:\n${draft}`, draft, objections }
}

/** The summarizer: the sentences that carry the work (or the task), in order. */
async function summarize(input: AgentInput): Promise<AgentWork> {
  const material = input.earlier.filter((r) => r.agent !== 'critic' && r.agent !== 'planner')
  const texts = material.length ? material.map((r) => ({ origin: r.agent, text: r.response })) : [{ origin: 'task', text: input.task }]
  const picked = keySentences(texts, input.task, 3)
  const draft = `Summary: ${picked.map((s) => s.text).join(' ')}`
  return { context: draft, draft }
}

export const AGENTS: AgentDefinition[] = [
  {
    name: 'researcher',
    role: 'Research',
    description: "Searches your RAG collections for the task and cites the passages it found as [n]; without a model, also asks the read-only plugin tools that fit the task.",
    instructions: 'You are the researcher. Answer from the numbered sources in the context only, citing them as [1], [2]. Say plainly what the sources do not cover.',
    plugins: RESEARCHER_PLUGINS,
    work: research,
  },
  {
    name: 'analyst',
    role: 'Analysis',
    description: 'Works out the figures (with the calculator), weighs the evidence gathered so far and names the gaps.',
    instructions: 'You are the analyst. Examine the task and the work so far: compute figures with the tools offered, weigh the evidence, and name what is missing.',
    plugins: '*',
    work: analyse,
  },
  {
    name: 'writer',
    role: 'Writing',
    description: 'Writes the answer, one part per step of the task, from the material gathered so far.',
    instructions: 'You are the writer. Write a clear, complete answer to the task from the work so far, keeping its citations [n]. Address every step.',
    plugins: WRITER_PLUGINS,
    work: write,
  },
  {
    name: 'critic',
    role: 'Review',
    description: "Checks the others' work against the task and says what to fix, or that nothing needs fixing.",
    instructions:
      "You are the critic. Check the work so far against the task. List each concrete problem as a line starting with '- '. If nothing needs fixing, answer exactly: No objections.",
    plugins: ['text', 'calculator'],
    reviews: true,
    work: critique,
  },
  {
    name: 'planner',
    role: 'Planning',
    description: 'Breaks the task into ordered steps and says which agent suits each.',
    instructions: 'You are the planner. Break the task into a short numbered list of concrete steps, in order.',
    plugins: ['datetime'],
    work: plan,
  },
  {
    name: 'summarizer',
    role: 'Summary',
    description: 'Condenses the work so far (or the task) into its key sentences.',
    instructions: 'You are the summarizer. Condense the work so far into a few sentences, keeping citations [n].',
    plugins: ['text'],
    reviews: true,
    work: summarize,
  },
]

export const AGENT_NAMES = AGENTS.map((agent) => agent.name)
/** The agents a caller that names none gets (voice commands, the CLI). */
export const DEFAULT_AGENTS = ['researcher', 'analyst', 'writer', 'critic']
export const agentNamed = (name: string) => AGENTS.find((agent) => agent.name === name)
