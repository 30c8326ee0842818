import { AsyncLocalStorage } from 'node:async_hooks'
import type { Postgres } from './postgres'

/** What a measured pool reports: how long each query or transaction waited for a connection, and each query made. */
export interface PoolObserver {
  /** A query or transaction got a connection after waiting `seconds` for one. */
  waited(seconds: number): void
}

/** The queries made on behalf of one request (counted while it is answered). */
export interface RequestQueries {
  count: number
}

/** Made by the first count: a server on SQLite never has one (no async context to carry). */
let requestQueries: AsyncLocalStorage<RequestQueries> | null = null

/** Runs `work` with a fresh query count, the queries it makes (and the promises it starts) count there. */
export function countingQueries<T>(counter: RequestQueries, work: () => T): T {
  requestQueries ??= new AsyncLocalStorage<RequestQueries>()
  return requestQueries.run(counter, work)
}

/**
 * The pool's connections as slots, to measure how long queries wait for one. Bun's pool never
 * makes a query wait for a free connection: once every connection is busy it sends the query on
 * the least busy one, behind the queries already sent there, which PostgreSQL answers one after
 * the other (a transaction waits for a connection of its own). The slots count that wait without
 * adding any: a query (or a whole transaction) takes a slot when one is free, else it queues for
 * one in order, and the slot it waited for is handed to it when a query ahead of it ends; it runs
 * at once all the same. A query that ends before a slot came to it waited all its time.
 */
export class PoolSlots {
  private busy = 0
  private readonly waiting: Waiter[] = []

  constructor(
    readonly size: number,
    private readonly observer: PoolObserver,
  ) {}

  /** Slots in use now. */
  get inUse(): number {
    return this.busy
  }

  /** Queries queued for a slot now. */
  get queued(): number {
    return this.waiting.length
  }

  /** Takes a slot, or a place in the queue for one; the function to call when the query ends. */
  take(): () => void {
    if (this.busy < this.size) {
      this.busy++
      this.observer.waited(0)
      return this.giveBack()
    }
    const waiter: Waiter = { asked: performance.now(), granted: false }
    this.waiting.push(waiter)
    let ended = false
    return () => {
      if (ended) return
      ended = true
      if (waiter.granted) return this.release()
      // Ended while still queued: all its time was waiting.
      this.waiting.splice(this.waiting.indexOf(waiter), 1)
      this.observer.waited((performance.now() - waiter.asked) / 1000)
    }
  }

  private giveBack(): () => void {
    let given = false
    return () => {
      if (given) return
      given = true
      this.release()
    }
  }

  /** A slot is free: to the first in the queue (busy stays the same), or free for the next query. */
  private release(): void {
    const next = this.waiting.shift()
    if (!next) {
      this.busy--
      return
    }
    next.granted = true
    this.observer.waited((performance.now() - next.asked) / 1000)
  }
}

interface Waiter {
  asked: number
  granted: boolean
}

/** A Bun SQL query: a promise that runs its query the first time it is awaited. */
type Query = { then: Function; catch: Function; finally: Function }

const isTemplate = (value: unknown): value is TemplateStringsArray => Array.isArray(value) && 'raw' in value

function count(): void {
  const counter = requestQueries?.getStore()
  if (counter) counter.count++
}

/**
 * A query that, once awaited, counts for the request it runs for and takes a slot while it runs
 * (none inside a transaction, whose connection is already held). Not awaited, it is a fragment of
 * another query (sql`ORDER BY id`) and neither counts nor takes a slot.
 */
function measured(query: Query, slots: PoolSlots | null): Query {
  const then = query.then
  let result: Promise<unknown> | null = null
  const run = async () => {
    count()
    const release = slots?.take()
    try {
      return await new Promise((resolve, reject) => then.call(query, resolve, reject))
    } finally {
      release?.()
    }
  }
  query.then = (onFulfilled?: (value: unknown) => unknown, onRejected?: (reason: unknown) => unknown) => (result ??= run()).then(onFulfilled, onRejected)
  query.catch = (onRejected?: (reason: unknown) => unknown) => (result ??= run()).catch(onRejected)
  query.finally = (onFinally?: () => void) => (result ??= run()).finally(onFinally)
  return query
}

/**
 * The pool `sql` as the stores use it, measured: every query counts for the request it is made
 * for (countingQueries), and how long it waited for one of the pool's connections is measured in
 * `slots` (a transaction or a reserved connection holds one until it ends); nothing is delayed.
 * Everything else (helpers such as sql(ids), close(), options) is the pool's own.
 */
export function measuredPostgres(sql: Postgres, slots: PoolSlots): Postgres {
  if ((sql as unknown as Record<symbol, unknown>)[MEASURED]) return sql
  return wrap(sql, slots)
}

const MEASURED = Symbol('measured pool')

/** The pool size a Bun SQL pool was opened with. */
export function poolSize(sql: Postgres): number {
  const max = Number((sql as unknown as { options?: { max?: number } }).options?.max)
  return Number.isInteger(max) && max > 0 ? max : 10
}

function wrap(sql: Postgres, slots: PoolSlots | null): Postgres {
  const held = async <T>(work: () => Promise<T>): Promise<T> => {
    const release = slots?.take()
    try {
      return await work()
    } finally {
      release?.()
    }
  }
  return new Proxy(sql, {
    apply(target, _this, args: unknown[]) {
      const result = Reflect.apply(target as unknown as Function, target, args)
      return isTemplate(args[0]) ? measured(result as Query, slots) : result
    },
    get(target, property) {
      if (property === MEASURED) return true
      const value = Reflect.get(target, property, target)
      if (typeof value !== 'function') return value
      switch (property) {
        case 'unsafe':
        case 'file':
          return (...args: unknown[]) => measured(value.apply(target, args) as Query, slots)
        case 'begin':
        case 'transaction':
          return (...args: unknown[]) => {
            const body = args.findIndex((arg) => typeof arg === 'function')
            const run = args[body] as (tx: Postgres) => unknown
            // Inside, queries go to the transaction's own connection: counted, never waiting for a slot.
            args[body] = (tx: Postgres) => run(wrap(tx, null))
            return held(() => value.apply(target, args))
          }
        case 'savepoint':
          return (...args: unknown[]) => {
            const body = args.findIndex((arg) => typeof arg === 'function')
            const run = args[body] as (tx: Postgres) => unknown
            args[body] = (tx: Postgres) => run(wrap(tx, null))
            return value.apply(target, args)
          }
        case 'reserve':
          return async () => {
            const release = slots?.take()
            try {
              const reserved = await value.apply(target)
              const giveBack = reserved.release.bind(reserved)
              const measuredReserved = wrap(reserved, null) as Postgres & { release(): void }
              Object.defineProperty(measuredReserved, 'release', {
                value: () => {
                  giveBack()
                  release?.()
                },
              })
              return measuredReserved
            } catch (error) {
              release?.()
              throw error
            }
          }
        default:
          return value.bind(target)
      }
    },
  }) as Postgres
}
