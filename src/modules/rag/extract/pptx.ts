import { posix } from 'node:path'
import { checkPageCount, type Deadline } from './limits'
import { slidesText } from './odf'
import { ExtractionError } from './types'
import { firstText, walkXml } from './xml'
import { SafeZip } from './zip'

const WHAT = 'PowerPoint presentation'
/** Placeholders that repeat on every slide or notes page and say nothing: slide number, date, footer, slide image. */
const NOISE = new Set(['sldNum', 'dt', 'ftr', 'hdr', 'sldImg'])

/** A part's relationships (rId → the target part's path in the archive). */
function relationships(zip: SafeZip, part: string, deadline?: Deadline): Map<string, { target: string; type: string }> {
  const rels = new Map<string, { target: string; type: string }>()
  const path = posix.join(posix.dirname(part), '_rels', `${posix.basename(part)}.rels`)
  const xml = zip.text(path)
  if (!xml) return rels
  walkXml(
    xml,
    WHAT,
    {
      open: (name, a) => {
        if (name !== 'Relationship' || !a.Id || !a.Target || a.TargetMode === 'External') return
        const target = a.Target.startsWith('/') ? a.Target.slice(1) : posix.normalize(posix.join(posix.dirname(part), a.Target))
        rels.set(a.Id, { target, type: a.Type ?? '' })
      },
    },
    deadline,
  )
  return rels
}

/** Paragraphs of a slide or notes part, in order, leaving out the placeholders in NOISE. */
function paragraphs(xml: string, deadline?: Deadline): string[] {
  const out: string[] = []
  let noise = false
  let paragraph: string | null = null
  let inText = false
  let cells: string[] | null = null
  walkXml(
    xml,
    WHAT,
    {
      open: (name, a) => {
        if (name === 'p:sp') noise = false
        else if (name === 'p:ph' && NOISE.has(a.type ?? '')) noise = true
        else if (name === 'a:p') paragraph = ''
        else if (name === 'a:t') inText = true
        else if (name === 'a:br' && paragraph !== null) paragraph += '\n'
        else if (name === 'a:tr') cells = []
      },
      close: (name) => {
        if (name === 'a:t') inText = false
        else if (name === 'a:p' && paragraph !== null) {
          const text = paragraph.trim()
          if (text && !noise) (cells ? cells.push(text) : out.push(text))
          paragraph = null
        } else if (name === 'a:tr' && cells) {
          if (cells.length) out.push(cells.join(' | '))
          cells = null
        }
      },
      text: (text) => {
        if (inText && paragraph !== null) paragraph += text
      },
    },
    deadline,
  )
  return out
}

/** A PowerPoint (.pptx) deck: one page per slide in the deck's order, with the speaker notes after each slide's text. */
export function extractPptx(bytes: Uint8Array, deadline?: Deadline): { text: string; title: string | null; pageStarts: number[] } {
  const zip = new SafeZip(bytes, WHAT, deadline)
  const presentation = zip.text('ppt/presentation.xml')
  if (presentation === null) throw new ExtractionError(`not a readable ${WHAT} (ppt/presentation.xml is missing)`)
  const rels = relationships(zip, 'ppt/presentation.xml', deadline)
  const order: string[] = []
  walkXml(
    presentation,
    WHAT,
    {
      open: (name, a) => {
        if (name !== 'p:sldId') return
        const target = rels.get(a['r:id'] ?? '')?.target
        if (target) order.push(target)
        checkPageCount(order.length, 'slides')
      },
    },
    deadline,
  )
  const slides = order.map((part) => {
    const xml = zip.text(part)
    if (xml === null) return { text: [], notes: [] }
    const notesPart = [...relationships(zip, part, deadline).values()].find((rel) => rel.type.endsWith('/notesSlide'))?.target
    const notesXml = notesPart ? zip.text(notesPart) : null
    return { text: paragraphs(xml, deadline), notes: notesXml ? paragraphs(notesXml, deadline) : [] }
  })
  return slidesText(slides, firstText(zip.text('docProps/core.xml'), 'dc:title'))
}
