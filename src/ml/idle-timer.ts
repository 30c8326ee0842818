/**
 * An abort signal that fires after `ms` without a `touch()`: a limit on silence, not on the whole
 * transfer, so a slow peer that keeps sending is never cut off. Used for model servers and hubs.
 */
export class IdleTimer {
  private readonly controller = new AbortController()
  private timer: ReturnType<typeof setTimeout>

  constructor(readonly ms: number) {
    this.timer = setTimeout(() => this.controller.abort(), ms)
  }

  get signal(): AbortSignal {
    return this.controller.signal
  }

  get fired(): boolean {
    return this.controller.signal.aborted
  }

  touch(): void {
    clearTimeout(this.timer)
    if (!this.fired) this.timer = setTimeout(() => this.controller.abort(), this.ms)
  }

  clear(): void {
    clearTimeout(this.timer)
  }
}
