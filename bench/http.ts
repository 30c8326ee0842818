// HTTP overhead of the server against a bare Bun.serve JSON handler, and resident memory after start.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApp, createServices } from '../src/app'

const CONCURRENCY = 32
const DURATION_MS = Number(process.env.BENCH_MS ?? 4000)
const root = join(import.meta.dir, '..')

async function load(url: string, token?: string) {
  const proc = Bun.spawn(['bun', join(import.meta.dir, 'load.ts'), url, String(CONCURRENCY), String(DURATION_MS), ...(token ? [token] : [])], {
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const out = await new Response(proc.stdout).text()
  await proc.exited
  return JSON.parse(out.trim().split('\n').pop()!) as { requests: number; errors: number; rps: number }
}

function row(label: string, rps: number, baseline: number, goal: number) {
  const ratio = rps / baseline
  console.log(`${label.padEnd(34)} ${rps.toFixed(0).padStart(8)} req/s   ${(ratio * 100).toFixed(1).padStart(5)}% of bare   goal >= ${goal}%  ${ratio * 100 >= goal ? 'ok' : 'MISSED'}`)
}

async function residentMemoryAfterStart(): Promise<number> {
  const dataDir = mkdtempSync(join(tmpdir(), 'uagent-bench-'))
  const port = 20000 + Math.floor(Math.random() * 20000)
  const proc = Bun.spawn(['bun', join(root, 'src/index.ts')], {
    env: { ...process.env, PORT: String(port), UAGENT_DATA_DIR: dataDir, UAGENT_ADMIN_EMAIL: 'bench@example.com', UAGENT_ADMIN_PASSWORD: 'bench-password' },
    stdout: 'ignore',
    stderr: 'ignore',
  })
  try {
    for (let i = 0; i < 100; i++) {
      try {
        if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) break
      } catch {}
      await Bun.sleep(100)
    }
    await Bun.sleep(500)
    const status = await Bun.file(`/proc/${proc.pid}/status`).text()
    return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) * 1024
  } finally {
    proc.kill()
    await proc.exited
    rmSync(dataDir, { recursive: true, force: true })
  }
}

export async function benchHttp() {
  // The baseline answers a JSON document of the same shape and size as /health's.
  const document = {
    status: 'healthy',
    uptime: 1,
    memory: '55.5 MB',
    connections: { database: 'connected', vectorStore: 'connected', embedder: 'builtin', llm: 'builtin' },
    features: { rag: true, voice: false, plugins: false, multiAgent: false },
  }
  const bare = Bun.serve({ port: 0, fetch: () => Response.json(document) })
  const bareRps = (await load(`http://127.0.0.1:${bare.port}/health`)).rps
  bare.stop(true)

  const dataDir = mkdtempSync(join(tmpdir(), 'uagent-bench-'))
  const services = createServices({
    dataDir,
    env: {},
    adminEmail: 'bench@example.com',
    adminPassword: 'bench-password',
    rateLimitMax: 1_000_000_000,
    log: () => {},
  })
  const app = buildApp(services).listen({ port: 0 })
  const base = `http://127.0.0.1:${app.server!.port}`
  const login = await (
    await fetch(`${base}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'bench@example.com', password: 'bench-password' }),
    })
  ).json() as { accessToken: string }
  const health = await load(`${base}/health`)
  const authed = await load(`${base}/auth/me`, login.accessToken)
  app.stop(true)
  services.db.close()
  rmSync(dataDir, { recursive: true, force: true })

  console.log(`\n== HTTP (${CONCURRENCY} connections, ${DURATION_MS} ms each, load from a second process)`)
  console.log(`${'bare Bun.serve JSON handler'.padEnd(34)} ${bareRps.toFixed(0).padStart(8)} req/s   baseline`)
  row('GET /health', health.rps, bareRps, 85)
  row('GET /auth/me (bearer JWT + session)', authed.rps, bareRps, 50)
  if (health.errors || authed.errors) console.log(`  (errors: health ${health.errors}, auth ${authed.errors})`)
  const rss = await residentMemoryAfterStart()
  console.log(`${'resident memory after start'.padEnd(34)} ${(rss / 1024 / 1024).toFixed(1).padStart(8)} MB      goal <= 150 MB  ${rss <= 150 * 1024 * 1024 ? 'ok' : 'MISSED'}`)
}

if (import.meta.main) await benchHttp()
