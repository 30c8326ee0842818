import type { Generator } from '../../ml'
import type { RagService } from '../rag/service'
import type { RagStore } from '../rag/store'
import type { Step } from './text-work'
import type { PluginToolbox, ToolCaller, ToolCallRecord } from './tools'

export interface Source {
  n: number
  collection: string
  id: string
  title: string
  score: number
}

/** One agent's finished turn, as stored and returned in `results`. */
export interface AgentResult {
  agent: string
  role: string
  response: string
  /** Milliseconds. */
  executionTime: number
  round: number
  startTime: string
  endTime: string
  toolCalls: ToolCallRecord[]
  sources?: Source[]
  objections?: string[]
  steps?: string[]
}

/** What an agent's turn is given. */
export interface AgentInput {
  task: string
  caller: ToolCaller
  round: number
  /** Work this agent may build on: earlier agents of this round (sequential), or of the previous round. */
  earlier: AgentResult[]
  /** The critic's objections to the previous round, to be addressed in this one. */
  objections: string[]
  /** Collections the researcher may search; null means all of the caller's. */
  collections: string[] | null
  generator: Generator
  /** True for the built-in extractive engine, which cannot write free text. */
  builtin: boolean
  rag: RagService<RagStore>
  tools: PluginToolbox
  signal: AbortSignal
}

/** An agent's own work on its inputs, before (or instead of) a model's turn. */
export interface AgentWork {
  /** Facts for a model's turn (sources, checks, calculations). */
  context: string
  /** The agent's answer when no generative model is present. */
  draft: string
  sources?: Source[]
  objections?: string[]
  steps?: string[]
  toolCalls?: ToolCallRecord[]
}

export interface AgentDefinition {
  name: string
  role: string
  description: string
  /** System instructions for a model's turn. */
  instructions: string
  /** Plugins whose actions it may call as tools; '*' for every enabled plugin. */
  plugins: string[] | '*'
  /** Reviews the others' work: in a parallel run it starts once the others have finished. */
  reviews?: boolean
  work(input: AgentInput): Promise<AgentWork>
}
