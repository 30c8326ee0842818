import { afterAll, describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { extractFile, stopOcr } from '../../../src/modules/rag/extract'
import { PAGE_BREAK } from '../../../src/modules/rag/chunking'
import { tempDir } from '../../temp'
import { Renderer } from './files'

const renderer = new Renderer()
afterAll(async () => {
  await renderer.close()
  await stopOcr()
})

const LINES = ['Invoice 4471 is due on 12 March 2026.', 'Please transfer 1,250 euros to the account below.']
const words = (text: string) => text.toLowerCase().match(/[a-z0-9]+/g) ?? []

describe('OCR of images', () => {
  test('a PNG screenshot of rendered text reads word for word, as one OCR page with its confidence', async () => {
    const progress: unknown[] = []
    const out = await extractFile('invoice.png', await renderer.screenshot(LINES), { onProgress: (p) => progress.push(p) })
    expect(out).toMatchObject({ type: 'image', title: 'invoice.png', pageStarts: [0] })
    expect(words(out.text)).toEqual(words(LINES.join(' ')))
    expect(out.ocr).toHaveLength(1)
    expect(out.ocr![0]!.page).toBe(1)
    expect(out.ocr![0]!.confidence).toBeGreaterThan(80)
    expect(progress).toEqual([
      { pagesDone: 0, pages: 1 },
      { pagesDone: 1, pages: 1 },
    ])
  }, 60_000)

  test('JPEG, WebP and TIFF images are read too', async () => {
    const png = await renderer.screenshot(['Warehouse keys are kept in the blue cabinet.'])
    const jpeg = await renderer.screenshot(['Warehouse keys are kept in the blue cabinet.'], { type: 'jpeg' })
    const webp = await renderer.reencode(png, 'image/webp')
    // A TIFF as a scanner writes it: poppler's pdftoppm renders a PDF of the screenshot to TIFF.
    const dir = tempDir('tiff')
    writeFileSync(join(dir, 'page.pdf'), await renderer.scannedPdf([['Warehouse keys are kept in the blue cabinet.']]))
    expect(Bun.spawnSync(['pdftoppm', '-r', '150', '-gray', '-tiff', '-singlefile', join(dir, 'page.pdf'), join(dir, 'page')]).exitCode).toBe(0)
    const tiff = new Uint8Array(await Bun.file(join(dir, 'page.tif')).arrayBuffer())
    for (const [name, bytes] of [['keys.jpg', jpeg], ['keys.webp', webp], ['keys.tif', tiff]] as const) {
      const out = await extractFile(name, bytes)
      expect(out.text.replace(/\s+/g, ' ')).toContain('Warehouse keys are kept in the blue cabinet.')
    }
  }, 60_000)

  test('an image without words, and bytes that are no image, fail with the reason', async () => {
    await expect(extractFile('blank.png', await renderer.screenshot(['&nbsp;']))).rejects.toMatchObject({ reason: expect.stringContaining('no text: OCR found no words') })
    await expect(extractFile('fake.png', new TextEncoder().encode('just some text, not a picture'))).rejects.toMatchObject({ reason: expect.stringContaining('not a readable image') })
  }, 60_000)
})

describe('OCR of scanned PDFs', () => {
  test('pages without a text layer are read by OCR; a page with a text layer keeps it', async () => {
    const pdf = await renderer.scannedPdf([['Chapter one: the boiler must be serviced yearly.'], ['text page'], ['Chapter three: keep the vents clear of dust.']], {
      textPages: { 1: 'This page has a real text layer about radiators.' },
    })
    const progress: { pagesDone: number; pages: number }[] = []
    const out = await extractFile('manual.pdf', pdf, { onProgress: (p) => progress.push(p) })
    expect(out.type).toBe('pdf')
    const pages = out.pageStarts!.map((start, i) => out.text.slice(start, out.pageStarts![i + 1] ?? out.text.length).replaceAll(PAGE_BREAK, '').trim())
    expect(pages).toHaveLength(3)
    expect(pages[0]!.replace(/\s+/g, ' ')).toContain('Chapter one: the boiler must be serviced yearly.')
    expect(pages[1]).toBe('This page has a real text layer about radiators.')
    expect(pages[2]!.replace(/\s+/g, ' ')).toContain('Chapter three: keep the vents clear of dust.')
    expect(out.ocr!.map((p) => p.page)).toEqual([1, 3])
    for (const page of out.ocr!) expect(page.confidence).toBeGreaterThan(80)
    expect(progress).toEqual([
      { pagesDone: 1, pages: 3 },
      { pagesDone: 2, pages: 3 },
      { pagesDone: 3, pages: 3 },
    ])
  }, 60_000)
})
