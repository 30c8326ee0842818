// Latency over HTTP of a built-in plugin call and of a warm installed-plugin call (its own Node.js
// worker, permission model on), beside GET /health in the same run. Goal: the installed plugin
// adds <= 5 ms p50 over the built-in. Figures are printed, never asserted.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startInProcess } from './server'

const REQUESTS = Number(process.env.BENCH_PLUGIN_REQUESTS ?? 500)
const WARMUP = 50

const root = mkdtempSync(join(tmpdir(), 'uagent-bench-plugins-'))
const repo = join(root, 'repo')
mkdirSync(repo)
writeFileSync(
  join(repo, 'plugin.json'),
  JSON.stringify({
    name: 'bench-echo',
    version: '1.0.0',
    description: 'Echoes its input',
    category: 'utility',
    permissions: [],
    main: 'index.js',
    actions: { echo: { description: 'Echo', parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } } },
  }),
)
writeFileSync(join(repo, 'index.js'), 'exports.echo = async ({ text }) => ({ text })\n')
for (const args of [['init', '-q'], ['add', '.'], ['commit', '-qm', 'bench'], ['tag', 'v1']]) {
  Bun.spawnSync(['git', '-c', 'user.email=b@example.com', '-c', 'user.name=bench', ...args], { cwd: repo })
}

const server = await startInProcess({ database: ':memory:', pluginsDir: join(root, 'plugins'), rateLimitMax: 1_000_000_000 })
const { services, base, login } = server

try {
  const headers = { authorization: `Bearer ${login.accessToken}`, 'content-type': 'application/json' }
  const installed = await fetch(`${base}/plugins/install`, { method: 'POST', headers, body: JSON.stringify({ source: 'git', package: repo, version: 'v1' }) })
  if (!installed.ok) throw new Error(`install failed: ${await installed.text()}`)

  const cases: [string, () => Promise<Response>][] = [
    ['GET /health', () => fetch(`${base}/health`)],
    ['built-in calculator evaluate', () => fetch(`${base}/plugins/calculator/execute`, { method: 'POST', headers, body: JSON.stringify({ action: 'evaluate', parameters: { expression: '2 * (3 + 4) ^ 2' } }) })],
    ['installed plugin (warm worker)', () => fetch(`${base}/plugins/bench-echo/execute`, { method: 'POST', headers, body: JSON.stringify({ action: 'echo', parameters: { text: 'hello' } }) })],
  ]
  const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
  const results = new Map<string, { p50: number; p99: number }>()
  console.log(`\nPlugins — ${REQUESTS} sequential requests each over HTTP (after ${WARMUP} warm-up), plugin worker on ${Bun.spawnSync([services.config.nodePath ?? 'node', '--version']).stdout.toString().trim()}`)
  for (const [label, send] of cases) {
    for (let i = 0; i < WARMUP; i++) await (await send()).arrayBuffer()
    const times: number[] = []
    for (let i = 0; i < REQUESTS; i++) {
      const started = performance.now()
      const response = await send()
      await response.arrayBuffer()
      times.push(performance.now() - started)
      if (!response.ok) throw new Error(`${label}: HTTP ${response.status}`)
    }
    times.sort((a, b) => a - b)
    const figures = { p50: percentile(times, 50), p99: percentile(times, 99) }
    results.set(label, figures)
    console.log(`${label.padEnd(34)} p50 ${figures.p50.toFixed(2).padStart(7)} ms   p99 ${figures.p99.toFixed(2).padStart(7)} ms`)
  }
  const added = results.get('installed plugin (warm worker)')!.p50 - results.get('built-in calculator evaluate')!.p50
  console.log(`installed over built-in, p50: +${added.toFixed(2)} ms   goal <= 5 ms  ${added <= 5 ? 'ok' : 'MISSED'}`)
} finally {
  services.plugins.close()
  server.stop()
  rmSync(root, { recursive: true, force: true })
}
