import { extractFile } from '../../../src/modules/rag/extract'
import type { Extractor } from '../../../src/modules/rag/jobs/work'

/** The real extractors, then `perPageMs` per page reported as read (a slow file, made testable); counts the files it was given. */
export function slowExtractor(perPageMs: number) {
  const seen: string[] = []
  const extract: Extractor = async (name, bytes, { signal, onPages }) => {
    seen.push(name)
    const extracted = await extractFile(name, bytes)
    const total = extracted.pageStarts?.length ?? 1
    for (let page = 1; page <= total; page++) {
      await Bun.sleep(perPageMs)
      if (signal.aborted) throw new Error('stopped')
      onPages(page, total)
    }
    return extracted
  }
  return { extract, seen }
}

