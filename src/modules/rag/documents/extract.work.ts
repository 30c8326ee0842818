// Work module of EXTRACT and OCR_CHECK (jobs/work.ts: extractorWithin, ocrCheckOn), run in the work pool's workers:
// extractFile as a whole (every format, OCR included: the OCR engine is created once per worker
// and kept), and needsOcr, on the bytes the task brought. A file that cannot be ingested is an
// answer, not an error: its reason goes back as a value. Pages read go back as progress events; a
// cancel aborts the file's deadline (pdftoppm killed, its scratch folder removed) within the grace.
import type { WorkTask } from '../../../core/work-pool'
import { extractFile, ExtractionError, type Extracted, type ExtractProgress, needsOcr } from '../extract'

export type ExtractTask =
  | { op: 'extract'; fileName: string; bytes: Uint8Array; timeoutMs?: number }
  /** Whether the file will need OCR (a PDF's pages are looked into: pdf.js work, kept off the request thread). */
  | { op: 'needs-ocr'; fileName: string; bytes: Uint8Array }

export type ExtractOutcome = { extracted: Extracted } | { reason: string } | { needsOcr: boolean }

export async function run(task: ExtractTask, _transfer: Transferable[], work: WorkTask<ExtractProgress>): Promise<ExtractOutcome> {
  if (task.op === 'needs-ocr') return { needsOcr: await needsOcr(task.fileName, task.bytes).catch(() => false) }
  try {
    return { extracted: await extractFile(task.fileName, task.bytes, { timeoutMs: task.timeoutMs, signal: work.signal, onProgress: (progress) => work.progress(progress) }) }
  } catch (error) {
    if (error instanceof ExtractionError) return { reason: error.reason }
    throw error
  }
}
