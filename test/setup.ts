// Preloaded before the test files (bunfig.toml), so its hooks span the whole run.
import { afterAll, setDefaultTimeout } from 'bun:test'
import { dropPostgresDatabases } from './postgres'
import { killLeftovers, leftRunning } from './processes'
import { removeTempDirs } from './temp'

// Bun reads no timeout from bunfig.toml (oven-sh/bun#7789); a plain `bun test` on a busy machine
// (argon2 hashing, spawned servers and workers) needs more than its 5 s default.
setDefaultTimeout(30_000)

// Every folder made with tempDir() goes when the run ends: the suite leaves no uagent-* behind.
afterAll(removeTempDirs)

// Every PostgreSQL database a test file made (UAGENT_TEST_DATABASE_URL) is dropped likewise.
afterAll(dropPostgresDatabases)

// Every process a test started (a server, redis-server, slapd, …) was stopped by its own file: one
// still running now is killed, and fails the run, naming it. A moment's grace first, for a process
// just told to stop (SIGTERM) that is still shutting down.
afterAll(async () => {
  for (let i = 0; i < 20 && leftRunning().length; i++) await Bun.sleep(100)
  const left = killLeftovers()
  if (left.length) throw new Error(`The tests left ${left.length} process(es) running (killed now): ${left.map(({ pid, command }) => `${pid} ${command}`).join('; ')}`)
})
