import { afterAll, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PDFDocument, StandardFonts } from 'pdf-lib'
import { tempDir } from '../../temp'

const workers: Worker[] = []
afterAll(() => {
  for (const worker of workers) worker.terminate()
})

/** Runs extractFile in a worker thread; resolves with its progress messages and its outcome. */
function extractInWorker(name: string, bytes: Uint8Array): Promise<{ progress: unknown[]; done?: any; failed?: string }> {
  const worker = new Worker(new URL('./extract-worker.ts', import.meta.url).href)
  workers.push(worker)
  const progress: unknown[] = []
  return new Promise((resolve) => {
    worker.onmessage = (event: MessageEvent) => {
      if (event.data.progress) progress.push(event.data.progress)
      else resolve({ progress, ...event.data })
    }
    worker.postMessage({ name, bytes })
  })
}

test('extractFile runs in a worker thread: a scanned page is read by OCR there, with its progress sent back', async () => {
  // A scan: a PDF page of text (pdf-lib) rendered to an image by poppler, then that image as a page of its own.
  const dir = tempDir('worker')
  const text = await PDFDocument.create()
  const font = await text.embedFont(StandardFonts.TimesRoman)
  text.addPage([612, 200]).drawText('The spare keys hang in the server room.', { x: 40, y: 100, font, size: 20 })
  writeFileSync(join(dir, 'text.pdf'), await text.save())
  expect(Bun.spawnSync(['pdftoppm', '-r', '150', '-png', '-singlefile', join(dir, 'text.pdf'), join(dir, 'page')]).exitCode).toBe(0)
  const png = new Uint8Array(await Bun.file(join(dir, 'page.png')).arrayBuffer())
  const scan = await PDFDocument.create()
  const image = await scan.embedPng(png)
  scan.addPage([612, 200]).drawImage(image, { x: 0, y: 0, width: 612, height: 200 })
  const result = await extractInWorker('keys.pdf', await scan.save())
  expect(result.failed).toBeUndefined()
  expect(result.done.type).toBe('pdf')
  expect(result.done.text.replace(/\s+/g, ' ')).toContain('The spare keys hang in the server room.')
  expect(result.done.ocr.map((page: { page: number }) => page.page)).toEqual([1])
  expect(result.progress).toEqual([
    { pagesDone: 0, pages: 1 },
    { pagesDone: 1, pages: 1 },
  ])
}, 60_000)

test('a refusal in a worker thread comes back as its reason', async () => {
  const result = await extractInWorker('photo.png', new TextEncoder().encode('not an image'))
  expect(result.failed).toContain('not a readable image')
}, 60_000)
