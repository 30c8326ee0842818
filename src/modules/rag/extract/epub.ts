import { posix } from 'node:path'
import { htmlToStructuredText } from './html'
import { checkPageCount, type Deadline } from './limits'
import { PAGE_SEPARATOR } from './paged'
import { ExtractionError } from './types'
import { firstText, walkXml } from './xml'
import { SafeZip } from './zip'

const WHAT = 'EPUB e-book'
const decodePath = (href: string) => {
  try {
    return decodeURIComponent(href.split('#')[0]!)
  } catch {
    return href.split('#')[0]!
  }
}

/** Chapter titles by chapter file, from the EPUB 3 navigation document or the EPUB 2 NCX table of contents. */
function tocTitles(zip: SafeZip, part: string | undefined, deadline?: Deadline): Map<string, string> {
  const titles = new Map<string, string>()
  const xml = part ? zip.text(part) : null
  if (!part || !xml) return titles
  const base = posix.dirname(part)
  let href: string | null = null
  let text = ''
  let collecting = false
  walkXml(
    xml,
    WHAT,
    {
      open: (name, a) => {
        if (name === 'a' && a.href) {
          href = a.href
          text = ''
          collecting = true
        } else if (name === 'navLabel') {
          text = ''
          collecting = true
        } else if (name === 'content' && a.src) href = a.src
      },
      close: (name) => {
        if (name === 'a' || name === 'navLabel') collecting = false
        if ((name === 'a' || name === 'content') && href) {
          const file = posix.normalize(posix.join(base, decodePath(href)))
          if (text.trim() && !titles.has(file)) titles.set(file, text.trim().replace(/\s+/g, ' '))
          href = null
        }
      },
      text: (t) => {
        if (collecting) text += t
      },
    },
    deadline,
  )
  return titles
}

/** An EPUB e-book: its chapters in reading order (the spine), each under its title from the table of contents. */
export function extractEpub(bytes: Uint8Array, deadline?: Deadline): { text: string; title: string | null } {
  const zip = new SafeZip(bytes, WHAT, deadline)
  const container = zip.text('META-INF/container.xml')
  let opfPath: string | null = null
  if (container) walkXml(container, WHAT, { open: (name, a) => void (name === 'rootfile' && a['full-path'] && !opfPath && (opfPath = a['full-path'])) }, deadline)
  const opf = opfPath ? zip.text(opfPath) : null
  if (!opfPath || !opf) throw new ExtractionError(`not a readable ${WHAT} (no package document)`)
  const base = posix.dirname(opfPath)
  const manifest = new Map<string, { path: string; type: string; properties: string }>()
  const spine: string[] = []
  let ncx: string | undefined
  walkXml(
    opf,
    WHAT,
    {
      open: (name, a) => {
        if (name === 'item' && a.id && a.href) manifest.set(a.id, { path: posix.normalize(posix.join(base, decodePath(a.href))), type: a['media-type'] ?? '', properties: a.properties ?? '' })
        else if (name === 'itemref' && a.idref && a.linear !== 'no') spine.push(a.idref)
        else if (name === 'spine' && a.toc) ncx = a.toc
      },
    },
    deadline,
  )
  checkPageCount(spine.length, 'chapters')
  const nav = [...manifest.values()].find((item) => item.properties.split(/\s+/).includes('nav'))?.path
  const titles = tocTitles(zip, nav ?? (ncx ? manifest.get(ncx)?.path : undefined), deadline)
  const chapters: string[] = []
  for (const id of spine) {
    const item = manifest.get(id)
    if (!item || !/html|xml/.test(item.type) || item.path === nav) continue
    const html = zip.text(item.path)
    if (!html) continue
    deadline?.check()
    const { text } = htmlToStructuredText(html.replace(/^\s*<\?xml[^>]*\?>/, '').replace(/<!DOCTYPE[^>[]*(\[[^\]]*\])?\s*>/i, ''))
    if (!text.trim()) continue
    const title = titles.get(item.path)
    const heading = /^#{1,6}\s+(.+)$/m.exec(text)?.[1]?.trim()
    chapters.push(title && heading !== title ? `# ${title}\n\n${text}` : text)
  }
  if (!chapters.length) throw new ExtractionError('no text: the e-book has no readable chapters')
  return { text: chapters.join(PAGE_SEPARATOR), title: firstText(opf, 'dc:title') }
}
