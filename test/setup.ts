// Preloaded before the test files (bunfig.toml), so its hooks span the whole run.
import { afterAll, setDefaultTimeout } from 'bun:test'
import { dropPostgresDatabases } from './postgres'
import { removeTempDirs } from './temp'

// Bun reads no timeout from bunfig.toml (oven-sh/bun#7789); a plain `bun test` on a busy machine
// (argon2 hashing, spawned servers and workers) needs more than its 5 s default.
setDefaultTimeout(30_000)

// Every folder made with tempDir() goes when the run ends: the suite leaves no uagent-* behind.
afterAll(removeTempDirs)

// Every PostgreSQL database a test file made (UAGENT_TEST_DATABASE_URL) is dropped likewise.
afterAll(dropPostgresDatabases)
