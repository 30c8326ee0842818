import { basename } from 'node:path'
import { extractDocx } from './docx'
import { readMbox, readMessage } from './email'
import { extractEpub } from './epub'
import { htmlToStructuredText } from './html'
import { extractImage } from './image'
import { Deadline } from './limits'
import { extractOdp, extractOdt, readOds } from './odf'
import { extensionOf, IMAGE_EXTENSIONS } from './ocr-needed'
import { extractPdf } from './pdf'
import { extractPptx } from './pptx'
import { extractRtf } from './rtf'
import { delimitedSheet, sheetsText } from './sheet'
import { CODE_TYPES, decodeText, markdownTitle, unsupportedType } from './text'
import { type Extracted, type ExtractOptions, ExtractionError } from './types'
import { readXlsx } from './xlsx'

export { type DocumentType, type Extracted, type ExtractedPart, type ExtractOptions, type ExtractProgress, ExtractionError, type OcrPage } from './types'
export { htmlToStructuredText } from './html'
export { needsOcr } from './ocr-needed'
export { stopOcr } from './ocr'
export { LIMITS } from './limits'

/** E-mails inside e-mails are read this deep (an attachment's attachments), no deeper. */
const MAX_DEPTH = 2

/**
 * Text from a file's bytes, by its name: .pdf (per page; pages without a text layer by OCR),
 * images by OCR, .docx, .odt, .rtf, .pptx/.odp (a page per slide, notes included), .xlsx/.ods/
 * .csv/.tsv (rows as `header: value` lines), .epub (chapters in order), .eml (headers, body and
 * attachments' text), .mbox (a document per message, in `documents`), .html/.htm, .md, .txt,
 * source files, and any other file that is UTF-8 text. Throws ExtractionError with the reason
 * when the file cannot be ingested (encrypted, unsupported type, binary content, or past a limit:
 * see LIMITS). Safe in a worker thread: it uses no server service.
 */
export async function extractFile(fileName: string, bytes: Uint8Array, options: ExtractOptions = {}): Promise<Extracted> {
  const deadline = new Deadline(options.timeoutMs, options.signal)
  try {
    return await extractWithin(fileName, bytes, deadline, options, 0)
  } finally {
    deadline.done()
  }
}

async function extractWithin(fileName: string, bytes: Uint8Array, deadline: Deadline, options: ExtractOptions, depth: number): Promise<Extracted> {
  const name = basename(fileName)
  const extension = extensionOf(name)
  const progress = depth === 0 ? options.onProgress : undefined
  const onePage = () => progress?.({ pagesDone: 1, pages: 1 })
  const readAttachment = async (file: string, content: Uint8Array, level: number) => {
    if (level > MAX_DEPTH) throw new ExtractionError('an e-mail nested too deep')
    const inner = await extractWithin(file, content, deadline, options, level)
    return inner.documents ? inner.documents.map((d) => d.text).join('\n\n') : inner.text
  }
  if (IMAGE_EXTENSIONS.has(extension)) {
    progress?.({ pagesDone: 0, pages: 1 })
    const { text, confidence } = await extractImage(bytes, deadline)
    onePage()
    return { title: name, type: 'image', text, pageStarts: [0], ocr: [{ page: 1, confidence }] }
  }
  switch (extension) {
    case 'pdf': {
      const { text, title, pageStarts, ocr } = await extractPdf(bytes, deadline, progress)
      return { title: title ?? name, type: 'pdf', text, pageStarts, ...(ocr.length ? { ocr } : {}) }
    }
    case 'docx': {
      const { text, title } = await extractDocx(bytes, deadline)
      onePage()
      return { title: title ?? name, type: 'docx', text }
    }
    case 'odt':
    case 'rtf':
    case 'epub': {
      const { text, title } = extension === 'odt' ? extractOdt(bytes, deadline) : extension === 'rtf' ? extractRtf(bytes, deadline) : extractEpub(bytes, deadline)
      onePage()
      return { title: title ?? name, type: extension, text }
    }
    case 'pptx':
    case 'odp': {
      const { text, title, pageStarts } = extension === 'pptx' ? extractPptx(bytes, deadline) : extractOdp(bytes, deadline)
      progress?.({ pagesDone: pageStarts.length, pages: pageStarts.length })
      return { title: title ?? name, type: extension, text, pageStarts }
    }
    case 'xlsx':
    case 'ods':
    case 'csv':
    case 'tsv': {
      const { sheets, title } =
        extension === 'xlsx'
          ? await readXlsx(bytes, deadline)
          : extension === 'ods'
            ? readOds(bytes, deadline)
            : { sheets: [delimitedSheet(decodeText(bytes).replace(/^\uFEFF/, ''), name, extension === 'tsv' ? '\t' : '')], title: null }
      const { text, pageStarts } = sheetsText(sheets, extension === 'csv' || extension === 'tsv' ? 'table' : 'workbook', deadline)
      progress?.({ pagesDone: pageStarts.length, pages: pageStarts.length })
      return { title: title ?? name, type: extension, text, ...(pageStarts.length > 1 ? { pageStarts } : {}) }
    }
    case 'eml': {
      const { text, title } = await readMessage(bytes, readAttachment, depth, deadline)
      onePage()
      return { title: title ?? name, type: 'email', text }
    }
    case 'mbox': {
      const documents = await readMbox(bytes, readAttachment, deadline, (done, total) => progress?.({ pagesDone: done, pages: total }))
      if (!documents.length) throw new ExtractionError('no messages: the mbox is empty')
      return { title: name, type: 'email', text: '', documents }
    }
  }
  const unsupported = unsupportedType(extension)
  if (unsupported) throw new ExtractionError(unsupported)
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
