/// <reference lib="webworker" />
// A worker of the WorkPool: runs one task at a time, each with the `run` export of its kind's
// module, imported on the kind's first task and kept (so what the module loads, it loads once).
// After each task it reports its JavaScript heap, which /health adds up.
import { heapSize } from 'bun:jsc'
import { niceThisThread } from './thread-priority'

declare const self: Worker

interface TaskMessage {
  id: number
  kind: string
  url: string
  payload: unknown
}

/**
 * Niceness of a worker thread (Linux: per thread): when the request thread and a worker want the
 * same core, the scheduler gives it to the request thread, so cheap requests stay quick while
 * speech or extraction runs; on an otherwise idle core the worker runs at full speed all the same.
 * 5, not more: against other busy processes of the machine (nice 0), workers at 10 did about a third
 * of the work they did at 0 (bench/busy.ts on a shared, overloaded 2-core machine), at 5 about half.
 */
export const WORKER_NICENESS = 5

niceThisThread(WORKER_NICENESS)

type Runner = (payload: unknown, transfer: Transferable[], task: { progress(event: unknown): void; signal: AbortSignal }) => unknown
const runners = new Map<string, Promise<Runner>>()

function runnerOf(kind: string, url: string): Promise<Runner> {
  let runner = runners.get(url)
  if (!runner) {
    runner = import(url).then((module: { run?: Runner }) => {
      if (typeof module.run !== 'function') throw new Error(`the module of work kind ${kind} has no run export`)
      return module.run
    })
    // A module that failed to load is tried again by the next task.
    runner.catch(() => runners.delete(url))
    runners.set(url, runner)
  }
  return runner
}

/** The signals of the tasks under way here, aborted by a `{ cancel: id }` message. */
const cancels = new Map<number, AbortController>()

self.addEventListener('message', async (event: MessageEvent<TaskMessage | { cancel: number }>) => {
  if ('cancel' in event.data) {
    cancels.get(event.data.cancel)?.abort(new DOMException('The request went away', 'AbortError'))
    return
  }
  const { id, kind, url, payload } = event.data
  const transfer: Transferable[] = []
  const cancel = new AbortController()
  cancels.set(id, cancel)
  try {
    const value = await (await runnerOf(kind, url))(payload, transfer, { progress: (event) => self.postMessage({ id, progress: event }), signal: cancel.signal })
    self.postMessage({ id, ok: true, value, heap: heapSize() }, transfer)
  } catch (error) {
    const { name = 'Error', message = String(error), code } = (error ?? {}) as { name?: string; message?: string; code?: unknown }
    self.postMessage({ id, ok: false, error: { name, message, ...(typeof code === 'string' ? { code } : {}) }, heap: heapSize() })
  } finally {
    cancels.delete(id)
  }
})
