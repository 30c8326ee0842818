import { Elysia } from 'elysia'
import { type Handler, wrapHandlers } from './wrap-handlers'

/** How long an admitted request may keep its place before it stops counting (see Admission). */
export const DEFAULT_LEASE_MS = 50

interface Lease {
  readonly at: number
  done: boolean
}

/**
 * At most `limit` requests are worked on at once; those that come while that many are under way
 * wait, in order of arrival, for one of them to end (UAGENT_MAX_ACTIVE_REQUESTS).
 *
 * Why: the server has one JavaScript thread, and a request that waits on the database or Redis
 * goes back to the end of that thread's queue each time it is answered. With every arriving
 * request let in at once, a search (a Redis round trip and three queries) waited behind the whole
 * crowd four times, a health check once: under 64 users on PostgreSQL + Redis, p99 from 58 ms
 * (/health) to 168 ms (search) for the same mean. Admitted in order, a request waits once, at the
 * door, and its round trips then queue behind at most `limit` others (docs/postgresql.md, "Under
 * load").
 *
 * A request counts until its handler has its response (a stream's body goes on without it), or for
 * `leaseMs` at most: a long one (a model generating, an upload, speech waiting for a worker) then
 * stops counting, so that slow requests can hold back the others by `leaseMs` at most, never stop
 * them. Requests that find a free place pay no timer and no promise.
 */
export class Admission {
  private active = 0
  private readonly waiting: ((lease: Lease) => void)[] = []
  /** Leases in order of admission (done ones are dropped from the front). */
  private readonly leases: Lease[] = []
  private timer: ReturnType<typeof setTimeout> | null = null

  constructor(
    readonly limit: number,
    readonly leaseMs = DEFAULT_LEASE_MS,
  ) {}

  /** A place now, or a promise of one once a request ahead ends or outlives its lease. */
  enter(): Lease | Promise<Lease> {
    if (this.active < this.limit) return this.admit()
    return new Promise<Lease>((resolve) => {
      this.waiting.push(resolve)
      this.arm()
    })
  }

  /** The request of `lease` has its response (or failed): its place goes to the next in line. */
  leave(lease: Lease): void {
    if (lease.done) return
    lease.done = true
    this.handOn()
    while (this.leases.length && this.leases[0]!.done) this.leases.shift()
  }

  /** Requests waiting for a place (for tests and metrics). */
  get queued(): number {
    return this.waiting.length
  }

  /** Requests counted as under way. */
  get running(): number {
    return this.active
  }

  private admit(): Lease {
    this.active++
    const lease = { at: performance.now(), done: false }
    this.leases.push(lease)
    return lease
  }

  /** One place freed: the first waiting request takes it, or it stays free. */
  private handOn(): void {
    this.active--
    const next = this.waiting.shift()
    if (next) next(this.admit())
  }

  /** While requests wait, wakes when the oldest lease runs out. */
  private arm(): void {
    if (this.timer || !this.waiting.length) return
    const oldest = this.leases.find((lease) => !lease.done)
    if (!oldest) return
    this.timer = setTimeout(() => this.expire(), Math.max(1, oldest.at + this.leaseMs - performance.now()))
  }

  private expire(): void {
    this.timer = null
    const now = performance.now()
    while (this.leases.length && (this.leases[0]!.done || this.leases[0]!.at + this.leaseMs <= now)) {
      const lease = this.leases.shift()!
      if (lease.done) continue
      lease.done = true
      this.handOn()
    }
    this.arm()
  }
}

/**
 * The admission of every request (see Admission), as a wrapper of the app's fetch handler like the
 * analytics recording's (src/modules/analytics/recording.ts), which is used after it and so wraps
 * it: a request's recorded duration includes its wait at the door. `limit` 0: no limit.
 */
export function admission(limit: number, leaseMs = DEFAULT_LEASE_MS) {
  const plugin = new Elysia({ name: 'http-admission' })
  if (limit <= 0) return plugin
  const door = new Admission(limit, leaseMs)
  const run = (handle: Handler, request: Request, lease: Lease): unknown => {
    let result: unknown
    try {
      result = handle(request)
    } catch (error) {
      door.leave(lease)
      throw error
    }
    if (result instanceof Promise && Bun.peek.status(result) === 'pending') {
      return result.then(
        (response) => {
          door.leave(lease)
          return response
        },
        (error) => {
          door.leave(lease)
          throw error
        },
      )
    }
    door.leave(lease)
    return result
  }
  const wrap = (handle: Handler): Handler => (request) => {
    const lease = door.enter()
    return lease instanceof Promise ? lease.then((admitted) => run(handle, request, admitted)) : run(handle, request, lease)
  }
  return wrapHandlers(plugin, 'admitted', wrap)
}
