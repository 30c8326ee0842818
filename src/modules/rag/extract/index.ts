import { basename, extname } from 'node:path'
import { extractDocx } from './docx'
import { htmlToStructuredText } from './html'
import { extractPdf } from './pdf'
import { CODE_TYPES, decodeText, markdownTitle, unsupportedType } from './text'
import { type Extracted, ExtractionError } from './types'

export { type DocumentType, type Extracted, ExtractionError } from './types'
export { htmlToStructuredText } from './html'

/**
 * Text from a file's bytes, by its name: .pdf (per page), .docx, .html/.htm (visible text,
 * structure kept), .md, .txt, source files, and any other file that is UTF-8 text. Throws
 * ExtractionError with the reason when the file cannot be ingested (encrypted or image-only PDF,
 * unsupported type, binary content).
 */
export async function extractFile(fileName: string, bytes: Uint8Array): Promise<Extracted> {
  const name = basename(fileName)
  const extension = extname(name).slice(1).toLowerCase() || name.toLowerCase()
  const unsupported = unsupportedType(extension)
  if (unsupported) throw new ExtractionError(unsupported)
  if (extension === 'pdf') {
    const { text, title, pageStarts } = await extractPdf(bytes)
    return { title: title ?? name, type: 'pdf', text, pageStarts }
  }
  if (extension === 'docx') {
    const { text, title } = await extractDocx(bytes)
    return { title: title ?? name, type: 'docx', text }
  }
  const raw = decodeText(bytes).replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n')
  if (extension === 'html' || extension === 'htm' || extension === 'xhtml') {
    const { text, title } = htmlToStructuredText(raw)
    if (!text) throw new ExtractionError('no text: the HTML page has no visible text')
    return { title: title ?? /^#\s+(.+)$/m.exec(text)?.[1]?.trim() ?? name, type: 'html', text }
  }
  if (!raw.trim()) throw new ExtractionError('empty file: nothing to ingest')
  if (extension === 'md' || extension === 'markdown' || extension === 'mdx') return { title: markdownTitle(raw) ?? name, type: 'markdown', text: raw }
  return { title: name, type: CODE_TYPES.has(extension) ? 'code' : 'text', text: raw }
}
