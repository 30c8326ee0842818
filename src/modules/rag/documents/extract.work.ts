// Work module of EXTRACT (uploads.ts), run in the work pool's workers: extractFile as a whole
// (PDF, Word, HTML, text and whatever formats it learns) on a file the upload wrote to disk. A
// file that cannot be ingested is an answer, not an error: its reason goes back as a value.
import { extractFile, ExtractionError, type Extracted } from '../extract'

export interface ExtractTask {
  fileName: string
  /** The uploaded file, read here (not copied between threads). */
  path: string
}

export type ExtractOutcome = { extracted: Extracted } | { reason: string }

export async function run(task: ExtractTask): Promise<ExtractOutcome> {
  try {
    return { extracted: await extractFile(task.fileName, new Uint8Array(await Bun.file(task.path).arrayBuffer())) }
  } catch (error) {
    if (error instanceof ExtractionError) return { reason: error.reason }
    throw error
  }
}
