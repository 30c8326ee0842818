/**
 * The Redis server tests may use (UAGENT_TEST_REDIS_URL, e.g. redis://127.0.0.1:6390, set by
 * .ci/run). Unset: every test that needs Redis is skipped, and its name says why.
 */
export const TEST_REDIS_URL = process.env.UAGENT_TEST_REDIS_URL?.trim() || undefined
export const REDIS_SKIPPED = 'skipped: UAGENT_TEST_REDIS_URL is not set'

/** A Redis URL nothing listens on: a server given it runs as with Redis lost. */
export async function closedRedisUrl(): Promise<string> {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return `redis://127.0.0.1:${port}`
}
