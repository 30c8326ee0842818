// Request records on PostgreSQL against analytics.db: how fast the stores take batches (one
// transaction of two statements on PostgreSQL), how long a recorder's flush keeps the server's
// own thread (its writer thread does the writing, for either backend), and what the dashboard,
// the 1h series and the export cost over RECORDS records. Needs
// UAGENT_DATABASE_URL (or UAGENT_TEST_DATABASE_URL); skipped, saying so, without one.
import { SQL } from 'bun'
import { Database } from 'bun:sqlite'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openAnalyticsDatabase } from '../src/db'
import { openPostgres } from '../src/db/postgres'
import { MINUTE, type RequestRecord } from '../src/modules/analytics/record'
import { batchOf, StringIds } from '../src/modules/analytics/record-batch'
import { RequestRecorder } from '../src/modules/analytics/recorder'
import { RecordStore } from '../src/modules/analytics/record-store'
import { PostgresRecordStore } from '../src/modules/analytics/record-store.postgres'
import { AnalyticsService } from '../src/modules/analytics/service'
import { PostgresAnalyticsService } from '../src/modules/analytics/service.postgres'

const URL_ = process.env.UAGENT_DATABASE_URL?.trim() || process.env.UAGENT_TEST_DATABASE_URL?.trim()
const RECORDS = Number(process.env.BENCH_PG_RECORDS ?? 200_000)
const BATCH = 10_000
const ROUTES = ['/health', '/auth/me', '/conversations', '/chat', '/rag/search', '/agents/task/:taskId']
const USERS = Array.from({ length: 50 }, () => crypto.randomUUID())

function recordsOf(start: number, count: number): RequestRecord[] {
  return Array.from({ length: count }, (_, i) => {
    const n = start + i
    const chat = n % 20 === 0
    return {
      ts: Date.now() - 50 * MINUTE + Math.floor((n / RECORDS) * 50 * MINUTE),
      method: n % 5 === 0 ? 'POST' : 'GET',
      route: ROUTES[n % ROUTES.length]!,
      status: n % 50 === 0 ? 500 : 200,
      durationMs: (n % 97) / 3,
      userId: n % 7 === 0 ? null : USERS[n % USERS.length]!,
      promptTokens: chat ? 40 : 0,
      completionTokens: chat ? 60 : 0,
      model: chat ? 'builtin/markov' : null,
    }
  })
}

/** Milliseconds of CPU this process used since `since`. */
const cpuOf = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since)
  return (used.user + used.system) / 1000
}

const ms = (value: number) => `${value.toFixed(1)} ms`

async function timed<T>(work: () => T | Promise<T>): Promise<[T, number]> {
  const start = performance.now()
  const result = await work()
  return [result, performance.now() - start]
}

if (!URL_) {
  console.log('\n## PostgreSQL analytics\nskipped: set UAGENT_DATABASE_URL (or UAGENT_TEST_DATABASE_URL) to a role that may CREATE DATABASE')
  process.exit(0)
}

const name = `uagent_bench_${randomBytes(5).toString('hex')}`
const admin = new SQL(URL_, { max: 1 })
await admin.unsafe(`CREATE DATABASE ${name}`)
const url = new URL(URL_)
url.pathname = `/${name}`
let postgres: Awaited<ReturnType<typeof openPostgres>> | null = null
const sqlite: Database = openAnalyticsDatabase(':memory:')
try {
  postgres = await openPostgres(url.toString())
  console.log(`\n## PostgreSQL analytics (${RECORDS.toLocaleString('en')} records in batches of ${BATCH.toLocaleString('en')})`)
  const stores = { SQLite: new RecordStore(sqlite), PostgreSQL: new PostgresRecordStore(postgres) }
  for (const [backend, store] of Object.entries(stores)) {
    let total = 0
    let busiest = 0
    let onThread = 0
    let cpuUsed = 0
    for (let at = 0; at < RECORDS; at += BATCH) {
      // A batch as the recorder hands it over: numbers, and its strings by id.
      const strings = new StringIds()
      const batch = batchOf(strings, recordsOf(at, BATCH))
      // The part of a PostgreSQL write done on this thread: until its first await hands over.
      const cpu = process.cpuUsage()
      const start = performance.now()
      const written = store instanceof RecordStore ? store.writeBatch(batch, strings.names) : store.writeBatch({ count: batch.count, rows: batch.rows, names: strings.names })
      onThread += performance.now() - start
      await written
      cpuUsed += cpuOf(cpu)
      const took = performance.now() - start
      total += took
      busiest = Math.max(busiest, took)
    }
    const batches = RECORDS / BATCH
    // This process's CPU per batch: for PostgreSQL, what a server's own thread spends (the records made
    // into arrays, Bun's client encoding them); for SQLite, what its writer thread spends.
    console.log(
      `${backend.padEnd(10)} store: ${Math.round(RECORDS / (total / 1000)).toLocaleString('en')} records/s, ${ms(total / batches)} a batch (slowest ${ms(busiest)}), ${ms(onThread / batches)} of it before the first await, ${ms(cpuUsed / batches)} CPU of this process a batch`,
    )
  }
  // The server's side: requests recorded into the recorder's buffer, a flush per batch. The
  // flush's own time on this thread (its writer thread does the writing, for either backend).
  const folder = mkdtempSync(join(tmpdir(), 'uagent-bench-pga-'))
  const recorders = {
    SQLite: new RequestRecorder(openAnalyticsDatabase(join(folder, 'analytics.db')), { retentionDays: 30 }),
    PostgreSQL: new RequestRecorder(sqlite, { retentionDays: 30, postgres }),
  }
  for (const [backend, recorder] of Object.entries(recorders)) {
    let flushing = 0
    let total = 0
    for (let at = 0; at < RECORDS / 4; at += BATCH) {
      const records = recordsOf(at, BATCH)
      const start = performance.now()
      for (const r of records) recorder.add(r.ts, r.method, r.route, r.status, r.durationMs, r.userId, r.promptTokens, r.completionTokens, r.model)
      const flushed = performance.now()
      recorder.flush()
      flushing += performance.now() - flushed
      await recorder.settle()
      total += performance.now() - start
    }
    const batches = RECORDS / 4 / BATCH
    console.log(`${backend.padEnd(10)} recorder: flush ${ms(flushing / batches)} on the server's thread a batch; ${ms(total / batches)} a batch recorded and stored`)
    await recorder.close()
  }
  rmSync(folder, { recursive: true, force: true })
  const readers = { SQLite: new AnalyticsService(sqlite), PostgreSQL: new PostgresAnalyticsService(postgres) }
  for (const [backend, reader] of Object.entries(readers)) {
    const [, dashboard] = await timed(() => reader.dashboard())
    const [, series] = await timed(() => reader.metrics('1h'))
    const [count, exported] = await timed(async () => {
      let n = 0
      const rows = reader.exportRows('1h') as Iterable<unknown> | AsyncIterable<unknown>
      if (Symbol.asyncIterator in rows) for await (const _ of rows) n++
      else for (const _ of rows) n++
      return n
    })
    console.log(`${backend.padEnd(10)} reads: dashboard ${ms(dashboard)}, 1h series ${ms(series)}, export of ${count.toLocaleString('en')} rows ${ms(exported)}`)
  }
} finally {
  sqlite.close()
  await postgres?.close()
  await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  await admin.close()
}
