import { extractText, getDocumentProxy, getMeta } from 'unpdf'
import { PAGE_BREAK } from '../chunking'
import { ExtractionError } from './types'

/** Pages are joined with a page-break line, so chunks never cross a page (see chunkDocument). */
const PAGE_SEPARATOR = `\n\n${PAGE_BREAK}\n\n`

/** Text of a PDF, page by page, with its title from the document information. */
export async function extractPdf(bytes: Uint8Array): Promise<{ text: string; title: string | null; pageStarts: number[] }> {
  let pdf
  try {
    // pdf.js takes (detaches) the buffer it is given: it gets its own copy.
    pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 })
  } catch (error) {
    const name = (error as Error)?.name
    if (name === 'PasswordException') throw new ExtractionError('encrypted PDF: it needs a password to open (remove the protection and upload it again)')
    throw new ExtractionError(`not a readable PDF (${(error as Error)?.message ?? 'invalid structure'})`)
  }
  try {
    const { text: pages } = await extractText(pdf, { mergePages: false })
    if (!pages.some((page) => page.trim())) {
      throw new ExtractionError('no text layer: an image-only (scanned) PDF; run OCR on it first')
    }
    let title: string | null = null
    try {
      const info = (await getMeta(pdf)).info as { Title?: unknown }
      if (typeof info.Title === 'string' && info.Title.trim()) title = info.Title.trim()
    } catch {
      // A PDF without readable document information still has its text.
    }
    const pageStarts: number[] = []
    let text = ''
    pages.forEach((page, i) => {
      if (i > 0) text += PAGE_SEPARATOR
      pageStarts.push(text.length)
      text += page.trim()
    })
    return { text, title, pageStarts }
  } finally {
    // Frees the parsed document (the method is named differently across pdf.js builds).
    const proxy = pdf as unknown as { destroy?: () => Promise<void>; cleanup?: () => Promise<void> }
    await (proxy.destroy?.() ?? proxy.cleanup?.())
  }
}
