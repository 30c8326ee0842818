// Online backup of a database of at least 1 GB while the server answers requests: the time the
// backup takes, and the p99 latency of /health and of an authenticated read during it, beside
// the same figures without a backup running. Goal: p99 during a backup <= 2x the p99 without.
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServices } from '../src/app'
import { BENCH_ADMIN, benchLogin, startServerProcess } from './server'

const TARGET_BYTES = Number(process.env.BENCH_BACKUP_BYTES ?? 1.05 * 1024 ** 3)
const PROBE_MS = Number(process.env.BENCH_MS ?? 4000)
const PROBERS = 4
const ADMIN = BENCH_ADMIN

const dataDir = mkdtempSync(join(tmpdir(), 'uagent-bench-backup-'))
let server: Awaited<ReturnType<typeof startServerProcess>> | null = null
try {
  // The data: a real server database (accounts, a few conversations), grown past 1 GB in one
  // statement (8 KB random rows, incompressible like embedding vectors; no journal while filling).
  const services = createServices({ dataDir, adminEmail: ADMIN.email, adminPassword: ADMIN.password, env: {}, log: () => {} })
  const admin = (await services.auth.listUsers()).users[0]!
  for (let i = 0; i < 50; i++) await services.conversations.create(admin.id, `Conversation ${i}`)
  services.db.close()
  const filling = performance.now()
  const db = new Database(join(dataDir, 'uagent.db'))
  db.run('PRAGMA journal_mode = OFF')
  db.run('PRAGMA synchronous = OFF')
  db.run('CREATE TABLE bench_ballast (id INTEGER PRIMARY KEY, payload BLOB NOT NULL)')
  const rows = Math.ceil(TARGET_BYTES / 8000)
  db.run(`INSERT INTO bench_ballast (payload) SELECT randomblob(8000) FROM (WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < ${rows}) SELECT x FROM n)`)
  db.run('PRAGMA journal_mode = WAL')
  db.close()
  const size = statSync(join(dataDir, 'uagent.db')).size
  console.log(`\n== backup (database ${(size / 1024 ** 3).toFixed(2)} GB, made in ${((performance.now() - filling) / 1000).toFixed(1)} s) ==`)

  server = await startServerProcess({ dataDir, env: { UAGENT_RATE_LIMIT_MAX: '1000000000' } })
  const { base } = server
  const login = await benchLogin(base)
  const auth = { authorization: `Bearer ${login.accessToken}` }

  /** Latencies (ms) of requests sent back to back by a few clients until `until()` is true. */
  async function probe(path: string, headers: Record<string, string>, until: () => boolean): Promise<number[]> {
    const times: number[] = []
    await Promise.all(
      Array.from({ length: PROBERS }, async () => {
        while (!until()) {
          const started = performance.now()
          const res = await fetch(`${base}${path}`, { headers })
          await res.arrayBuffer()
          if (!res.ok) throw new Error(`${path} answered ${res.status}`)
          times.push(performance.now() - started)
        }
      }),
    )
    return times
  }
  const p99 = (times: number[]) => {
    const sorted = [...times].sort((a, b) => a - b)
    return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]!
  }
  const timed = (ms: number) => {
    const end = performance.now() + ms
    return () => performance.now() >= end
  }
  const READ = '/conversations?limit=5'

  // Warm up, then the figures without a backup.
  await probe('/health', {}, timed(500))
  await probe(READ, auth, timed(500))
  const [healthIdle, readIdle] = await Promise.all([probe('/health', {}, timed(PROBE_MS)), probe(READ, auth, timed(PROBE_MS))])

  // The same probes while a backup is made and downloaded.
  let backingUp = true
  const started = performance.now()
  const backup = (async () => {
    const res = await fetch(`${base}/admin/backup`, { method: 'POST', headers: auth })
    if (!res.ok) throw new Error(`backup answered ${res.status}: ${await res.text()}`)
    let bytes = 0
    for await (const chunk of res.body!) bytes += chunk.length
    backingUp = false
    return bytes
  })()
  const [healthBusy, readBusy, archiveBytes] = await Promise.all([probe('/health', {}, () => !backingUp), probe(READ, auth, () => !backingUp), backup])
  const seconds = (performance.now() - started) / 1000

  console.log(`backup of ${(size / 1024 ** 3).toFixed(2)} GB while serving: ${seconds.toFixed(1)} s (${(size / 1024 ** 2 / seconds).toFixed(0)} MB/s), archive ${(archiveBytes / 1024 ** 3).toFixed(2)} GB`)
  for (const [label, idle, busy] of [
    ['GET /health', healthIdle, healthBusy],
    [`GET ${READ} (authenticated)`, readIdle, readBusy],
  ] as const) {
    const ratio = p99(busy) / p99(idle)
    console.log(
      `${label.padEnd(42)} p99 ${p99(idle).toFixed(2).padStart(7)} ms without, ${p99(busy).toFixed(2).padStart(7)} ms during (${busy.length} requests)  ${ratio.toFixed(2)}x  goal <= 2x  ${ratio <= 2 ? 'ok' : 'MISSED'}`,
    )
  }
} finally {
  await server?.stop()
  rmSync(dataDir, { recursive: true, force: true })
}
