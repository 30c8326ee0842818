// Latencies and failures per route, as the load generators (bench/mixed-users.ts,
// bench/team-users.ts) note them, and the summary they print.

export interface RouteFigures {
  count: number
  errors: number
  p50: number
  p99: number
  /** p99 of the requests begun after `settledAfter` (see RouteTimings), when it is set. */
  settledP99?: number
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0
}

export class RouteTimings {
  private readonly latencies = new Map<string, number[]>()
  private readonly settled = new Map<string, number[]>()
  private readonly failures = new Map<string, number>()
  /** The first few failures, as `<route>: <status or error>`. */
  readonly firstErrors: string[] = []

  /**
   * `settledAfter` (a performance.now() time): the requests begun after it also make a p99 of their
   * own, without the first burst of a start (every user's first requests at once, on a cold server).
   */
  constructor(private readonly settledAfter?: number) {}

  /** Times one request of `route` (its body read by `read`); a status >= 400 or a thrown error counts as a failure. */
  async timed(route: string, run: () => Promise<Response>, read: (response: Response) => Promise<unknown> = (response) => response.arrayBuffer()): Promise<void> {
    const started = performance.now()
    let ok = false
    try {
      const response = await run()
      await read(response)
      ok = response.status < 400
      if (!ok && this.firstErrors.length < 5) this.firstErrors.push(`${route}: ${response.status}`)
    } catch (error) {
      if (this.firstErrors.length < 5) this.firstErrors.push(`${route}: ${(error as Error).message}`)
    }
    const took = performance.now() - started
    const list = this.latencies.get(route) ?? []
    list.push(took)
    this.latencies.set(route, list)
    if (this.settledAfter !== undefined && started >= this.settledAfter) {
      const later = this.settled.get(route) ?? []
      later.push(took)
      this.settled.set(route, later)
    }
    if (!ok) this.failures.set(route, (this.failures.get(route) ?? 0) + 1)
  }

  /** `{ routes: { [route]: { count, errors, p50, p99 } }, errors, requests }`. */
  summary(): { routes: Record<string, RouteFigures>; errors: string[]; requests: number } {
    const routes: Record<string, RouteFigures> = {}
    let requests = 0
    for (const [route, values] of this.latencies) {
      requests += values.length
      routes[route] = { count: values.length, errors: this.failures.get(route) ?? 0, p50: percentile(values, 50), p99: percentile(values, 99) }
      if (this.settledAfter !== undefined) routes[route].settledP99 = percentile(this.settled.get(route) ?? [], 99)
    }
    return { routes, errors: this.firstErrors, requests }
  }
}
