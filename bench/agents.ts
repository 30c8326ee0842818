// Multi-agent orchestration overhead: tasks/s and p50 task time for six agents on a generator that
// answers at once, so what is measured is the orchestration itself — the queue, each agent's own
// work, the prompts, the stored progress after every agent, the synthesis.
import { createServices } from '../src/app'
import type { ChatMessage, Generator } from '../src/ml'
import { AgentService } from '../src/modules/agents/service'

const TASKS = Number(process.env.BENCH_AGENT_TASKS ?? 200)
const AGENTS = ['planner', 'researcher', 'analyst', 'writer', 'critic', 'summarizer']
const TASK = 'Find our travel policy, then compare the hotel limits for 3 * 120 nights and write a short summary for the team.'

/** A model that replies at once with a sentence built from the prompt's length. */
class InstantGenerator implements Generator {
  readonly id = 'bench/instant'
  readonly contextLength = 8192
  async countTokens(text: string) {
    return Math.ceil(text.length / 4)
  }
  async generate(messages: ChatMessage[]) {
    const size = messages.reduce((n, m) => n + m.content.length, 0)
    return { text: `A reply to a prompt of ${size} characters about the travel policy.`, promptTokens: size, completionTokens: 12, finishReason: 'stop' as const }
  }
  async *stream(messages: ChatMessage[]) {
    yield (await this.generate(messages)).text
  }
}

export async function benchAgents() {
  const services = createServices({ database: ':memory:', env: {}, adminEmail: 'bench@example.com', adminPassword: 'bench-password', log: () => {} })
  services.agents.close()
  const generator = new InstantGenerator()
  const agents = new AgentService({ db: services.db, rag: services.rag, generator: async () => generator, tools: services.tools, concurrency: 2, log: () => {} })
  const caller = { userId: (await services.auth.listUsers()).users[0]!.id, roles: ['admin'] }
  // A small collection, so the researcher really retrieves.
  await services.rag.ingest(caller.userId, 'policies', [
    { id: 'travel', content: 'The travel policy caps hotel costs at 120 euros a night. Book through the travel desk. Receipts are due within 30 days.' },
    { id: 'expenses', content: 'Expenses over 500 euros need a manager approval. Meals are reimbursed up to 40 euros a day.' },
  ])
  console.log(`\n== Multi-agent orchestration (${AGENTS.length} agents, instant generator, ${TASKS} tasks each way, one after another)`)
  for (const parallel of [false, true]) {
    const request = { task: TASK, agents: AGENTS, parallel, maxIterations: 1 }
    for (let i = 0; i < 20; i++) await agents.execute(caller, request)
    const times: number[] = []
    const started = performance.now()
    for (let i = 0; i < TASKS; i++) {
      const t = performance.now()
      await agents.execute(caller, request)
      times.push(performance.now() - t)
    }
    const seconds = (performance.now() - started) / 1000
    times.sort((a, b) => a - b)
    const p50 = times[Math.floor(times.length / 2)]!
    const perAgent = p50 / AGENTS.length
    console.log(
      `${(parallel ? 'parallel' : 'sequential').padEnd(11)} ${(TASKS / seconds).toFixed(1).padStart(7)} tasks/s   p50 ${p50.toFixed(2).padStart(6)} ms/task   ${perAgent.toFixed(2)} ms per agent   goal <= 5 ms per agent  ${perAgent <= 5 ? 'ok' : 'MISSED'}`,
    )
  }
  agents.close()
  services.db.close()
}

if (import.meta.main) await benchAgents()
