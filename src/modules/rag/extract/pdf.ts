import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { extractText, getDocumentProxy, getMeta } from 'unpdf'
import { checkPageCount, type Deadline, LIMITS } from './limits'
import { recognize } from './ocr'
import { joinPages } from './paged'
import { type ExtractProgress, ExtractionError, type OcrPage } from './types'

/**
 * Resolution scanned pages are rendered at for OCR (lowered for a page so large it would pass
 * LIMITS.pixels). 200 dpi reads 8 pt text as well as 300 does, at two thirds of the rendering
 * time and under half the pixels (docs/knowledge-base.md, "Formats and limits").
 */
export const OCR_DPI = 200

/**
 * Text of a PDF, page by page, with its title from the document information. A page without a
 * text layer (a scan) is rendered by poppler's pdftoppm and read by OCR; a page with some text
 * keeps its text layer.
 */
export async function extractPdf(
  bytes: Uint8Array,
  deadline?: Deadline,
  onProgress?: (progress: ExtractProgress) => void,
): Promise<{ text: string; title: string | null; pageStarts: number[]; ocr: OcrPage[] }> {
  let pdf
  try {
    // pdf.js takes (detaches) the buffer it is given: it gets its own copy.
    pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 })
  } catch (error) {
    const name = (error as Error)?.name
    if (name === 'PasswordException') throw new ExtractionError('encrypted PDF: it needs a password to open (remove the protection and upload it again)')
    throw new ExtractionError(`not a readable PDF (${(error as Error)?.message ?? 'invalid structure'})`)
  }
  let scratch: string | null = null
  try {
    checkPageCount(pdf.numPages, 'pages')
    const { text: pages } = await extractText(pdf, { mergePages: false })
    deadline?.check()
    const scanned = pages.flatMap((page, i) => (page.trim() ? [] : [i + 1]))
    let done = pages.length - scanned.length
    onProgress?.({ pagesDone: done, pages: pages.length })
    const ocr: OcrPage[] = []
    if (scanned.length) {
      scratch = mkdtempSync(join(tmpdir(), 'uagent-pdf-'))
      const file = join(scratch, 'in.pdf')
      writeFileSync(file, bytes)
      const render = async (n: number) => {
        const page = await pdf.getPage(n)
        const [x0 = 0, y0 = 0, x1 = 612, y1 = 792] = page.view
        page.cleanup()
        return renderPage(file, n, dpiFor(Math.abs(x1 - x0), Math.abs(y1 - y0)), scratch!, deadline)
      }
      // pdftoppm renders the next page (its own process, another core) while OCR reads this one.
      let next: Promise<Uint8Array> | null = render(scanned[0]!)
      for (let i = 0; i < scanned.length; i++) {
        const image: Uint8Array = await next!
        next = i + 1 < scanned.length ? render(scanned[i + 1]!) : null
        // A page that fails while this one is read is awaited (and its error seen) in the next turn.
        next?.catch(() => {})
        const result = await recognize(image, deadline)
        pages[scanned[i]! - 1] = result.text
        ocr.push({ page: scanned[i]!, confidence: result.confidence })
        onProgress?.({ pagesDone: ++done, pages: pages.length })
      }
    }
    if (!pages.some((page) => page.trim())) {
      throw new ExtractionError(scanned.length ? 'no text layer, and OCR found no words on its pages (a blank or unreadable scan)' : 'no text: the PDF is empty')
    }
    let title: string | null = null
    try {
      const info = (await getMeta(pdf)).info as { Title?: unknown }
      if (typeof info.Title === 'string' && info.Title.trim()) title = info.Title.trim()
    } catch {
      // A PDF without readable document information still has its text.
    }
    return { ...joinPages(pages), title, ocr }
  } finally {
    if (scratch) rmSync(scratch, { recursive: true, force: true })
    // Frees the parsed document (the method is named differently across pdf.js builds).
    const proxy = pdf as unknown as { destroy?: () => Promise<void>; cleanup?: () => Promise<void> }
    await (proxy.destroy?.() ?? proxy.cleanup?.())
  }
}

/** OCR_DPI, or less for a page (in points) whose rendering would pass LIMITS.pixels. */
function dpiFor(widthPt: number, heightPt: number): number {
  const pixelsAt = (dpi: number) => ((widthPt * dpi) / 72) * ((heightPt * dpi) / 72)
  if (pixelsAt(OCR_DPI) <= LIMITS.pixels) return OCR_DPI
  return Math.max(1, Math.floor(OCR_DPI * Math.sqrt(LIMITS.pixels / pixelsAt(OCR_DPI))))
}

/** One page as a grayscale PNG, rendered by pdftoppm (poppler-utils), killed when the file's time is up. */
async function renderPage(file: string, page: number, dpi: number, dir: string, deadline?: Deadline): Promise<Uint8Array> {
  const out = join(dir, `page-${page}`)
  let child
  try {
    child = Bun.spawn(['pdftoppm', '-f', String(page), '-l', String(page), '-r', String(dpi), '-gray', '-png', '-singlefile', file, out], { stdout: 'ignore', stderr: 'pipe' })
  } catch {
    throw new ExtractionError('OCR of scanned PDF pages needs pdftoppm (install poppler-utils)')
  }
  const stop = () => child.kill()
  deadline?.signal.addEventListener('abort', stop, { once: true })
  try {
    const code = await child.exited
    deadline?.check()
    if (code !== 0) throw new ExtractionError(`not a readable PDF (page ${page} could not be rendered: ${(await new Response(child.stderr).text()).trim().split('\n')[0]})`)
    return new Uint8Array(await Bun.file(`${out}.png`).arrayBuffer())
  } finally {
    deadline?.signal.removeEventListener('abort', stop)
  }
}
