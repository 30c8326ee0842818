export interface ChunkOptions {
  /** Largest chunk, in characters. */
  maxChars: number
  /** Characters of trailing context repeated at the start of the next chunk. */
  overlapChars: number
  /**
   * Smallest chunk, in characters, unless the whole document is smaller: a shorter piece joins its
   * neighbour. A chunk of a few words has a vector made of a handful of hashed features, which
   * resembles everything by chance (see MIN_CHUNK_SHARE).
   */
  minChars?: number
}

/** The smallest chunk as a share of the largest (200 characters for the built-in embedder's 1,000). */
export const MIN_CHUNK_SHARE = 0.2

/** A page break in extracted text (PDF pages are joined with it): chunks never cross one. */
export const PAGE_BREAK = '\f'

/** Characters per chunk for an embedder that reads at most `maxTokens` tokens (~4 characters each, with headroom). */
export function chunkOptionsFor(maxTokens: number | undefined): ChunkOptions {
  const maxChars = Math.max(400, Math.min(2000, Math.round((maxTokens ?? 400) * 2.5)))
  return { maxChars, overlapChars: Math.round(maxChars * 0.15), minChars: Math.round(maxChars * MIN_CHUNK_SHARE) }
}

/** What comes before a unit: how good a place it is to start a new chunk. */
const enum Break {
  None = 0,
  Paragraph = 1,
  Heading = 2,
  Page = 3,
}

/** A span of the original text: a sentence, a line of code or of a list, or a piece of a long one. */
interface Unit {
  start: number
  end: number
  before: Break
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff
const FENCE = /^\s{0,3}(`{3,}|~{3,})/
const HEADING = /^\s{0,3}#{1,6}(\s|$)/
/** Lines kept whole: list items, table rows, indented code, block quotes. */
const LINE_ITEM = /^(\s*([-*+•]|\d{1,3}[.)])\s|\s*\||\t| {4}|\s*>)/
const SENTENCE_END = /[.!?]["')\]]*\s+/g

/**
 * Splits a span longer than a chunk into pieces of about equal size at white space (so the last
 * piece is never a few stray words), and a word longer than a chunk hard (never inside a surrogate pair).
 */
function splitLong(text: string, unit: Unit, maxChars: number): Unit[] {
  if (unit.end - unit.start <= maxChars) return [unit]
  const parts: Unit[] = []
  let start = unit.start
  while (unit.end - start > maxChars) {
    const pieces = Math.ceil((unit.end - start) / maxChars)
    let cut = start + Math.ceil((unit.end - start) / pieces)
    const space = text.lastIndexOf(' ', cut)
    const newline = text.lastIndexOf('\n', cut)
    const soft = Math.max(space, newline)
    // A soft cut well before the even one would leave the rest too long for the pieces left: look ahead too.
    if (soft > start && cut - soft <= maxChars / 4) cut = soft
    else {
      const ahead = text.slice(cut, start + maxChars).search(/\s/)
      if (ahead >= 0) cut += ahead
      else if (soft > start) cut = soft
      else if (isHighSurrogate(text.charCodeAt(cut - 1))) cut--
    }
    parts.push({ start, end: cut, before: parts.length ? Break.None : unit.before })
    start = cut
    while (start < unit.end && /\s/.test(text[start]!)) start++
  }
  if (start < unit.end) parts.push({ start, end: unit.end, before: parts.length ? Break.None : unit.before })
  return parts
}

/** Sentences of a run of prose lines, as spans of the text (line breaks inside stay as written). */
function sentenceUnits(text: string, start: number, end: number, before: Break): Unit[] {
  const units: Unit[] = []
  const prose = text.slice(start, end)
  let from = 0
  for (const match of prose.matchAll(SENTENCE_END)) {
    const stop = match.index + match[0].trimEnd().length
    units.push({ start: start + from, end: start + stop, before: units.length ? Break.None : before })
    from = match.index + match[0].length
  }
  if (from < prose.length) {
    const rest = prose.slice(from).trimEnd()
    if (rest) units.push({ start: start + from, end: start + from + rest.length, before: units.length ? Break.None : before })
  }
  return units
}

/**
 * The units of a text, in order: headings, sentences of paragraphs, whole lines of lists, tables
 * and code (a fenced code block is kept together, blank lines included), each marked with the
 * kind of break before it.
 */
function segment(text: string): Unit[] {
  const units: Unit[] = []
  let before = Break.Paragraph
  let prose: { start: number; end: number } | null = null
  const closeProse = () => {
    if (prose) units.push(...sentenceUnits(text, prose.start, prose.end, before))
    if (prose) before = Break.None
    prose = null
  }
  let fence: string | null = null
  let at = 0
  while (at <= text.length) {
    const newline = text.indexOf('\n', at)
    const lineEnd = newline === -1 ? text.length : newline
    const line = text.slice(at, lineEnd)
    const lineStart = at
    at = lineEnd + 1
    if (fence !== null) {
      // Inside a fenced code block: every line (blank ones too) is one unit, glued to the block.
      const trimmed = line.trimEnd()
      if (trimmed) units.push({ start: lineStart, end: lineStart + trimmed.length, before: Break.None })
      if (line.trim().startsWith(fence)) {
        fence = null
        before = Break.Paragraph
      }
      if (newline === -1) break
      continue
    }
    if (line.includes(PAGE_BREAK) && !line.replace(PAGE_BREAK, '').trim()) {
      closeProse()
      before = Break.Page
    } else if (!line.trim()) {
      closeProse()
      if (before < Break.Paragraph) before = Break.Paragraph
    } else if (FENCE.test(line)) {
      closeProse()
      fence = FENCE.exec(line)![1]!
      units.push({ start: lineStart, end: lineStart + line.trimEnd().length, before: Math.max(before, Break.Paragraph) })
      before = Break.None
    } else if (HEADING.test(line)) {
      closeProse()
      units.push({ start: lineStart, end: lineStart + line.trimEnd().length, before: Math.max(before, Break.Heading) })
      before = Break.Paragraph
    } else if (LINE_ITEM.test(line)) {
      closeProse()
      units.push({ start: lineStart, end: lineStart + line.trimEnd().length, before })
      before = Break.None
    } else if (prose) prose.end = lineStart + line.trimEnd().length
    else prose = { start: lineStart + (line.length - line.trimStart().length), end: lineStart + line.trimEnd().length }
    if (newline === -1) break
  }
  closeProse()
  return units
}

/**
 * Splits a document into chunks of at most `maxChars` characters. Each chunk is a span of the text
 * exactly as written — line breaks, indentation, list and table structure kept. A chunk ends, by
 * preference, before a heading (once it is a quarter full), at the end of a paragraph, list or code
 * block (once it is half full), and otherwise between sentences or lines, never inside a sentence
 * unless the sentence alone is longer than a chunk. Within a section, the next chunk repeats the
 * previous chunk's last sentences (up to `overlapChars`) for context; a chunk never crosses a
 * page break (PAGE_BREAK), so every chunk of a PDF lies on one page. No chunk is shorter than
 * `minChars` unless its whole document (or PDF page) is (see joinShort).
 */
export function chunkDocument(text: string, options: ChunkOptions): string[] {
  const units = segment(text).flatMap((unit) => splitLong(text, unit, options.maxChars))
  // Chunks as spans of the text, with the page they are on.
  const spans: { start: number; end: number; page: number }[] = []
  let page = 0
  let first = 0 // index of the chunk's first unit
  let fresh = 0 // units of the current chunk not carried over from the previous one
  const span = (from: number, to: number) => units[to]!.end - units[from]!.start
  const flush = (end: number, overlap: boolean) => {
    if (fresh > 0) spans.push({ start: units[first]!.start, end: units[end - 1]!.end, page })
    let next = end
    if (overlap && fresh > 0) {
      while (next - 1 > first && span(next - 1, end - 1) <= options.overlapChars) next--
    }
    first = next
    fresh = 0
  }
  for (let i = 0; i < units.length; i++) {
    const unit = units[i]!
    if (i > first) {
      const size = span(first, i - 1)
      if (unit.before === Break.Page) flush(i, false)
      else if (unit.before === Break.Heading && size >= options.maxChars / 4) flush(i, false)
      else if (unit.before === Break.Paragraph && size >= options.maxChars / 2) flush(i, true)
      else if (span(first, i) > options.maxChars) {
        flush(i, unit.before < Break.Heading)
        // Drop carried-over context that would not leave room for this unit.
        while (first < i && span(first, i) > options.maxChars) first++
      }
    }
    if (unit.before === Break.Page) page++
    fresh++
  }
  if (units.length) flush(units.length, false)
  return joinShort(text, spans, options.minChars ?? 0).map(({ start, end }) => text.slice(start, end))
}

/**
 * Joins every chunk shorter than `minChars` to a neighbour on its page: the one before it, else the
 * one after it. A page (PDF) shorter than that stays a chunk of its own, so every citation keeps its
 * page. The joined chunk may exceed the largest size by less than `minChars` (chunkOptionsFor leaves
 * the embedder that headroom).
 */
function joinShort(text: string, spans: { start: number; end: number; page: number }[], minChars: number) {
  const out = [...spans]
  for (let i = 0; i < out.length; ) {
    const chunk = out[i]!
    const before = out[i - 1]?.page === chunk.page ? out[i - 1] : undefined
    const after = out[i + 1]?.page === chunk.page ? out[i + 1] : undefined
    if ((!before && !after) || text.slice(chunk.start, chunk.end).trim().length >= minChars) {
      i++
      continue
    }
    if (before) {
      out.splice(i - 1, 2, { start: before.start, end: Math.max(before.end, chunk.end), page: chunk.page })
      i--
    } else out.splice(i, 2, { start: chunk.start, end: Math.max(chunk.end, after!.end), page: chunk.page })
  }
  return out
}
