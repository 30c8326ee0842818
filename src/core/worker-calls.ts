/**
 * Calls answered by a worker thread, one reply each, matched by the `id` a call adds to its
 * message (the worker answers `{ id, … }`). The thread starts with the first call, and again with
 * the first call after it failed or was closed; calls in flight then are rejected. It keeps the
 * process alive only while a call is in flight: an idle thread never does, and a working one must,
 * or Bun's event loop, with nothing else to wait on, spins on the unreferenced worker's reply
 * instead of sleeping (a core burnt while the thread works).
 */
export class WorkerCalls {
  private worker: Worker | null = null
  private nextId = 0
  private readonly waiting = new Map<number, { resolve: (reply: any) => void; reject: (error: Error) => void }>()

  constructor(
    private readonly url: string,
    /** Options of each thread started (`workerData`…). */
    private readonly options?: WorkerOptions,
  ) {}

  /** Sends `message` (with its `transfer` list moved, not copied); resolves with the thread's reply. */
  call<Reply>(message: object, transfer: Transferable[] = []): Promise<Reply> {
    const worker = this.thread()
    const id = ++this.nextId
    if (this.waiting.size === 0) worker.ref()
    return new Promise<Reply>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject })
      worker.postMessage({ ...message, id }, transfer)
    })
  }

  /** Whether a thread is running. */
  get running(): boolean {
    return this.worker !== null
  }

  /** Stops the thread; calls in flight are rejected with `reason`. */
  close(reason = 'worker thread closed'): void {
    this.worker?.terminate()
    this.worker = null
    this.rejectAll(reason)
  }

  private thread(): Worker {
    if (this.worker) return this.worker
    const worker = new Worker(this.url, this.options)
    worker.addEventListener('message', (event: MessageEvent<{ id: number }>) => {
      const call = this.waiting.get(event.data.id)
      if (!call) return
      this.waiting.delete(event.data.id)
      if (this.waiting.size === 0) worker.unref()
      call.resolve(event.data)
    })
    worker.addEventListener('error', (event) => {
      // The thread is gone with what it had; the next call starts a new one.
      if (this.worker === worker) {
        this.worker = null
        this.rejectAll((event as ErrorEvent).message || 'worker thread failed')
      }
      worker.terminate()
    })
    worker.unref()
    this.worker = worker
    return worker
  }

  private rejectAll(reason: string): void {
    for (const [id, call] of [...this.waiting]) {
      this.waiting.delete(id)
      call.reject(new Error(reason))
    }
  }
}
