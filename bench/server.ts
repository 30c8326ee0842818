// Starting a server for a benchmark: in this process on a free port, or as `bun run start` runs it,
// in a process of its own. One place, so every section measures the same server set-up.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type AppOptions, buildApp, createServices } from '../src/app'

export const BENCH_ADMIN = { email: 'bench@example.com', password: 'bench-password' }
const root = join(import.meta.dir, '..')

export interface BenchLogin {
  accessToken: string
  user: { id: string }
}

/** POST /auth/login; the LoginResponse. */
export async function benchLogin(base: string, account: { email: string; password: string } = BENCH_ADMIN): Promise<BenchLogin> {
  const response = await fetch(`${base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(account) })
  if (!response.ok) throw new Error(`login as ${account.email} failed: ${response.status} ${await response.text()}`)
  return (await response.json()) as BenchLogin
}

/**
 * The server in this process, listening on a free port, with the bench admin logged in. Without a
 * `dataDir` it gets a fresh one that stop() removes. `env` is what the configuration is read from
 * (none of this shell's UAGENT_* variables unless given).
 */
export async function startInProcess(options: AppOptions = {}) {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'uagent-bench-'))
  const services = createServices({ env: {}, adminEmail: BENCH_ADMIN.email, adminPassword: BENCH_ADMIN.password, log: () => {}, ...options, dataDir })
  const app = buildApp(services).listen({ port: 0, development: false })
  const base = `http://127.0.0.1:${app.server!.port}`
  const login = await benchLogin(base)
  return {
    services,
    base,
    login,
    dataDir,
    stop() {
      app.stop(true)
      services.db.close()
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/**
 * `bun src/index.ts` in a process of its own with `env` added to this one's, resolved once it prints
 * the address it listens on (PORT 0: a free port). Its standard output keeps being read, so the pipe
 * never fills; kill the process when done.
 */
export async function startServerProcess(env: Record<string, string>) {
  const proc = Bun.spawn(['bun', join(root, 'src/index.ts')], { cwd: root, env: { ...process.env, PORT: '0', ...env }, stdout: 'pipe', stderr: 'inherit' })
  const reader = proc.stdout.getReader()
  let output = ''
  while (!/listening on (http:\/\/\S+)/.test(output)) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`the server exited before listening: ${output}`)
    output += new TextDecoder().decode(value)
  }
  void (async () => {
    for (;;) if ((await reader.read()).done) break
  })()
  return { proc, url: /listening on (http:\/\/\S+)/.exec(output)![1]!.replace('0.0.0.0', '127.0.0.1') }
}
