// Preloaded before the test files (bunfig.toml), so its hooks span the whole run.
import { plugin } from 'bun'
import { afterAll, setDefaultTimeout } from 'bun:test'
import { dropPostgresDatabases } from './postgres'
import { killLeftovers, leftRunning } from './processes'
import { removeTempDirs } from './temp'

// A plain `bun test` on a busy machine (argon2 hashing, spawned servers and workers) needs more than
// Bun's 5 s default per test. Bun reads no timeout from bunfig.toml (oven-sh/bun#7789), and a
// preload's setDefaultTimeout() reaches only the first test file of a run (oven-sh/bun#43787: the
// runner resets it after each file; every later file was back on 5 s, so a CLI test that spawns a
// few processes timed out mid-run, and the tests after it failed on what it left half done). So the
// call is put at the head of every test file as it loads: on its first line, so that line numbers
// in failures stay the file's own. A file's own setDefaultTimeout() further down still wins.
export const TEST_TIMEOUT_MS = 30_000
setDefaultTimeout(TEST_TIMEOUT_MS)
plugin({
  name: 'uagent-test-timeout',
  setup(build) {
    build.onLoad({ filter: /\.test\.tsx?$/ }, async ({ path }) => ({
      contents: `import { setDefaultTimeout as __uagentSetDefaultTimeout } from 'bun:test'; __uagentSetDefaultTimeout(${TEST_TIMEOUT_MS}); ${await Bun.file(path).text()}`,
      loader: path.endsWith('x') ? 'tsx' : 'ts',
    }))
  },
})

// Every folder made with tempDir() goes when the run ends: the suite leaves no uagent-* behind.
afterAll(removeTempDirs, 120_000)

// Every PostgreSQL database a test file made (UAGENT_TEST_DATABASE_URL) is dropped likewise. Each
// DROP DATABASE waits for a checkpoint, and a whole run makes over a hundred: on a busy machine that
// takes longer than a test's 30 s, so this hook has time of its own.
afterAll(dropPostgresDatabases, 180_000)

// Every process a test started (a server, redis-server, slapd, …) was stopped by its own file: one
// still running now is killed, and fails the run, naming it. A moment's grace first, for a process
// just told to stop (SIGTERM) that is still shutting down.
afterAll(async () => {
  for (let i = 0; i < 20 && leftRunning().length; i++) await Bun.sleep(100)
  const left = killLeftovers()
  if (left.length) throw new Error(`The tests left ${left.length} process(es) running (killed now): ${left.map(({ pid, command }) => `${pid} ${command}`).join('; ')}`)
})
