/** Bridges a callback producer (a streamer) to an async iterator consumer. */
export class PieceQueue implements AsyncIterable<string> {
  private readonly pieces: string[] = []
  private done = false
  private failure: unknown = null
  private wake: (() => void) | null = null

  push(piece: string): void {
    if (!piece) return
    this.pieces.push(piece)
    this.wake?.()
  }

  end(error?: unknown): void {
    this.done = true
    if (error !== undefined) this.failure = error
    this.wake?.()
  }

  async *[Symbol.asyncIterator](): AsyncIterator<string> {
    while (true) {
      if (this.pieces.length) {
        yield this.pieces.shift()!
        continue
      }
      if (this.failure !== null) throw this.failure
      if (this.done) return
      await new Promise<void>((resolve) => (this.wake = resolve))
      this.wake = null
    }
  }
}
