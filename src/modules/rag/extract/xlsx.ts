import type { Deadline } from './limits'
import { checkPageCount } from './limits'
import type { Sheet } from './sheet'
import { ExtractionError } from './types'
import { firstText } from './xml'
import { SafeZip } from './zip'

const WHAT = 'Excel workbook'

/** An Excel workbook's sheets, in order, as the cell texts a reader sees (formulas as their results, dates and numbers as formatted). */
export async function readXlsx(bytes: Uint8Array, deadline?: Deadline): Promise<{ sheets: Sheet[]; title: string | null }> {
  const zip = new SafeZip(bytes, WHAT, deadline)
  if (!zip.has('xl/workbook.xml')) throw new ExtractionError(`not a readable ${WHAT} (xl/workbook.xml is missing)`)
  // exceljs unzips by itself: it is given the archive re-packed from the checked members, and
  // without the pictures, which it would otherwise decode.
  const checked = zip.repack((name) => !name.startsWith('xl/media/'))
  const title = firstText(zip.text('docProps/core.xml'), 'dc:title')
  // Loaded on the first workbook: exceljs weighs ~15 MB of code.
  const { default: ExcelJS } = await import('exceljs')
  const workbook = new ExcelJS.Workbook()
  try {
    await (deadline ? deadline.race(workbook.xlsx.load(checked as unknown as ArrayBuffer)) : workbook.xlsx.load(checked as unknown as ArrayBuffer))
  } catch (error) {
    if (error instanceof ExtractionError) throw error
    throw new ExtractionError(`not a readable ${WHAT} (${(error as Error).message?.split('\n')[0]})`)
  }
  checkPageCount(workbook.worksheets.length, 'sheets')
  const sheets = workbook.worksheets.map((worksheet) => {
    deadline?.check()
    const sheet: Sheet = { name: worksheet.name, rows: [] }
    worksheet.eachRow({ includeEmpty: false }, (row, number) => {
      const cells: string[] = []
      for (let c = 1; c <= row.cellCount; c++) cells.push(row.getCell(c).text ?? '')
      sheet.rows.push({ number, cells })
    })
    return sheet
  })
  return { sheets, title }
}
