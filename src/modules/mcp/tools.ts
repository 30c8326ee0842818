// The tools this server offers to MCP clients beyond the plugins' actions: the caller's knowledge
// base and the multi-agent tasks. Each has a JSON Schema (checked before it runs) and a runner.
import { AGENT_NAMES } from '../agents/catalog'
import type { AgentService } from '../agents/service'
import type { AssistantService } from '../assistants/service'
import type { ToolCaller } from '../plugins/tools'
import { answerQuestion } from '../rag/answer/answer'
import type { DocumentLibrary } from '../rag/documents/library'
import type { RagService } from '../rag/service'
import type { RagStore } from '../rag/store'
import { ToolFailure } from './results'

export interface ToolContext {
  caller: ToolCaller
  signal: AbortSignal
  /** Reports progress (0..100) to a client that asked for it. */
  progress: (progress: number, message?: string) => Promise<void>
}

export interface ServedTool {
  name: string
  title: string
  description: string
  inputSchema: Record<string, unknown> & { type: 'object' }
  run(args: Record<string, unknown>, context: ToolContext): Promise<unknown>
}

export interface ServedToolDeps {
  rag: RagService<RagStore>
  library: DocumentLibrary
  agents: AgentService
  /** ask_assistant (absent: not offered). */
  assistants?: AssistantService
}

const collection = {
  type: 'string',
  minLength: 1,
  maxLength: 400,
  description: 'A collection you can read (see list_collections): your own by name, or one shared with you by name, id or <owner email>/<name>',
}
const POLL_MS = 200
const ENDED = new Set(['completed', 'failed', 'cancelled'])

/** rag_search, rag_answer, list_collections and agents_run, for one caller per request. */
export function servedTools({ rag, library, agents, assistants }: ServedToolDeps): ServedTool[] {
  return [
    ...(assistants ? [askAssistant(assistants)] : []),
    {
      name: 'rag_search',
      title: 'Search a collection',
      description: 'Hybrid search (meaning and keywords) over one of your document collections: the best passages with their document id, score in [0, 1] and metadata.',
      inputSchema: {
        type: 'object',
        properties: {
          collection,
          query: { type: 'string', minLength: 1, maxLength: 2000, description: 'What to look for' },
          limit: { type: 'integer', minimum: 1, maximum: 100, default: 5, description: 'Passages to return (1..100, default 5)' },
        },
        required: ['collection', 'query'],
        additionalProperties: false,
      },
      async run(args, { caller }) {
        const name = args.collection as string
        const found = await rag.search(caller.userId, name, args.query as string, args.limit as number)
        return { ...found, results: await library.withPages(caller.userId, name, found.results) }
      },
    },
    {
      name: 'rag_answer',
      title: 'Answer from a collection',
      description: 'Answers a question from one of your collections, citing the passages it used as [1], [2]… (sources list them); says so when nothing relevant is found.',
      inputSchema: {
        type: 'object',
        properties: {
          collection,
          question: { type: 'string', minLength: 1, maxLength: 2000, description: 'The question' },
          maxContext: { type: 'integer', minimum: 1, maximum: 20, default: 3, description: 'Passages to answer from (1..20, default 3)' },
        },
        required: ['collection', 'question'],
        additionalProperties: false,
      },
      run: (args, { caller }) =>
        answerQuestion(rag, caller.userId, { collection: args.collection as string, question: args.question as string, maxContext: args.maxContext as number, includeContext: false }),
    },
    {
      name: 'list_collections',
      title: 'List your collections',
      description: 'Your document collections and those shared with you: id, name, owner, your access, document and chunk counts.',
      inputSchema: { type: 'object', properties: {}, additionalProperties: false },
      run: async (_args, { caller }) => rag.listCollections(caller.userId),
    },
    {
      name: 'agents_run',
      title: 'Run a multi-agent task',
      description:
        'Runs a task through a team of agents (researcher, analyst, writer, critic, planner, summarizer), one after another or in parallel, and returns each agent\'s result and the final synthesis. Reports progress while it runs; cancelling the request cancels the task.',
      inputSchema: {
        type: 'object',
        properties: {
          task: { type: 'string', minLength: 1, maxLength: 32000, description: 'What the agents should do' },
          agents: {
            type: 'array',
            items: { type: 'string', minLength: 1, maxLength: 410, pattern: `^(?:${AGENT_NAMES.join('|')}|assistant:.+)$` },
            minItems: 1,
            maxItems: 10,
            description: 'The agents, in order: built-in ones, or an assistant of yours (or shared with you) as assistant:<name>',
          },
          parallel: { type: 'boolean', default: false, description: 'Run the agents concurrently instead of one after another' },
          maxIterations: { type: 'integer', minimum: 1, maximum: 10, description: 'Refinement rounds (default 3)' },
          collections: { type: 'array', items: collection, maxItems: 50, description: 'Collections the researcher searches (default: all of yours)' },
        },
        required: ['task', 'agents'],
        additionalProperties: false,
      },
      async run(args, { caller, signal, progress }) {
        const { taskId } = await agents.submit(caller, {
          task: args.task as string,
          agents: args.agents as string[],
          parallel: args.parallel as boolean,
          ...(args.maxIterations !== undefined ? { maxIterations: args.maxIterations as number } : {}),
          ...(args.collections !== undefined ? { collections: args.collections as string[] } : {}),
        })
        const cancel = () => {
          try {
            const cancelled = agents.cancel(caller.userId, taskId)
            if (cancelled instanceof Promise) cancelled.catch(() => {})
          } catch {
            // It ended meanwhile.
          }
        }
        signal.addEventListener('abort', cancel, { once: true })
        try {
          let reported = -1
          for (;;) {
            const task = await agents.get(caller.userId, taskId)
            if (task.progress !== reported) {
              reported = task.progress
              await progress(task.progress, task.currentAgent ? `${task.status}: ${task.currentAgent}` : task.status)
            }
            if (task.status === 'completed') return task
            if (ENDED.has(task.status)) throw new ToolFailure(`Task ${taskId} ${task.status}${task.error ? `: ${task.error}` : ''}`)
            if (signal.aborted) throw signal.reason
            await Bun.sleep(POLL_MS)
          }
        } finally {
          signal.removeEventListener('abort', cancel)
        }
      },
    },
  ]
}

/** ask_assistant: one question answered as an assistant the caller may use, with the caller's rights. */
function askAssistant(assistants: AssistantService): ServedTool {
  return {
    name: 'ask_assistant',
    title: 'Ask an assistant',
    description:
      "Asks one of your assistants (or one shared with you, or a built-in agent) a question: it answers with its instructions, from its collections that you can read, citing passages as [1], [2]. GET /assistants lists them.",
    inputSchema: {
      type: 'object',
      properties: {
        assistant: { type: 'string', minLength: 1, maxLength: 400, description: 'An assistant: yours by name, one shared with you by name, id or <owner email>/<name>' },
        question: { type: 'string', minLength: 1, maxLength: 32000, description: 'The question' },
      },
      required: ['assistant', 'question'],
      additionalProperties: false,
    },
    run: (args, { caller, signal }) => assistants.ask(caller.userId, args.assistant as string, args.question as string, signal),
  }
}
