import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import type { Worker as OcrWorker } from 'tesseract.js'
import type { Deadline } from './limits'
import { ExtractionError } from './types'

/** An idle OCR engine is stopped after this long: an idle server does not need its model in memory. */
const IDLE_MS = 60_000

/**
 * The language data ships in the `@tesseract.js-data/eng` package: nothing is fetched, ever. Its
 * `4.0.0_best_int` model is the LSTM-only one tesseract.js pairs with OEM.LSTM_ONLY (3 MB, against
 * 11 MB for the package's default `4.0.0`, which carries the legacy engine too).
 */
function languageData(): { langPath: string; gzip: boolean } {
  const require = createRequire(import.meta.url)
  const eng = require('@tesseract.js-data/eng') as { langPath: string; gzip: boolean }
  return { langPath: join(dirname(eng.langPath), '4.0.0_best_int'), gzip: eng.gzip }
}

// One engine per thread (the server's, or a pool worker's), loaded on the first OCR and reused for
// every page after it; the promise is cached, so concurrent callers share one load.
let engine: Promise<OcrWorker> | null = null
let idle: ReturnType<typeof setTimeout> | null = null

function load(): Promise<OcrWorker> {
  engine ??= (async () => {
    const { createWorker, OEM } = await import('tesseract.js')
    const { langPath, gzip } = languageData()
    // cacheMethod 'none': the language data is read from the package and nothing is written beside it.
    return createWorker('eng', OEM.LSTM_ONLY, { langPath, gzip, cacheMethod: 'none', cachePath: join(tmpdir(), 'uagent-ocr'), logger: () => {}, errorHandler: () => {} })
  })().catch((error) => {
    engine = null
    throw new ExtractionError(`OCR is not available (${(error as Error).message})`)
  })
  return engine
}

/** Stops the OCR engine of this thread (idle, or after a page that ran out of time). */
export async function stopOcr(): Promise<void> {
  const current = engine
  engine = null
  if (idle) clearTimeout(idle)
  idle = null
  if (current) await current.then((worker) => worker.terminate()).catch(() => {})
}

export interface OcrResult {
  text: string
  /** Mean word confidence, 0..100 (0 when no word was found). */
  confidence: number
}

/**
 * Reads the text of an image (PNG, JPEG, TIFF, WebP, BMP, GIF bytes). A page that runs out of the
 * file's time stops the engine (it cannot be interrupted otherwise); the next page loads a new one.
 */
export async function recognize(image: Uint8Array, deadline?: Deadline): Promise<OcrResult> {
  if (idle) clearTimeout(idle)
  const worker = await load()
  try {
    const work = worker.recognize(Buffer.from(image.buffer, image.byteOffset, image.byteLength)).then((result) => ({
      text: result.data.text.replace(/[ \t]+\n/g, '\n').trim(),
      confidence: result.data.text.trim() ? Math.round(result.data.confidence) : 0,
    }))
    return deadline ? await deadline.race(work) : await work
  } catch (error) {
    if (error instanceof ExtractionError) {
      // Out of time, the page may never end: the engine goes. Cancelled, it finishes the page and
      // is kept for the next file (its model stays loaded).
      if (error.reason !== 'cancelled') await stopOcr()
      throw error
    }
    throw new ExtractionError(`not a readable image (${(error as Error)?.message ?? String(error)})`)
  } finally {
    if (engine) {
      idle = setTimeout(() => void stopOcr(), IDLE_MS)
      ;(idle as { unref?: () => void }).unref?.()
    }
  }
}
