import { AppError } from './errors'

interface Window {
  count: number
  resetAt: number
}

export interface RateDecision {
  limit: number
  remaining: number
  /** Unix seconds when the window resets. */
  reset: number
}

/**
 * A counter every replica shares (Redis): `incr` adds one to a window's key and answers the
 * window's total so far. While `healthy` is false the limiter counts on its own.
 */
export interface SharedCounter {
  readonly healthy: boolean
  incr(key: string, ttlMs: number): Promise<number>
  /** A failed incr: the counter is marked lost (logged once by its owner). */
  lostWith(error: unknown): void
}

/**
 * Fixed-window counter per key (a user id, or an IP for anonymous callers).
 *
 * Alone, each window starts at a key's first request and `hit` answers at once. With a shared
 * counter (several replicas, UAGENT_REDIS_URL), windows are aligned to the clock
 * (`floor(now / window)`) so that every replica counts the same window, and `hit` answers once
 * the shared counter has: one window counts the requests made on all replicas. When the shared
 * counter cannot be reached, each replica falls back to its own window at once (the counter's
 * owner logs that once) and goes back to the shared one when it answers again.
 */
export class RateLimiter {
  private readonly windows = new Map<string, Window>()

  constructor(
    readonly max: number,
    readonly windowSeconds: number,
    private readonly shared: SharedCounter | null = null,
  ) {}

  /** Whether hit() may answer with a promise (a shared counter is configured). */
  get asynchronous(): boolean {
    return this.shared !== null
  }

  /** Counts one request; throws (or rejects with) 429 RATE_LIMITED (with Retry-After and the X-RateLimit-* headers) past the limit. */
  hit(key: string, now = Date.now()): RateDecision | Promise<RateDecision> {
    if (this.shared?.healthy) return this.sharedHit(key, now)
    return this.localHit(key, now)
  }

  private async sharedHit(key: string, now: number): Promise<RateDecision> {
    const windowMs = this.windowSeconds * 1000
    const start = Math.floor(now / windowMs) * windowMs
    let count: number
    try {
      count = await this.shared!.incr(`${key}:${start}`, windowMs + 1000)
    } catch (error) {
      this.shared!.lostWith(error)
      return this.localHit(key, now)
    }
    return this.decide(count, start + windowMs, now)
  }

  private localHit(key: string, now: number): RateDecision {
    let window = this.windows.get(key)
    if (!window || window.resetAt <= now) {
      if (this.windows.size > 10_000) this.sweep(now)
      window = { count: 0, resetAt: now + this.windowSeconds * 1000 }
      this.windows.set(key, window)
    }
    window.count++
    return this.decide(window.count, window.resetAt, now)
  }

  private decide(count: number, resetAt: number, now: number): RateDecision {
    const decision = { limit: this.max, remaining: Math.max(0, this.max - count), reset: Math.ceil(resetAt / 1000) }
    if (count > this.max) {
      const retryAfter = Math.max(1, Math.ceil((resetAt - now) / 1000))
      throw new AppError('RATE_LIMITED', `Rate limit of ${this.max} requests per ${this.windowSeconds} s exceeded; retry in ${retryAfter} s`, {
        headers: { 'retry-after': String(retryAfter), ...rateLimitHeaders(decision) },
      })
    }
    return decision
  }

  private sweep(now: number): void {
    for (const [key, window] of this.windows) if (window.resetAt <= now) this.windows.delete(key)
  }
}

export function rateLimitHeaders(decision: RateDecision): Record<string, string> {
  return {
    'x-ratelimit-limit': String(decision.limit),
    'x-ratelimit-remaining': String(decision.remaining),
    'x-ratelimit-reset': String(decision.reset),
  }
}
