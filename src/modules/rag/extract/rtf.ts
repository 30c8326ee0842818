import type { Deadline } from './limits'
import { ExtractionError } from './types'

/** Groups that hold no document text (tables of fonts, colours and styles, metadata, pictures, fields' code). */
const SKIPPED = new Set(
  'fonttbl colortbl stylesheet listtable listoverridetable info pict object themedata colorschememapping datastore latentstyles rsidtbl generator xmlnstbl mmathPr fldinst header headerl headerr headerf footer footerl footerr footerf filetbl revtbl pgdsctbl nonshppict bkmkstart bkmkend'.split(
    ' ',
  ),
)
const BREAKS: Record<string, string> = { par: '\n\n', line: '\n', sect: '\n\n', page: '\n\n', row: '\n\n', cell: ' | ', tab: '\t', emdash: '—', endash: '–', bullet: '•', lquote: '‘', rquote: '’', ldblquote: '“', rdblquote: '”' }

interface Group {
  skip: boolean
  /** Characters to drop after a \u escape (its fallback for readers without Unicode). */
  uc: number
}

/**
 * Text of an RTF document. RTF is a flat token stream: control words, groups and text. The
 * libraries on npm render it to HTML (rtf.js, heavy) or only unwrap RTF-encapsulated HTML, so it is
 * read here: text and its escapes (\'hh in the document's code page, \uN), paragraph and cell
 * breaks, and every destination that is not body text skipped.
 */
export function extractRtf(bytes: Uint8Array, deadline?: Deadline): { text: string; title: string | null } {
  const source = new TextDecoder('latin1').decode(bytes)
  if (!source.startsWith('{\\rtf')) throw new ExtractionError('not a readable RTF document (it does not start with {\\rtf)')
  let codePage = 'windows-1252'
  let decoder = new TextDecoder(codePage)
  const stack: Group[] = []
  let group: Group = { skip: false, uc: 1 }
  let out = ''
  let pendingBytes: number[] = []
  let skipFallback = 0
  let title = ''
  /** Depth of the \title group while inside it, else 0. */
  let inTitle = 0
  /** Inside a table row, paragraphs end a cell's line, not the row's. */
  let inRow = false
  const flushBytes = () => {
    if (!pendingBytes.length) return
    const text = decoder.decode(new Uint8Array(pendingBytes))
    pendingBytes = []
    emit(text)
  }
  const emit = (text: string) => {
    if (inTitle) title += text
    if (!group.skip) out += text
  }
  for (let i = 0; i < source.length; ) {
    if (i % 65536 < 64) deadline?.check()
    const c = source[i]!
    if (c === '{') {
      flushBytes()
      stack.push(group)
      group = { ...group }
      i++
      if (source.startsWith('\\*', i)) group.skip = true
    } else if (c === '}') {
      flushBytes()
      // The title's group ends: its depth was recorded when \title opened it.
      if (inTitle && stack.length === inTitle) inTitle = 0
      group = stack.pop() ?? group
      i++
    } else if (c === '\\') {
      const next = source[i + 1] ?? ''
      if (next === "'") {
        const code = parseInt(source.slice(i + 2, i + 4), 16)
        i += 4
        if (skipFallback > 0) skipFallback--
        else if (!Number.isNaN(code)) pendingBytes.push(code)
        continue
      }
      flushBytes()
      if (!/[a-zA-Z]/.test(next)) {
        // Control symbols: escaped braces and backslash, non-breaking space and hyphen.
        if (next === '\\' || next === '{' || next === '}') emit(next)
        else if (next === '~') emit('\u00a0')
        else if (next === '_') emit('-')
        else if (next === '\n' || next === '\r') emit('\n')
        i += 2
        continue
      }
      const match = /^([a-zA-Z]{1,32})(-?\d{1,10})? ?/.exec(source.slice(i + 1, i + 48))!
      const word = match[1]!
      const parameter = match[2] === undefined ? null : Number(match[2])
      i += 1 + match[0].length
      if (SKIPPED.has(word)) group.skip = true
      else if (word === 'title' && !inTitle) {
        inTitle = stack.length
        group.skip = true
      } else if (word === 'ansicpg' && parameter) {
        try {
          decoder = new TextDecoder(`windows-${parameter}`)
          codePage = `windows-${parameter}`
        } catch {
          decoder = new TextDecoder(codePage)
        }
      } else if (word === 'intbl') inRow = true
      else if (word === 'row') {
        inRow = false
        emit('\n\n')
      } else if (word === 'par' && inRow) emit(' ')
      else if (word === 'uc' && parameter !== null) group.uc = parameter
      else if (word === 'u' && parameter !== null) {
        emit(String.fromCharCode(parameter < 0 ? parameter + 65536 : parameter))
        skipFallback = group.uc
      } else if (word in BREAKS) emit(BREAKS[word]!)
    } else if (c === '\r' || c === '\n') {
      i++
    } else {
      if (skipFallback > 0) {
        skipFallback--
        i++
        continue
      }
      let end = i
      while (end < source.length && !'{}\\\r\n'.includes(source[end]!)) end++
      flushBytes()
      emit(source.slice(i, end))
      i = end
    }
  }
  flushBytes()
  const text = out
    .split('\n')
    .map((line) => line.replace(/[ \t]+/g, (space) => (space.includes('\t') ? '\t' : ' ')).replace(/\s*\|\s*$/, '').replace(/^ /, ''))
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim()
  if (!text) throw new ExtractionError('no text: the RTF document is empty')
  return { text, title: title.trim() || null }
}
