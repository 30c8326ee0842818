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
 * `bun src/index.ts` as `bun run start` runs it, in a process of its own on a free port, with the bench
 * admin and `env` added to this process's environment; resolved once it prints its address. Without a
 * `dataDir` it gets a fresh one that stop() removes. `root` is the checkout whose server runs (another
 * one for a before/after); `onSpawn` gets the process id at once (to sample its memory from the start).
 * Its standard output keeps being read, so the pipe never fills.
 */
export async function startServerProcess(options: { env?: Record<string, string>; root?: string; dataDir?: string; onSpawn?: (pid: number) => void } = {}) {
  const serverRoot = options.root ?? root
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'uagent-bench-'))
  // BENCH_CPU_PROF=<folder>: each server writes a CPU profile there when it stops (bun --cpu-prof).
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []
  const proc = Bun.spawn(['bun', ...profile, '--max-http-header-size=524288', join(serverRoot, 'src/index.ts')], {
    cwd: serverRoot,
    env: { ...process.env, PORT: '0', UAGENT_DATA_DIR: dataDir, UAGENT_ADMIN_EMAIL: BENCH_ADMIN.email, UAGENT_ADMIN_PASSWORD: BENCH_ADMIN.password, ...options.env },
    stdout: 'pipe',
    stderr: 'inherit',
  })
  options.onSpawn?.(proc.pid)
  const stop = async () => {
    proc.kill()
    await proc.exited
    if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true })
  }
  const reader = proc.stdout.getReader()
  let output = ''
  while (!/listening on (http:\/\/\S+)/.test(output)) {
    const { value, done } = await reader.read()
    if (done) {
      await stop()
      throw new Error(`the server exited before listening: ${output}`)
    }
    output += new TextDecoder().decode(value)
  }
  void (async () => {
    for (;;) if ((await reader.read()).done) break
  })()
  const base = /listening on (http:\/\/\S+)/.exec(output)![1]!.replace('0.0.0.0', '127.0.0.1')
  return { proc, pid: proc.pid, base, dataDir, stop }
}

/**
 * A Redis server of the bench's own: `binary` (Debian's redis-server) on a free loopback port,
 * without persistence, its files in `dir`. stop() kills it and waits for it to end.
 */
export function startBenchRedis(binary: string, dir: string): { url: string; stop(): Promise<void> } {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  const redis = Bun.spawn([binary, '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdout: 'ignore', stderr: 'inherit' })
  return {
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      redis.kill('SIGKILL')
      await redis.exited
    },
  }
}
