import { basename, extname } from 'node:path'
import { getDocumentProxy } from 'unpdf'

/** Image files read by OCR. */
export const IMAGE_EXTENSIONS = new Set(['png', 'jpg', 'jpeg', 'tif', 'tiff', 'webp', 'bmp', 'gif'])

/** A file's extension, lower case, without the dot (a name without one is its own extension: `Makefile`). */
export function extensionOf(fileName: string): string {
  const name = basename(fileName)
  return extname(name).slice(1).toLowerCase() || name.toLowerCase()
}

/**
 * Whether reading this file takes OCR: an image, or a PDF with at least one page that has no
 * text layer. Cheap (no page is rendered): the jobs use it to decide, before extracting, that an
 * upload is slow work. A PDF that cannot be opened needs no OCR (its extraction fails with the reason).
 */
export async function needsOcr(fileName: string, bytes: Uint8Array): Promise<boolean> {
  const extension = extensionOf(fileName)
  if (IMAGE_EXTENSIONS.has(extension)) return true
  if (extension !== 'pdf') return false
  let pdf
  try {
    pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 })
  } catch {
    return false
  }
  try {
    for (let n = 1; n <= pdf.numPages; n++) {
      const page = await pdf.getPage(n)
      const content = await page.getTextContent()
      page.cleanup()
      if (!content.items.some((item) => 'str' in item && item.str.trim())) return true
    }
    return false
  } finally {
    // Frees the parsed document (the method is named differently across pdf.js builds).
    const proxy = pdf as unknown as { destroy?: () => Promise<void>; cleanup?: () => Promise<void> }
    await (proxy.destroy?.() ?? proxy.cleanup?.())
  }
}
