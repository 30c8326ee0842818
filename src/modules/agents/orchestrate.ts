// A task's run: rounds of agents (in sequence, each seeing the work before it, or concurrently),
// the critic's objections sending the work round again, then the synthesis and the confidence.
import { type Generator, replyBudget } from '../../ml'
import type { RagService } from '../rag/service'
import type { RagStore } from '../rag/store'
import { agentNamed } from './catalog'
import { PLUGIN_ATTRIBUTION, quotedToolCalls } from './plugin-work'
import { reviewWork, stepsOf } from './review'
import { NO_COLLECTIONS, keySentences, textUnits } from './text-work'
import { fitted, runAgent, workSections } from './turn'
import type { AgentDefinition, AgentInput, AgentResult } from './types'
import type { PluginToolbox, ToolCaller } from './tools'

export interface TaskSpec {
  task: string
  agents: string[]
  parallel: boolean
  maxIterations: number
  /** Collections the researcher may search; null for all of the caller's. */
  collections: string[] | null
}

export interface TaskOutcome {
  results: AgentResult[]
  finalSynthesis: string
  confidence: number
  iterations: number
}

export interface RunContext {
  /** Agents beyond the built-in ones, by the name the task lists them under (`assistant:<ref>`). */
  extraAgents?: Map<string, AgentDefinition>
  caller: ToolCaller
  generator: Generator
  rag: RagService<RagStore>
  tools: PluginToolbox
  signal: AbortSignal
  onAgentStart?: (agent: string, round: number) => void
  /** Called as each agent finishes, with the task's progress 0..100 (below 100 until the end). */
  onAgentDone?: (result: AgentResult, progress: number, all: AgentResult[]) => void
}

/** An agent's failure, named, so the task's error says which agent failed. */
export class AgentFailure extends Error {
  constructor(
    readonly agent: string,
    readonly reason: unknown,
  ) {
    super(`The ${agent} failed: ${(reason as Error)?.message ?? String(reason)}`)
  }
}

const stripSources = (text: string) => text.replace(/\n\nSources[\s\S]*$/, '')

export async function runTask(spec: TaskSpec, run: RunContext): Promise<TaskOutcome> {
  const builtin = run.generator.id.startsWith('builtin/')
  const definitions = spec.agents.map((name) => agentNamed(name) ?? run.extraAgents?.get(name)!)
  const rounds = spec.agents.includes('critic') ? spec.maxIterations : 1
  const total = rounds * definitions.length
  const all: AgentResult[] = []
  let previous: AgentResult[] = []
  let objections: string[] = []
  let round = 0

  const runOne = async (index: number, earlier: AgentResult[], signal: AbortSignal) => {
    const definition = definitions[index]!
    run.onAgentStart?.(definition.name, round)
    const input: AgentInput = {
      task: spec.task,
      caller: run.caller,
      round,
      earlier,
      objections,
      collections: spec.collections,
      generator: run.generator,
      builtin,
      rag: run.rag,
      tools: run.tools,
      signal,
    }
    let result: AgentResult
    try {
      result = await runAgent(definition, input)
    } catch (error) {
      if (run.signal.aborted || error instanceof AgentFailure) throw error
      throw new AgentFailure(definition.name, error)
    }
    all.push(result)
    run.onAgentDone?.(result, Math.min(99, Math.floor((all.length / total) * 100)), all)
    return result
  }

  while (round < rounds) {
    round++
    const current: (AgentResult | undefined)[] = new Array(definitions.length)
    // What an agent may build on: this round's finished work, and the previous round's from the others.
    const earlierFor = (index: number) => [
      ...current.filter((r): r is AgentResult => !!r),
      ...previous.filter((r, i) => i !== index && !current[i] && r.agent !== definitions[index]!.name),
    ]
    if (!spec.parallel) {
      for (let i = 0; i < definitions.length; i++) current[i] = await runOne(i, earlierFor(i), run.signal)
    } else {
      // Agents that review others' work start once the rest have finished; a failure stops the round.
      const round = new AbortController()
      const signal = AbortSignal.any([run.signal, round.signal])
      const workers = definitions.map((d, i) => (d.reviews ? -1 : i)).filter((i) => i >= 0)
      const reviewers = definitions.map((d, i) => (d.reviews ? i : -1)).filter((i) => i >= 0)
      const shared = previous
      await Promise.all(
        workers.map(async (i) => {
          try {
            current[i] = await runOne(i, shared.filter((r) => r.agent !== definitions[i]!.name), signal)
          } catch (error) {
            round.abort(error)
            throw error
          }
        }),
      )
      for (const i of reviewers) current[i] = await runOne(i, earlierFor(i), run.signal)
    }
    previous = current as AgentResult[]
    objections = [...new Set(previous.flatMap((r) => (r.agent === 'critic' ? (r.objections ?? []) : [])))]
    if (!objections.length) break
  }

  const finalSynthesis = await synthesize(spec.task, previous, run, builtin)
  return { results: all, finalSynthesis, confidence: confidenceOf(spec.task, previous, builtin), iterations: round }
}

/**
 * Combines the last round's work: a model's synthesis; without one, the work's key sentences under
 * the name of the agent that produced them, the sources they cite, the plan and the review's verdict,
 * or, when no agent found material, a plain statement of that. Never empty.
 */
async function synthesize(task: string, results: AgentResult[], run: RunContext, builtin: boolean): Promise<string> {
  const work = results.filter((r) => r.agent !== 'critic' && r.agent !== 'planner')
  const critics = results.filter((r) => r.agent === 'critic')
  if (!builtin) {
    const messages = await fitted(run.generator, (chars) => [
      { role: 'system', content: "Combine the agents' work below into one final answer to the task. Keep the citations [n]. Mention any objection the review left open." },
      { role: 'user', content: `Task: ${task}\n\n${workSections(results, chars)}` },
    ])
    const reply = await run.generator.generate(messages, { maxTokens: replyBudget(run.generator) }, run.signal)
    return reply.text.trim()
  }
  const texts = (work.length ? work : results).map((r) => ({ origin: r.agent, text: stripSources(r.response) }))
  const key = keySentences(texts, task, 5)
  const parts: string[] = []
  // Each agent's sentences under its name, in the order the agents worked.
  for (const origin of [...new Set(key.map((s) => s.origin))]) {
    parts.push(`From the ${origin}: ${key.filter((s) => s.origin === origin).map((s) => s.text).join(' ')}`)
  }
  const sources = [...results].reverse().find((r) => r.agent === 'researcher' && r.sources?.length)?.sources ?? results.find((r) => r.sources?.length)?.sources
  // What plugin tools gave is always part of the synthesis, each sentence with its attribution.
  const quoted = new Set(key.map((s) => s.text))
  const fromPlugins = [...new Set(texts.flatMap((t) => textUnits(t.text)).filter((unit) => PLUGIN_ATTRIBUTION.test(unit) && !quoted.has(unit)))]
  if (fromPlugins.length) parts.push(`From your plugins: ${fromPlugins.slice(0, 3).join(' ')}`)
  if (key.length && sources) parts.push(`Sources: ${sources.map((s) => `[${s.n}] ${s.title}`).join('; ')}.`)
  if (!key.length) {
    const searched = results.some((r) => r.response.includes(NO_COLLECTIONS)) ? 'You have no collections to draw on' : 'Nothing in your collections matches this task'
    parts.push(`${searched}, and no language model is installed to write from general knowledge, so the agents found no material to answer it with.`)
  }
  const planner = [...results].reverse().find((r) => r.agent === 'planner' && r.steps?.length)
  if (planner) parts.push(`Plan (planner): ${planner.steps!.map((step, i) => `${i + 1}. ${step.replace(/[.!?]+$/, '')}`).join('; ')}.`)
  if (critics.length) {
    const open = [...new Set(critics.flatMap((r) => r.objections ?? []))]
    parts.push(open.length ? `Open objections: ${open.join(' ')}` : 'Review: no objections.')
  }
  return parts.filter(Boolean).join('\n\n')
}

/**
 * Confidence in [0, 1]: the mean of the signals the run produced — the share of the task's steps
 * the final work addresses (always); the evidence behind the work, as the mean score of the top
 * three sources found, a plugin result the work quotes counting 1 (0 when none was; when a
 * researcher ran, or another agent searched or quoted a plugin); and the
 * critic's verdict, 1 / (1 + open objections) (only when a critic ran). With the built-in engine,
 * whose agents can only quote material, a run that found no material at all has confidence 0.
 */
export function confidenceOf(task: string, results: AgentResult[], builtin = false): number {
  const work = results.filter((r) => r.agent !== 'critic')
  const material = work.filter((r) => r.agent !== 'planner').some((r) => textUnits(stripSources(r.response)).length > 0)
  if (builtin && !material) return 0
  const signals = [reviewWork(work, stepsOf({ task, earlier: results })).addressed]
  const searched = results.filter((r) => r.agent === 'researcher' || r.sources?.length || quotedToolCalls(r).length)
  if (searched.length) {
    // A plugin result the work quotes is evidence as strong as a source that matches exactly.
    const scores = [...searched.flatMap((r) => r.sources ?? []).map((s) => s.score), ...searched.flatMap((r) => quotedToolCalls(r)).map(() => 1)]
      .sort((a, b) => b - a)
      .slice(0, 3)
    signals.push(scores.length ? scores.reduce((a, b) => a + b, 0) / scores.length : 0)
  }
  const critics = results.filter((r) => r.agent === 'critic')
  if (critics.length) signals.push(1 / (1 + new Set(critics.flatMap((r) => r.objections ?? [])).size))
  return Math.round((signals.reduce((a, b) => a + b, 0) / signals.length) * 1000) / 1000
}
