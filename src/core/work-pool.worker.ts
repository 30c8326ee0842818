/// <reference lib="webworker" />
// A worker of the WorkPool: runs one task at a time, each with the `run` export of its kind's
// module, imported on the kind's first task and kept (so what the module loads, it loads once).
// After each task it reports its JavaScript heap, which /health adds up.
import { heapSize } from 'bun:jsc'

declare const self: Worker

interface TaskMessage {
  id: number
  kind: string
  url: string
  payload: unknown
}

type Runner = (payload: unknown, transfer: Transferable[]) => unknown
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

self.addEventListener('message', async (event: MessageEvent<TaskMessage>) => {
  const { id, kind, url, payload } = event.data
  const transfer: Transferable[] = []
  try {
    const value = await (await runnerOf(kind, url))(payload, transfer)
    self.postMessage({ id, ok: true, value, heap: heapSize() }, transfer)
  } catch (error) {
    const { name = 'Error', message = String(error), code } = (error ?? {}) as { name?: string; message?: string; code?: unknown }
    self.postMessage({ id, ok: false, error: { name, message, ...(typeof code === 'string' ? { code } : {}) }, heap: heapSize() })
  }
})
