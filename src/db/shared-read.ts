/**
 * A read of shared state (a registry in PostgreSQL) that many callers need fresh: each caller gets
 * the outcome of a read started after it asked, and the callers that ask while a read is under way
 * share the next one. Under load that is one query per round trip instead of one per request.
 */
export class SharedRead {
  private running: Promise<void> | null = null
  private next: Promise<void> | null = null

  constructor(private readonly read: () => Promise<void>) {}

  run(): Promise<void> {
    if (!this.running) return this.start()
    this.next ??= this.running
      .catch(() => {})
      .then(() => {
        this.next = null
        return this.start()
      })
    return this.next
  }

  private start(): Promise<void> {
    const reading = this.read().finally(() => {
      if (this.running === reading) this.running = null
    })
    this.running = reading
    return reading
  }
}
