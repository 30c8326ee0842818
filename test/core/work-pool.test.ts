import { afterEach, describe, expect, test } from 'bun:test'
import { AppError } from '../../src/core/errors'
import { WorkerStopped, WorkPool, workKind } from '../../src/core/work-pool'

const fixture = (name: string) => new URL(`../fixtures/work/${name}.work.ts`, import.meta.url).href
const BLOCK = workKind<{ ms: number }, number>('block', fixture('block'))
const CRASH = workKind<Record<string, never>, never>('crash', fixture('crash'))
const FAIL = workKind<{ app: boolean }, never>('fail', fixture('fail'))
const CANCELLABLE = workKind<{ ms: number; ignore?: boolean }, string>('cancellable', fixture('cancellable'))
const PROGRESS = workKind<{ steps: number; ms: number }, number, { done: number; of: number }>('progress', fixture('progress'))

let pools: WorkPool[] = []
function pool(size: number, queueLimit: number, log: (line: string) => void = () => {}) {
  const made = new WorkPool({ size, queueLimit, log })
  pools.push(made)
  return made
}
afterEach(() => {
  for (const made of pools) made.close()
  pools = []
})

/** Resolves once `check` holds (polled), or fails after two seconds. */
async function until(check: () => boolean) {
  const deadline = Date.now() + 2000
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting')
    await Bun.sleep(5)
  }
}

describe('WorkPool', () => {
  test('starts no worker until work comes, then one per task up to its size, and reports their heap', async () => {
    const workers = pool(2, 4)
    expect(workers.state()).toMatchObject({ size: 2, started: 0, busy: 0, queued: 0, heapBytes: 0 })
    expect(await Promise.all([workers.run(BLOCK, { ms: 50 }), workers.run(BLOCK, { ms: 50 }), workers.run(BLOCK, { ms: 1 })])).toEqual([50, 50, 1])
    const state = workers.state()
    expect(state).toMatchObject({ started: 2, busy: 0, queued: 0, completed: 3 })
    expect(state.heapBytes).toBeGreaterThan(0)
  })

  test('beyond the queue: 503 BUSY with a Retry-After of at least 1 s; the queued work still runs', async () => {
    const workers = pool(1, 1)
    const running = workers.run(BLOCK, { ms: 200 })
    const queued = workers.run(BLOCK, { ms: 1 })
    const refused = await workers.run(BLOCK, { ms: 1 }).catch((error) => error)
    expect(refused).toBeInstanceOf(AppError)
    expect(refused).toMatchObject({ code: 'BUSY', status: 503 })
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    expect(await Promise.all([running, queued])).toEqual([200, 1])
    expect(workers.state()).toMatchObject({ completed: 2, queued: 0 })
  })

  test('an aborted signal takes a waiting task out of the queue, and stops the worker of a running one', async () => {
    const workers = pool(1, 4)
    const first = new AbortController()
    const second = new AbortController()
    const running = workers.run(BLOCK, { ms: 5000 }, { signal: first.signal }).catch((error) => error)
    const waiting = workers.run(BLOCK, { ms: 5000 }, { signal: second.signal }).catch((error) => error)
    await until(() => workers.state().busy === 1 && workers.state().queued === 1)
    second.abort()
    expect((await waiting).name).toBe('AbortError')
    expect(workers.state()).toMatchObject({ queued: 0, busy: 1 })
    const started = performance.now()
    first.abort()
    expect((await running).name).toBe('AbortError')
    // The five-second task did not run to its end: its worker was stopped.
    expect(performance.now() - started).toBeLessThan(1000)
    expect(workers.state()).toMatchObject({ started: 0, busy: 0, cancelled: 2, completed: 0 })
    // The next task starts a new worker.
    expect(await workers.run(BLOCK, { ms: 1 })).toBe(1)
    expect(workers.state()).toMatchObject({ started: 1, completed: 1 })
  })

  test('a signal already aborted runs nothing', async () => {
    const workers = pool(1, 4)
    const error = await workers.run(BLOCK, { ms: 1 }, { signal: AbortSignal.abort() }).catch((e) => e)
    expect(error.name).toBe('AbortError')
    expect(workers.state()).toMatchObject({ started: 0, completed: 0 })
  })

  test('a crashed worker fails its own task with 500 (logged), the others finish, and the pool heals', async () => {
    const lines: string[] = []
    const workers = pool(2, 4, (line) => lines.push(line))
    const [crashed, other] = await Promise.allSettled([workers.run(CRASH, {}), workers.run(BLOCK, { ms: 100 })])
    expect(crashed.status).toBe('rejected')
    const reason = (crashed as PromiseRejectedResult).reason
    expect(reason).toBeInstanceOf(AppError)
    expect(reason).toMatchObject({ code: 'INTERNAL_ERROR', status: 500 })
    expect(reason.message).toContain('crash task stopped (exit code 7)')
    expect(other).toEqual({ status: 'fulfilled', value: 100 })
    expect(lines.some((line) => line.includes('while running a crash task'))).toBe(true)
    expect(workers.state()).toMatchObject({ crashed: 1, completed: 1, started: 1 })
    expect(await Promise.all([workers.run(BLOCK, { ms: 30 }), workers.run(BLOCK, { ms: 30 })])).toEqual([30, 30])
    expect(workers.state()).toMatchObject({ started: 2, completed: 3 })
  })

  test("a task's own error comes back as it was thrown: an AppError keeps its code, another stays a plain error (500)", async () => {
    const workers = pool(1, 4)
    const app = await workers.run(FAIL, { app: true }).catch((e) => e)
    expect(app).toBeInstanceOf(AppError)
    expect(app).toMatchObject({ code: 'VALIDATION_ERROR', status: 400, message: 'text: not speakable' })
    const other = await workers.run(FAIL, { app: false }).catch((e) => e)
    expect(other).not.toBeInstanceOf(AppError)
    expect(other).toMatchObject({ name: 'TypeError', message: 'something broke' })
    // The worker survived both: same worker, no crash.
    expect(workers.state()).toMatchObject({ started: 1, failed: 2, crashed: 0 })
  })

  test('a closed pool refuses work and stops its workers', async () => {
    const workers = pool(1, 4)
    const running = workers.run(BLOCK, { ms: 5000 }).catch((e) => e)
    await until(() => workers.state().busy === 1)
    workers.close()
    expect(await running).toMatchObject({ code: 'INTERNAL_ERROR' })
    expect(workers.state().started).toBe(0)
    expect(await workers.run(BLOCK, { ms: 1 }).catch((e) => e)).toMatchObject({ code: 'INTERNAL_ERROR' })
  })

  test('a task reports progress to its caller, in order, while it runs; another task gets none of it', async () => {
    const workers = pool(1, 4)
    const events: { done: number; of: number }[] = []
    const others: unknown[] = []
    let startedAt = 0
    const steps = workers.run(PROGRESS, { steps: 4, ms: 80 }, { onProgress: (event) => events.push(event), onStart: () => (startedAt = performance.now()) })
    const after = workers.run(BLOCK, { ms: 1 }, { onProgress: (event: never) => others.push(event) })
    // Progress arrives before the task ends, not all at once with its answer.
    await until(() => events.length >= 1)
    expect(events.length).toBeLessThan(4)
    expect(startedAt).toBeGreaterThan(0)
    expect(await steps).toBe(4)
    expect(events).toEqual([1, 2, 3, 4].map((done) => ({ done, of: 4 })))
    expect(await after).toBe(1)
    expect(others).toEqual([])
  })

  test('waitWhenBusy: background work waits in the queue past its limit instead of 503 BUSY; onStart is called when a worker takes it', async () => {
    const workers = pool(1, 0)
    const running = workers.run(BLOCK, { ms: 150 })
    expect(await workers.run(BLOCK, { ms: 1 }).catch((e) => e)).toMatchObject({ code: 'BUSY' })
    let started = false
    const waiting = workers.run(BLOCK, { ms: 1 }, { waitWhenBusy: true, onStart: () => (started = true) })
    expect(workers.state().queued).toBe(1)
    expect(started).toBe(false)
    expect(await Promise.all([running, waiting])).toEqual([150, 1])
    expect(started).toBe(true)
  })

  test('a task whose worker died fails with WorkerStopped (a 500 AppError), which callers can tell from the task\'s own errors', async () => {
    const workers = pool(1, 4)
    const crashed = await workers.run(CRASH, {}).catch((e) => e)
    expect(crashed).toBeInstanceOf(WorkerStopped)
    expect(crashed).toMatchObject({ code: 'INTERNAL_ERROR', status: 500 })
    expect(await workers.run(FAIL, { app: false }).catch((e) => e)).not.toBeInstanceOf(WorkerStopped)
  })

  test('cancelGraceMs: an aborted task sees its signal in the worker and stops there, keeping its worker; one that does not stop in time has its thread ended', async () => {
    const workers = pool(1, 4)
    const polite = new AbortController()
    const first = workers.run(CANCELLABLE, { ms: 5000 }, { signal: polite.signal, cancelGraceMs: 1000 }).catch((e) => e)
    await until(() => workers.state().busy === 1)
    const at = performance.now()
    polite.abort()
    expect((await first).name).toBe('AbortError')
    expect(performance.now() - at).toBeLessThan(900)
    expect(workers.state()).toMatchObject({ started: 1, busy: 0, cancelled: 1 })
    // The same worker takes the next task.
    expect(await workers.run(CANCELLABLE, { ms: 1 })).toBe('done')
    expect(workers.state()).toMatchObject({ started: 1, completed: 1 })

    const deaf = new AbortController()
    const second = workers.run(CANCELLABLE, { ms: 5000, ignore: true }, { signal: deaf.signal, cancelGraceMs: 100 }).catch((e) => e)
    await until(() => workers.state().busy === 1)
    deaf.abort()
    expect((await second).name).toBe('AbortError')
    expect(workers.state()).toMatchObject({ started: 0, busy: 0, cancelled: 2, crashed: 0 })
  })
})
