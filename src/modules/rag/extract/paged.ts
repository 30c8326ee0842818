import { PAGE_BREAK } from '../chunking'

/** Pages are joined with a page-break line, so chunks never cross a page (see chunkDocument). */
export const PAGE_SEPARATOR = `\n\n${PAGE_BREAK}\n\n`

/** Pages (slides, sheets) as one text with page breaks between them, and where each page starts. */
export function joinPages(pages: string[]): { text: string; pageStarts: number[] } {
  const pageStarts: number[] = []
  let text = ''
  pages.forEach((page, i) => {
    if (i > 0) text += PAGE_SEPARATOR
    pageStarts.push(text.length)
    text += page.trim()
  })
  return { text, pageStarts }
}
