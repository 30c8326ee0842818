import { extractFile } from '../../../src/modules/rag/extract'
import type { Extractor } from '../../../src/modules/rag/jobs/work'

/** The real extractors, then `perPageMs` per page reported as read (a slow file, made testable); notes the files it was given and the pages it read. */
export function slowExtractor(perPageMs: number) {
  const seen: string[] = []
  const read = { pages: 0 }
  const extract: Extractor = async (name, bytes, { signal, onPages }) => {
    seen.push(name)
    const extracted = await extractFile(name, bytes)
    const total = extracted.pageStarts?.length ?? 1
    for (let page = 1; page <= total; page++) {
      await Bun.sleep(perPageMs)
      if (signal.aborted) throw new Error('stopped')
      read.pages++
      onPages(page, total)
    }
    return extracted
  }
  return { extract, seen, read }
}

