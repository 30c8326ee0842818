import { ExtractionError } from './types'

/** What a hostile or huge file may cost, at most (the contract's limits). */
export const LIMITS = {
  /** Archive members (docx, xlsx, pptx, epub, odt, ods, odp), inflated, in all. */
  archiveBytes: 200 * 1024 * 1024,
  /** Pages, slides, sheets, chapters or messages in one file. */
  pages: 1000,
  /** Pixels of one image (or rasterized page). */
  pixels: 50_000_000,
  /** Time for one file, in ms, unless UAGENT_EXTRACT_TIMEOUT_MS says otherwise. */
  timeoutMs: 30_000,
} as const

export const megabytes = (bytes: number) => `${Math.round(bytes / (1024 * 1024))} MB`

/**
 * The time a file's extraction may take, and its cancellation. Extractors call `check()` between
 * units of work (pages, members, rows) and give `signal` to what can be aborted (OCR, pdftoppm).
 */
export class Deadline {
  private readonly controller = new AbortController()
  private readonly timer: ReturnType<typeof setTimeout>
  private reason: string | null = null

  constructor(
    readonly timeoutMs: number = LIMITS.timeoutMs,
    outer?: AbortSignal,
  ) {
    const stop = (reason: string) => {
      if (this.reason) return
      this.reason = reason
      this.controller.abort(new ExtractionError(reason))
    }
    this.timer = setTimeout(() => stop(`too slow: reading the file took more than ${Math.round(timeoutMs / 100) / 10} s (UAGENT_EXTRACT_TIMEOUT_MS)`), timeoutMs)
    ;(this.timer as { unref?: () => void }).unref?.()
    if (outer) {
      if (outer.aborted) stop('cancelled')
      else outer.addEventListener('abort', () => stop('cancelled'), { once: true })
    }
  }

  get signal(): AbortSignal {
    return this.controller.signal
  }

  /** Throws the ExtractionError once the time is up or the work was cancelled. */
  check(): void {
    if (this.reason) throw new ExtractionError(this.reason)
  }

  /** Resolves as `work` does, or rejects with the ExtractionError as soon as time is up. */
  race<T>(work: Promise<T>): Promise<T> {
    this.check()
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => reject(this.controller.signal.reason)
      this.controller.signal.addEventListener('abort', onAbort, { once: true })
      work.then(resolve, reject).finally(() => this.controller.signal.removeEventListener('abort', onAbort))
    })
  }

  done(): void {
    clearTimeout(this.timer)
  }
}

/** Refuses a file with more than LIMITS.pages pages (slides, sheets, chapters, messages). */
export function checkPageCount(count: number, what: string): void {
  if (count > LIMITS.pages) throw new ExtractionError(`too many ${what}: ${count}, over the limit of ${LIMITS.pages}`)
}
