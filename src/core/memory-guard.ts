/**
 * Keeps the server's resident memory near what it uses. JavaScriptCore lets garbage pile up in
 * proportion to what is live before it collects, and counts large buffers as live: with a large
 * collection's vectors in memory (some 260 MB at 110,000 chunks, see rag/vectors/cache.ts), 300
 * searches left a few hundred MB of garbage resident before a collection came (440–780 MB in all).
 * So, from a timer (never inside a request), once the resident size has grown by `slackBytes`
 * since its last low point, a collection is asked for: Bun.gc(false) starts one on the
 * collector's threads and returns at once (about 0.5 ms), the requests running meanwhile go on.
 */
export interface MemoryGuardOptions {
  /** Growth of the resident size over its last low point that asks for a collection (default 64 MB). */
  slackBytes?: number
  /** How often the resident size is read (default 1 s). */
  intervalMs?: number
  /** The resident size now, in bytes (default: the process's). */
  resident?: () => number
  /** Asks for a collection without waiting for it (default: Bun.gc(false)). */
  collect?: () => void
}

export const MEMORY_SLACK_BYTES = 64 * 1024 * 1024

/** Reads the resident size and asks for a collection when it has grown by the slack (see above). */
export class MemoryGuard {
  private readonly slack: number
  private readonly resident: () => number
  private readonly collect: () => void
  private low: number

  constructor(options: MemoryGuardOptions = {}) {
    this.slack = options.slackBytes ?? MEMORY_SLACK_BYTES
    this.resident = options.resident ?? (() => process.memoryUsage.rss())
    this.collect = options.collect ?? (() => Bun.gc(false))
    this.low = this.resident()
  }

  /** One reading; true when it asked for a collection. */
  check(): boolean {
    const now = this.resident()
    if (now < this.low) this.low = now
    if (now - this.low <= this.slack) return false
    this.collect()
    // What the collection frees shows over the next readings, which lower `low` again.
    this.low = now
    return true
  }
}

/** Starts a guard reading every `intervalMs`; the function it returns stops it. Its timer never keeps the process alive. */
export function startMemoryGuard(options: MemoryGuardOptions = {}): () => void {
  const guard = new MemoryGuard(options)
  const timer = setInterval(() => guard.check(), options.intervalMs ?? 1000)
  ;(timer as { unref?: () => void }).unref?.()
  return () => clearInterval(timer)
}
