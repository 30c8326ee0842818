import { describe, expect, test } from 'bun:test'
import { PDFDocument, StandardFonts } from 'pdf-lib'
import { needsOcr } from '../../../src/modules/rag/extract/ocr-needed'
import { makeImageOnlyPdf, makePdf } from '../kb/files'

/** A PDF whose first page has text and whose second page carries only a drawing (a scanned page). */
async function mixedPdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create()
  const font = await doc.embedFont(StandardFonts.Helvetica)
  doc.addPage().drawText('Quarterly figures for the board.', { x: 50, y: 750, font, size: 12 })
  doc.addPage().drawRectangle({ x: 40, y: 40, width: 300, height: 200 })
  return doc.save()
}

describe('needsOcr', () => {
  test('images need OCR, by extension', async () => {
    for (const name of ['scan.png', 'photo.JPG', 'a.jpeg', 'fax.tif', 'fax.tiff', 'w.webp', 'b.bmp', 'g.gif']) {
      expect(await needsOcr(name, new Uint8Array([1, 2, 3]))).toBe(true)
    }
  })

  test('a PDF with text on every page does not; one page without a text layer does', async () => {
    expect(await needsOcr('manual.pdf', await makePdf([['Page one text.'], ['Page two text.']]))).toBe(false)
    expect(await needsOcr('scan.pdf', await makeImageOnlyPdf())).toBe(true)
    expect(await needsOcr('mixed.pdf', await mixedPdf())).toBe(true)
  })

  test('text files and unreadable PDFs do not', async () => {
    expect(await needsOcr('notes.md', new TextEncoder().encode('# Notes'))).toBe(false)
    expect(await needsOcr('broken.pdf', new TextEncoder().encode('not a pdf at all'))).toBe(false)
  })
})
