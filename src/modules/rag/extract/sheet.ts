import Papa from 'papaparse'
import { checkPageCount, type Deadline } from './limits'
import { joinPages } from './paged'
import { ExtractionError } from './types'

/** Rows between two repeats of the sheet's heading: each block of rows says which sheet and rows it holds. */
const ROWS_PER_BLOCK = 20

export interface Sheet {
  name: string
  /** Rows of cell texts, with their row number in the sheet (1-based). */
  rows: { number: number; cells: string[] }[]
}

/**
 * A sheet as text a chunk can carry alone: the first non-empty row is the header, and every other
 * row is written as `header: value` lines (empty cells left out), rows apart by a blank line, so
 * that a row keeps its meaning in any chunk. A heading naming the sheet and its rows comes back
 * every ROWS_PER_BLOCK rows, where a chunk prefers to start.
 */
export function sheetText(sheet: Sheet, deadline?: Deadline): string {
  const rows = sheet.rows.filter((row) => row.cells.some((cell) => cell.trim()))
  if (!rows.length) return ''
  const [head, ...body] = rows
  const header = head!.cells.map((cell, i) => cell.trim().replace(/\s+/g, ' ') || `Column ${i + 1}`)
  if (!body.length) return `## ${sheet.name}\n\n${header.join(' | ')}`
  const out: string[] = []
  body.forEach((row, i) => {
    if (i % ROWS_PER_BLOCK === 0) {
      deadline?.check()
      const last = body[Math.min(body.length, i + ROWS_PER_BLOCK) - 1]!.number
      out.push(`## ${sheet.name}, rows ${row.number}–${last}`)
    }
    const lines = row.cells.flatMap((cell, c) => {
      const value = cell.trim()
      return value ? [`${header[c] ?? `Column ${c + 1}`}: ${value.replace(/\s*\n\s*/g, ' / ')}`] : []
    })
    out.push(lines.join('\n'))
  })
  return out.join('\n\n')
}

/** Sheets as pages: one page per sheet that has anything in it. */
export function sheetsText(sheets: Sheet[], what: string, deadline?: Deadline): { text: string; pageStarts: number[] } {
  checkPageCount(sheets.length, 'sheets')
  const pages = sheets.map((sheet) => sheetText(sheet, deadline)).filter((text) => text)
  if (!pages.length) throw new ExtractionError(`no text: the ${what} has no filled cells`)
  return joinPages(pages)
}

/** A .csv or .tsv file (quoted fields, embedded newlines) as one sheet named after the file. */
export function delimitedSheet(text: string, name: string, delimiter: ',' | '\t' | ''): Sheet {
  const parsed = Papa.parse<string[]>(text, { delimiter, skipEmptyLines: false })
  if (parsed.errors.length && !parsed.data.length) throw new ExtractionError(`not a readable table (${parsed.errors[0]!.message})`)
  return { name, rows: parsed.data.map((cells, i) => ({ number: i + 1, cells: cells.map(String) })) }
}
