// Preloaded before every test file (bunfig.toml): the machine running the suite may be busy
// (argon2 hashing, spawned servers), so a test gets 30 s before it counts as hung.
import { setDefaultTimeout } from 'bun:test'

setDefaultTimeout(30_000)
