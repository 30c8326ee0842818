import type { ChatMessage, GenerateOptions, GenerateResult, Generator } from '../../../src/ml'
import { AgentService } from '../../../src/modules/agents/service'
import type { PluginToolbox } from '../../../src/modules/agents/tools'
import type { TaskStore } from '../../../src/modules/agents/store'
import { makeServer } from '../../helpers'
import type { AppOptions } from '../../../src/app'

/**
 * A fake model: each reply is `reply-N saw [tokens]`, listing the reply tokens of earlier agents
 * found in its prompt, so what was passed along shows in the results. It waits `delayMs` (abortably),
 * records when each call started and ended, and can be told to fail for one agent.
 */
export class TokenGenerator implements Generator {
  readonly id = 'test/tokens'
  contextLength = 8192
  /** Words appended to every reply, to make long outputs. */
  padding = 0
  calls = 0
  aborted = 0
  /** Calls under way, and when the last one started (ms). */
  active = 0
  lastStart = 0
  spans: { agent: string; start: number; end: number }[] = []
  prompts: ChatMessage[][] = []

  constructor(
    private readonly delayMs = 0,
    private readonly failFor?: string,
  ) {}

  async countTokens(text: string) {
    return text.split(/\s+/).filter(Boolean).length
  }

  async generate(messages: ChatMessage[], _options: GenerateOptions = {}, signal?: AbortSignal): Promise<GenerateResult> {
    const n = ++this.calls
    this.prompts.push(messages)
    const agent = /You are the (\w+)/.exec(messages[0]!.content)?.[1] ?? 'synthesis'
    const start = Date.now()
    if (this.failFor === agent) throw new Error(`the ${agent} model ran out of memory`)
    if (this.delayMs) {
      this.active++
      this.lastStart = start
      try {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(resolve, this.delayMs)
          signal?.addEventListener('abort', () => {
            clearTimeout(timer)
            this.aborted++
            reject(signal.reason)
          }, { once: true })
        })
      } finally {
        this.active--
      }
    }
    this.spans.push({ agent, start, end: Date.now() })
    const seen = [...new Set([...(messages.at(-1)?.content ?? '').matchAll(/reply-\d+/g)].map((m) => m[0]))]
    const text = `reply-${n} from the ${agent} saw [${seen.join(',')}]${' filler'.repeat(this.padding)}`
    return { text, promptTokens: 1, completionTokens: 1, finishReason: 'stop' }
  }

  async *stream(messages: ChatMessage[], options: GenerateOptions = {}, signal?: AbortSignal) {
    yield (await this.generate(messages, options, signal)).text
  }
}

/** In-memory server whose agents run on `generator` (and `tools`), with queue settings. */
export function agentServer(
  generator: Generator | null,
  settings: { concurrency?: number; queueLimit?: number; retentionMs?: number; tools?: PluginToolbox; store?: TaskStore } = {},
  options: AppOptions = {},
) {
  return makeServer(options, (services) => {
    if (!generator && ! settings.concurrency === undefined && settings.queueLimit === undefined && settings.retentionMs === undefined) return
    services.agents.close()
    services.agents = new AgentService({
      db: services.db,
      rag: services.rag,
      generator: generator ? async () => generator : services.models.generator,
      tools: services.tools,
      log: () => {},
      ...settings,
    })
  })
}

/** Polls a task until `done(task)` or `ms` pass; returns every state seen. */
export async function pollTask(server: ReturnType<typeof makeServer>, token: string, taskId: string, done = (task: any) => ['completed', 'failed', 'cancelled'].includes(task.status), ms = 10_000) {
  const seen: any[] = []
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    const res = await server.call('GET', `/agents/task/${taskId}`, { token })
    seen.push(res.json)
    if (done(res.json)) break
    await Bun.sleep(10)
  }
  return seen
}
