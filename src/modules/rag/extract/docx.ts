import { htmlToStructuredText } from './html'
import type { Deadline } from './limits'
import { ExtractionError } from './types'
import { firstText } from './xml'
import { SafeZip } from './zip'

const WHAT = 'Word document'

/** Text of a Word (.docx) document with its structure (headings, lists, tables) kept, and its title (docProps/core.xml). */
export async function extractDocx(bytes: Uint8Array, deadline?: Deadline): Promise<{ text: string; title: string | null }> {
  const zip = new SafeZip(bytes, WHAT, deadline)
  // mammoth unzips by itself: it is given the archive re-packed from the checked members, without
  // the pictures (their text is not read, and mammoth would inline each one as base64).
  const checked = zip.repack((name) => !name.startsWith('word/media/'))
  let html: string
  try {
    // Loaded on the first Word upload: mammoth's code weighs ~20 MB of an idle server's memory.
    const { default: mammoth } = await import('mammoth')
    const work = mammoth.convertToHtml(
      { buffer: Buffer.from(checked.buffer, checked.byteOffset, checked.byteLength) },
      { convertImage: mammoth.images.imgElement(async () => ({ src: '' })) },
    )
    html = (await (deadline ? deadline.race(work) : work)).value
  } catch (error) {
    if (error instanceof ExtractionError) throw error
    throw new ExtractionError(`not a readable Word document (${(error as Error)?.message?.split('\n')[0] ?? 'invalid file'})`)
  }
  const { text } = htmlToStructuredText(html)
  if (!text.trim()) throw new ExtractionError('no text: the Word document is empty or holds only images')
  const heading = /^#\s+(.+)$/m.exec(text)?.[1]?.trim() ?? null
  return { text, title: firstText(zip.text('docProps/core.xml'), 'dc:title') ?? heading }
}
