import { unzipSync, strFromU8 } from 'fflate'
import { htmlToStructuredText } from './html'
import { ExtractionError } from './types'

/** The title in a .docx file's core properties (docProps/core.xml), if set. */
function coreTitle(bytes: Uint8Array): string | null {
  try {
    const files = unzipSync(bytes, { filter: (file) => file.name === 'docProps/core.xml' })
    const xml = files['docProps/core.xml']
    if (!xml) return null
    const match = /<dc:title>([\s\S]*?)<\/dc:title>/.exec(strFromU8(xml))
    const title = match?.[1]?.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&').trim()
    return title || null
  } catch {
    return null
  }
}

/** Text of a Word (.docx) document with its structure (headings, lists, tables) kept, and its title. */
export async function extractDocx(bytes: Uint8Array): Promise<{ text: string; title: string | null }> {
  let html: string
  try {
    // Loaded on the first Word upload: mammoth's code weighs ~20 MB of an idle server's memory.
    const { default: mammoth } = await import('mammoth')
    html = (await mammoth.convertToHtml({ buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) })).value
  } catch (error) {
    throw new ExtractionError(`not a readable Word document (${(error as Error)?.message?.split('\n')[0] ?? 'invalid file'})`)
  }
  const { text } = htmlToStructuredText(html)
  if (!text.trim()) throw new ExtractionError('no text: the Word document is empty or holds only images')
  const heading = /^#\s+(.+)$/m.exec(text)?.[1]?.trim() ?? null
  return { text, title: coreTitle(bytes) ?? heading }
}
