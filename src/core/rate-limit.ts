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

/** Fixed-window counter per key (a user id, or an IP for anonymous callers). */
export class RateLimiter {
  private readonly windows = new Map<string, Window>()

  constructor(
    readonly max: number,
    readonly windowSeconds: number,
  ) {}

  /** Counts one request; throws 429 RATE_LIMITED (with Retry-After and the X-RateLimit-* headers) past the limit. */
  hit(key: string, now = Date.now()): RateDecision {
    let window = this.windows.get(key)
    if (!window || window.resetAt <= now) {
      if (this.windows.size > 10_000) this.sweep(now)
      window = { count: 0, resetAt: now + this.windowSeconds * 1000 }
      this.windows.set(key, window)
    }
    window.count++
    const decision = { limit: this.max, remaining: Math.max(0, this.max - window.count), reset: Math.ceil(window.resetAt / 1000) }
    if (window.count > this.max) {
      const retryAfter = Math.max(1, Math.ceil((window.resetAt - now) / 1000))
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
