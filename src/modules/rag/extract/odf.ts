import { checkPageCount, type Deadline } from './limits'
import { joinPages } from './paged'
import type { Sheet } from './sheet'
import { ExtractionError } from './types'
import { firstText, walkXml } from './xml'
import { SafeZip } from './zip'

/** Cells or rows that a sheet repeats (`number-columns-repeated`) are written out up to this many times. */
const MAX_REPEAT = 1000
const SKIPPED = new Set(['office:annotation', 'text:tracked-changes', 'text:sequence-decls', 'office:forms', 'text:note-citation'])

/** An OpenDocument file's parts: its content and its title (meta.xml dc:title). */
function openOdf(bytes: Uint8Array, what: string, deadline?: Deadline): { content: string; title: string | null } {
  const zip = new SafeZip(bytes, what, deadline)
  const content = zip.text('content.xml')
  if (content === null) throw new ExtractionError(`not a readable ${what} (content.xml is missing)`)
  return { content, title: firstText(zip.text('meta.xml'), 'dc:title') }
}

/**
 * Text of ODF paragraphs and headings. `onBlock` gets each finished block (a heading as Markdown
 * `#`, a list item as `- `, a table row as cells joined by ` | `) with the element it is inside.
 */
class OdfText {
  private line = ''
  private skipping = 0
  private readonly lists: number[] = []
  private cell: string[] | null = null
  private row: string[] | null = null
  readonly blocks: string[] = []

  open(name: string, attributes: Record<string, string>): void {
    if (this.skipping || SKIPPED.has(name)) {
      this.skipping++
      return
    }
    if (name === 'text:s') this.line += ' '.repeat(Math.min(100, Number(attributes['text:c'] ?? 1) || 1))
    else if (name === 'text:tab') this.line += '\t'
    else if (name === 'text:line-break') this.line += '\n'
    else if (name === 'text:list') this.lists.push(0)
    else if (name === 'table:table-row') this.row = []
    else if (name === 'table:table-cell' || name === 'table:covered-table-cell') this.cell = []
    else if (name === 'text:h') this.line = '#'.repeat(Math.min(6, Number(attributes['text:outline-level'] ?? 1) || 1)) + ' '
  }

  close(name: string): void {
    if (this.skipping) {
      this.skipping--
      return
    }
    if (name === 'text:p' || name === 'text:h') {
      const text = this.line.trim() === '#'.repeat(this.line.trim().length) ? '' : this.line.replace(/[ \t]+$/gm, '')
      this.line = ''
      if (!text.trim()) return
      if (this.cell) this.cell.push(text.trim())
      else this.blocks.push(this.lists.length ? `${'  '.repeat(this.lists.length - 1)}- ${text.trim()}` : text.trim())
    } else if (name === 'text:list') this.lists.pop()
    else if (name === 'table:table-cell' || name === 'table:covered-table-cell') {
      this.row?.push((this.cell ?? []).join(' '))
      this.cell = null
    } else if (name === 'table:table-row') {
      if (this.row?.some((cell) => cell)) this.blocks.push(this.row.join(' | '))
      this.row = null
    }
  }

  text(text: string): void {
    if (!this.skipping) this.line += text.replace(/\s+/g, ' ')
  }

  take(): string[] {
    return this.blocks.splice(0)
  }
}

/** An OpenDocument text (.odt): headings, paragraphs, lists and tables, in order. */
export function extractOdt(bytes: Uint8Array, deadline?: Deadline): { text: string; title: string | null } {
  const { content, title } = openOdf(bytes, 'OpenDocument text', deadline)
  const reader = new OdfText()
  walkXml(content, 'OpenDocument text', reader, deadline)
  const text = reader.blocks.join('\n\n')
  if (!text.trim()) throw new ExtractionError('no text: the document is empty or holds only images')
  return { text, title: title ?? /^#\s+(.+)$/m.exec(text)?.[1]?.trim() ?? null }
}

/** An OpenDocument presentation (.odp): one page per slide, in order, the speaker notes after the slide's text. */
export function extractOdp(bytes: Uint8Array, deadline?: Deadline): { text: string; title: string | null; pageStarts: number[] } {
  const { content, title } = openOdf(bytes, 'OpenDocument presentation', deadline)
  const slides: { text: string[]; notes: string[] }[] = []
  const reader = new OdfText()
  let inNotes = false
  walkXml(
    content,
    'OpenDocument presentation',
    {
      open: (name, attributes) => {
        if (name === 'draw:page') {
          reader.take()
          slides.push({ text: [], notes: [] })
          checkPageCount(slides.length, 'slides')
        } else if (name === 'presentation:notes') inNotes = true
        reader.open(name, attributes)
      },
      close: (name) => {
        reader.close(name)
        const slide = slides.at(-1)
        if (slide && reader.blocks.length) (inNotes ? slide.notes : slide.text).push(...reader.take())
        if (name === 'presentation:notes') inNotes = false
      },
      text: (text) => reader.text(text),
    },
    deadline,
  )
  return slidesText(slides, title)
}

/** Slides as pages: each slide's text, then its notes. */
export function slidesText(slides: { text: string[]; notes: string[] }[], title: string | null): { text: string; title: string | null; pageStarts: number[] } {
  if (!slides.some((slide) => slide.text.length || slide.notes.length)) throw new ExtractionError('no text: the slides hold no text')
  const pages = slides.map((slide, i) => [`## Slide ${i + 1}`, ...slide.text, ...(slide.notes.length ? ['Notes:', ...slide.notes] : [])].join('\n\n'))
  return { ...joinPages(pages), title: title ?? slides.find((slide) => slide.text.length)?.text[0]?.replace(/^#+\s*/, '') ?? null }
}

/** An OpenDocument spreadsheet (.ods): each table as a sheet of cell texts. */
export function readOds(bytes: Uint8Array, deadline?: Deadline): { sheets: Sheet[]; title: string | null } {
  const { content, title } = openOdf(bytes, 'OpenDocument spreadsheet', deadline)
  const sheets: Sheet[] = []
  let sheet: Sheet | null = null
  let rowNumber = 0
  let rowRepeat = 1
  let cells: string[] = []
  let pendingEmpty = 0
  let cellRepeat = 1
  let cellText: string[] | null = null
  let paragraph = ''
  let skipping = 0
  walkXml(
    content,
    'OpenDocument spreadsheet',
    {
      open: (name, attributes) => {
        if (skipping || name === 'office:annotation') {
          skipping++
          return
        }
        if (name === 'table:table') {
          sheet = { name: attributes['table:name'] ?? `Sheet ${sheets.length + 1}`, rows: [] }
          sheets.push(sheet)
          checkPageCount(sheets.length, 'sheets')
          rowNumber = 0
        } else if (name === 'table:table-row') {
          cells = []
          pendingEmpty = 0
          rowRepeat = Number(attributes['table:number-rows-repeated'] ?? 1) || 1
        } else if (name === 'table:table-cell' || name === 'table:covered-table-cell') {
          cellText = []
          cellRepeat = Number(attributes['table:number-columns-repeated'] ?? 1) || 1
        } else if (name === 'text:p') paragraph = ''
        else if (name === 'text:s') paragraph += ' '
        else if (name === 'text:line-break') paragraph += '\n'
      },
      close: (name) => {
        if (skipping) {
          skipping--
          return
        }
        if (name === 'text:p') cellText?.push(paragraph)
        else if ((name === 'table:table-cell' || name === 'table:covered-table-cell') && cellText) {
          const value = cellText.join('\n').trim()
          if (value) {
            for (let i = 0; i < Math.min(pendingEmpty, MAX_REPEAT); i++) cells.push('')
            pendingEmpty = 0
            for (let i = 0; i < Math.min(cellRepeat, MAX_REPEAT); i++) cells.push(value)
          } else pendingEmpty += cellRepeat
          cellText = null
        } else if (name === 'table:table-row' && sheet) {
          const current: Sheet = sheet
          const filled = cells.length > 0
          for (let i = 0; i < rowRepeat; i++) {
            rowNumber++
            if (filled && i < MAX_REPEAT) current.rows.push({ number: rowNumber, cells })
          }
        }
      },
      text: (text) => {
        if (!skipping && cellText) paragraph += text
      },
    },
    deadline,
  )
  return { sheets, title }
}
