// Agent synthesis without a model, for `bun run bench answers`: tasks made of the labelled set's
// questions, run by planner + writer and by researcher + writer over its documents, through
// POST /agents/execute of this tree and of the tree before issue 37 (its src extracted from git at
// BASE_COMMIT into a temporary folder). Coverage: the share of tasks whose finalSynthesis holds the
// labelled answering sentence.
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import set from '../../test/fixtures/answers-labelled.json'

/** The commit issue 37's work started from. */
export const BASE_COMMIT = 'ffbabc0'
const root = join(import.meta.dir, '..', '..')
const ADMIN = { email: 'bench@example.com', password: 'bench-password-1' }

type AppModule = { createServices: (options: Record<string, unknown>) => unknown; buildApp: (services: any) => { handle(request: Request): Promise<Response> } }

/** The src folder as it was at BASE_COMMIT, extracted beside this tree's node_modules; null when git cannot give it. */
export function sourceBefore(commit = BASE_COMMIT): { dir: string; cleanup(): void } | null {
  const dir = mkdtempSync(join(tmpdir(), 'uagent-before-'))
  const archive = Bun.spawnSync(['sh', '-c', `git -C "${root}" archive ${commit} src package.json | tar -x -C "${dir}"`], { stderr: 'pipe' })
  if (archive.exitCode !== 0) {
    rmSync(dir, { recursive: true, force: true })
    return null
  }
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'))
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}

export interface SynthesisFigures {
  tasks: number
  nonEmpty: number
  coverage: number
  meanConfidence: number
}

/** Runs the tasks through an app built from `appModule` (src/app.ts of some tree). */
export async function synthesisFigures(appModule: AppModule, agents: string[], tasks: { question: string; answer: string }[] = set.questions): Promise<SynthesisFigures> {
  const services = appModule.createServices({ database: ':memory:', adminEmail: ADMIN.email, adminPassword: ADMIN.password, env: {}, log: () => {}, rateLimitMax: 1_000_000 })
  const app = appModule.buildApp(services)
  const call = async (path: string, body: unknown, token?: string) => {
    const response = await app.handle(
      new Request(`http://localhost${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) }),
    )
    return (await response.json()) as any
  }
  const { accessToken } = await call('/auth/login', ADMIN)
  await call('/rag/ingest', { collection: 'debian', documents: set.documents }, accessToken)
  let nonEmpty = 0
  let covered = 0
  let confidence = 0
  const squash = (text: string) => text.replace(/\s+/g, ' ')
  for (const task of tasks) {
    const result = await call('/agents/execute', { task: task.question, agents }, accessToken)
    const synthesis = typeof result.finalSynthesis === 'string' ? result.finalSynthesis : ''
    if (synthesis.trim()) nonEmpty++
    if (squash(synthesis).includes(squash(task.answer))) covered++
    confidence += typeof result.confidence === 'number' ? result.confidence : 0
  }
  return { tasks: tasks.length, nonEmpty: nonEmpty / tasks.length, coverage: covered / tasks.length, meanConfidence: confidence / tasks.length }
}

/**
 * Tasks a built-in plugin serves and no document does (issue 37, point 3, "and plugins"): products,
 * sums and percentages (calculator), days between two dates (datetime difference), the time in a
 * city (datetime now). Made from a fixed seed; each answer is worked out here independently (plain
 * arithmetic, Date.UTC, the city's IANA zone), and a synthesis covers the task when it holds it.
 */
export function pluginTasks(): { question: string; answer: string }[] {
  // mulberry32, seeded: the same tasks on every run.
  let seed = 37
  const next = (below: number) => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * below)
  }
  const tasks: { question: string; answer: string }[] = []
  for (let i = 0; i < 6; i++) {
    const [a, b] = [12 + next(88), 3 + next(40)]
    tasks.push({ question: `What is ${a} * ${b}?`, answer: `${a} * ${b} = ${a * b}` })
  }
  for (let i = 0; i < 4; i++) {
    const [a, b, c] = [100 + next(900), 10 + next(90), 1 + next(9)]
    tasks.push({ question: `How much is ${a} + ${b} * ${c} in total?`, answer: `= ${a + b * c}` })
  }
  for (let i = 0; i < 4; i++) {
    const [p, n] = [5 + 5 * next(10), 40 * (1 + next(50))]
    tasks.push({ question: `What is ${p}% of ${n}?`, answer: `${p / 100 * n} (from plugin calculator` })
  }
  const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10)
  for (let i = 0; i < 6; i++) {
    const from = Date.UTC(2020 + next(6), next(12), 1 + next(28))
    const to = from + (1 + next(400)) * 86_400_000
    tasks.push({ question: `How many days are there between ${iso(from)} and ${iso(to)}?`, answer: `days ${(to - from) / 86_400_000}` })
  }
  const cities: [string, string][] = [['Tokyo', 'Asia/Tokyo'], ['Lisbon', 'Europe/Lisbon'], ['Chicago', 'America/Chicago'], ['Nairobi', 'Africa/Nairobi'], ['Sydney', 'Australia/Sydney'], ['Lima', 'America/Lima']]
  for (const [city, zone] of cities) tasks.push({ question: `What time is it in ${city} right now?`, answer: `timezone ${zone}` })
  return tasks
}
