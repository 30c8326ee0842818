// Preloaded before the test files (bunfig.toml), so its hooks span the whole run.
import { afterAll } from 'bun:test'
import { removeTempDirs } from './temp'

// Every folder made with tempDir() goes when the run ends: the suite leaves no uagent-* behind.
afterAll(removeTempDirs)
