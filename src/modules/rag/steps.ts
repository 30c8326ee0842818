import type { MaybePromise } from '../../db/maybe-promise'

/**
 * Steps that wait on a store (SQLite: answers at once; PostgreSQL: promises), written once as a
 * generator: `const row = yield* wait(store.findCollection(...))`. `runSteps` drives it
 * synchronously for as long as the answers are plain values, so the SQLite path stays
 * synchronous (and as fast) as it was, and switches to awaiting at the first promise.
 */
export type Steps<T> = Generator<unknown, T, unknown>

/** One store answer inside steps (see runSteps). */
export function* wait<T>(value: MaybePromise<T>): Generator<MaybePromise<T>, T, unknown> {
  return (yield value) as T
}

/** Runs steps: a plain value when no step gave a promise, else a promise of it. */
export function runSteps<T>(steps: Steps<T>): MaybePromise<T> {
  let next = steps.next()
  while (!next.done) {
    if (next.value instanceof Promise) return continueAsync(steps, next.value)
    next = steps.next(next.value)
  }
  return next.value
}

async function continueAsync<T>(steps: Steps<T>, pending: Promise<unknown>): Promise<T> {
  let waiting: unknown = pending
  for (;;) {
    let next: IteratorResult<unknown, T>
    let value: unknown
    let failed = false
    try {
      value = await waiting
    } catch (error) {
      failed = true
      value = error
    }
    // A failed answer is thrown into the steps, where a try/catch may handle it.
    next = failed ? steps.throw(value) : steps.next(value)
    if (next.done) return next.value
    waiting = next.value
  }
}
