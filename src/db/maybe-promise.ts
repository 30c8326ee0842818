/**
 * A value now (a SQLite adapter) or later (a PostgreSQL adapter). Stores on a hot path (API keys,
 * agent tasks) answer with plain values on SQLite, so that the code using them stays synchronous
 * there, exactly as it was; the same code awaits PostgreSQL's answers.
 */
export type MaybePromise<T> = T | Promise<T>

/** Applies `next` to a value, at once or when it arrives. */
export function andThen<T, R>(value: MaybePromise<T>, next: (value: T) => MaybePromise<R>): MaybePromise<R> {
  return value instanceof Promise ? value.then(next) : next(value)
}

/** Runs a write whose answer nobody waits for; a failure of a later one is logged rather than lost. */
export function whenDone(value: MaybePromise<unknown>, onError: (error: unknown) => void): void {
  if (value instanceof Promise) value.catch(onError)
}
