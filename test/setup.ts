// Preloaded before the test files (bunfig.toml), so its hooks span the whole run.
import { afterAll, setDefaultTimeout } from 'bun:test'
import { removeTempDirs } from './temp'

// The machine running the suite may be busy (argon2 hashing, spawned servers): a test gets 30 s
// before it counts as hung.
setDefaultTimeout(30_000)

// Every folder made with tempDir() goes when the run ends: the suite leaves no uagent-* behind.
afterAll(removeTempDirs)
