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
export async function synthesisFigures(appModule: AppModule, agents: string[], tasks = set.questions): Promise<SynthesisFigures> {
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
