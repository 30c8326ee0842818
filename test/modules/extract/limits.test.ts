import { afterAll, describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PDFDocument } from 'pdf-lib'
import { extractFile, stopOcr } from '../../../src/modules/rag/extract'
import { tempDir } from '../../temp'
import { makeOdp, makeZipBombDocx, pandoc, python, Renderer } from './files'

const renderer = new Renderer()
afterAll(async () => {
  await renderer.close()
  await stopOcr()
})

describe('limits against hostile files', () => {
  test('a 1 GiB zip bomb inside a 1 MB .docx is refused at once, from its directory, before inflating anything', async () => {
    const bomb = makeZipBombDocx(1024)
    expect(bomb.length).toBeLessThan(1.2 * 1024 * 1024)
    const started = performance.now()
    await expect(extractFile('expenses.docx', bomb)).rejects.toMatchObject({ reason: expect.stringContaining('expand to more than 200 MB') })
    expect(performance.now() - started).toBeLessThan(500)
  }, 60_000)

  test('a member that declares 1 KB but inflates to 100 MB is stopped at its declared size', async () => {
    // A part that is read (the pictures under word/media/ are not even inflated).
    const bomb = makeZipBombDocx(100, { lie: true, member: 'customXml/item1.xml' })
    const started = performance.now()
    await expect(extractFile('expenses.docx', bomb)).rejects.toMatchObject({ reason: expect.stringContaining('more than its declared size') })
    expect(performance.now() - started).toBeLessThan(2000)
  }, 60_000)

  test('an archive of many members that pass 200 MB together is refused, though each one is small', async () => {
    const slides = python(
      `
import shutil, zipfile
open("in.md", "w").write("# One\\n\\nText.")
import subprocess
subprocess.run(["pandoc", "-s", "in.md", "-o", "out.pptx"], check=True)
with zipfile.ZipFile("out.pptx", "a", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
    for i in range(9):
        with z.open("ppt/media/fill%d.bin" % i, "w") as f:
            for j in range(24):
                f.write(bytes(1 << 20))
`,
      'out.pptx',
    )
    await expect(extractFile('deck.pptx', slides)).rejects.toMatchObject({ reason: expect.stringContaining('expand to more than 200 MB') })
  }, 120_000)

  test('XML entities are never expanded: a DOCTYPE pointing at a file on the server makes the document unreadable, its secret unread', async () => {
    const dir = tempDir('xxe')
    const secret = join(dir, 'secret.txt')
    writeFileSync(secret, 'TOP-SECRET-TOKEN-4471')
    const odt = pandoc('# Notes\n\nMARKER', 'odt')
    writeFileSync(join(dir, 'in.odt'), odt)
    const hostile = python(
      `
import zipfile
src = zipfile.ZipFile(${JSON.stringify(join(dir, 'in.odt'))})
out = zipfile.ZipFile("out.odt", "w", compression=zipfile.ZIP_DEFLATED)
for item in src.infolist():
    data = src.read(item.filename)
    if item.filename == "content.xml":
        text = data.decode()
        head, rest = text.split("?>", 1)
        text = head + '?><!DOCTYPE office:document-content [<!ENTITY xxe SYSTEM "file://${secret}"><!ENTITY inner "INNER-ENTITY">]>' + rest
        data = text.replace("MARKER", "&xxe; &inner;").encode()
    out.writestr(item, data)
out.close()
`,
      'out.odt',
    )
    const result = await extractFile('notes.odt', hostile).then(
      (out) => out.text,
      (error) => error.reason as string,
    )
    expect(result).not.toContain('TOP-SECRET-TOKEN-4471')
    expect(result).not.toContain('INNER-ENTITY')
    expect(result).toContain('not a readable OpenDocument text')
  }, 60_000)

  test('more than 1,000 pages or slides is refused', async () => {
    const pdf = await PDFDocument.create()
    for (let i = 0; i < 1001; i++) pdf.addPage([200, 200])
    await expect(extractFile('long.pdf', await pdf.save())).rejects.toMatchObject({ reason: 'too many pages: 1001, over the limit of 1000' })
    const odp = makeOdp(Array.from({ length: 1001 }, (_, i) => ({ lines: [`Slide ${i + 1}`] })))
    await expect(extractFile('long.odp', odp)).rejects.toMatchObject({ reason: 'too many slides: 1001, over the limit of 1000' })
    // A .pptx whose slide list names 1,001 slides (pandoc's deck, its list lengthened).
    const dir = tempDir('slides')
    writeFileSync(join(dir, 'in.pptx'), pandoc('# One\n\nText.', 'pptx'))
    const deck = python(
      `
import re, zipfile
src = zipfile.ZipFile(${JSON.stringify(join(dir, 'in.pptx'))})
out = zipfile.ZipFile("out.pptx", "w", compression=zipfile.ZIP_DEFLATED)
for item in src.infolist():
    data = src.read(item.filename)
    if item.filename == "ppt/presentation.xml":
        text = data.decode()
        first = re.search(r'<p:sldId [^>]*/>', text).group(0)
        rid = re.search(r'r:id="([^"]+)"', first).group(1)
        extra = "".join('<p:sldId id="%d" r:id="%s"/>' % (5000 + i, rid) for i in range(1001 - text.count("<p:sldId ")))
        data = text.replace(first, first + extra).encode()
    out.writestr(item, data)
out.close()
`,
      'out.pptx',
    )
    await expect(extractFile('long.pptx', deck)).rejects.toMatchObject({ reason: 'too many slides: 1001, over the limit of 1000' })
  }, 120_000)

  test('an image over 50 megapixels is refused from its header, before it is decoded', async () => {
    const dir = tempDir('big')
    const pdf = await PDFDocument.create()
    pdf.addPage([200, 200]).drawText('A poster', { x: 20, y: 100 })
    writeFileSync(join(dir, 'page.pdf'), await pdf.save())
    // 8,000 × 8,000 pixels: 64 megapixels, rendered by poppler.
    expect(Bun.spawnSync(['pdftoppm', '-mono', '-png', '-singlefile', '-scale-to-x', '8000', '-scale-to-y', '8000', join(dir, 'page.pdf'), join(dir, 'big')]).exitCode).toBe(0)
    const png = new Uint8Array(await Bun.file(join(dir, 'big.png')).arrayBuffer())
    const started = performance.now()
    await expect(extractFile('poster.png', png)).rejects.toMatchObject({ reason: 'image too large: 8000×8000 is 64 megapixels, over the limit of 50' })
    expect(performance.now() - started).toBeLessThan(500)
  }, 60_000)

  test('a file that takes longer than its time fails as too slow, and the next file is read by a fresh OCR engine', async () => {
    const scan = await renderer.scannedPdf([['Page one of the contract.'], ['Page two of the contract.'], ['Page three of the contract.']])
    const started = performance.now()
    await expect(extractFile('contract.pdf', scan, { timeoutMs: 300 })).rejects.toMatchObject({ reason: expect.stringContaining('too slow: reading the file took more than 0.3 s') })
    // Well before the three pages could be read (each takes about a second, several under load).
    expect(performance.now() - started).toBeLessThan(8000)
    const out = await extractFile('contract.pdf', scan)
    expect(out.text.replace(/\s+/g, ' ')).toContain('Page three of the contract.')
  }, 120_000)

  test('a cancelled extraction stops with the reason', async () => {
    const controller = new AbortController()
    const scan = await renderer.scannedPdf([['Cancelled page.'], ['Another page.']])
    const work = extractFile('scan.pdf', scan, { signal: controller.signal, onProgress: () => controller.abort() })
    await expect(work).rejects.toMatchObject({ reason: 'cancelled' })
  }, 60_000)
})
