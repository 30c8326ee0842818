// Real files for the extraction tests, made by real tools: pandoc (pptx, odt, epub, rtf, docx),
// python3-odf (odp, ods), exceljs (xlsx), Python's email and mailbox packages (eml, mbox), and
// Chromium (screenshots of rendered text, and PDFs of pages holding only such an image: scans).
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type Browser, chromium } from 'playwright-core'
import { tempDir } from '../../temp'
import { CHROMIUM_ARGS } from '../../web/harness'

/** Debian's python3, where python3-odf is installed (.ci/run); a python3 first on PATH (pyenv) may not see Debian's packages. */
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'

function run(cmd: string[], cwd: string, stdin?: string): void {
  const result = Bun.spawnSync(cmd, { cwd, stdin: stdin === undefined ? 'ignore' : new TextEncoder().encode(stdin), stderr: 'pipe' })
  if (result.exitCode !== 0) throw new Error(`${cmd[0]} failed: ${result.stderr.toString()}`)
}

/** A file converted by pandoc from Markdown (`pptx`, `odt`, `epub`, `rtf`, `docx`), in `dir` (where the Markdown's pictures are). */
export function pandoc(markdown: string, extension: string, dir = tempDir('pandoc')): Uint8Array {
  writeFileSync(join(dir, 'in.md'), markdown)
  run(['pandoc', '-s', '-f', 'markdown', 'in.md', '-o', `out.${extension}`], dir)
  return new Uint8Array(readFileSync(join(dir, `out.${extension}`)))
}

/** Runs a Python program that writes `out` in its working folder, and returns that file. */
export function python(program: string, out: string): Uint8Array {
  const dir = tempDir('python')
  run([PYTHON, '-'], dir, program)
  return new Uint8Array(readFileSync(join(dir, out)))
}

/** An OpenDocument presentation made by python3-odf: one page per slide, each with its lines and optional speaker notes. */
export function makeOdp(slides: { lines: string[]; notes?: string }[]): Uint8Array {
  return python(
    `
import json
from odf.opendocument import OpenDocumentPresentation
from odf.style import Style, MasterPage, PageLayout
from odf.draw import Page, Frame, TextBox
from odf.presentation import Notes
from odf.text import P
doc = OpenDocumentPresentation()
layout = PageLayout(name="L"); doc.automaticstyles.addElement(layout)
master = MasterPage(name="M", pagelayoutname=layout); doc.masterstyles.addElement(master)
for i, slide in enumerate(json.loads(${JSON.stringify(JSON.stringify(slides))})):
    page = Page(name="page%d" % (i + 1), masterpagename=master)
    frame = Frame(width="20cm", height="10cm", x="1cm", y="1cm")
    box = TextBox()
    for line in slide["lines"]:
        box.addElement(P(text=line))
    frame.addElement(box); page.addElement(frame)
    if slide.get("notes"):
        notes = Notes(); nframe = Frame(width="20cm", height="5cm", x="1cm", y="1cm"); nbox = TextBox()
        nbox.addElement(P(text=slide["notes"])); nframe.addElement(nbox); notes.addElement(nframe); page.addElement(notes)
    doc.presentation.addElement(page)
doc.save("out.odp")
`,
    'out.odp',
  )
}

/** An OpenDocument spreadsheet made by python3-odf: sheets of rows (numbers stay numbers). */
export function makeOds(sheets: { name: string; rows: (string | number)[][] }[]): Uint8Array {
  return python(
    `
import json
from odf.opendocument import OpenDocumentSpreadsheet
from odf.table import Table, TableRow, TableCell
from odf.text import P
doc = OpenDocumentSpreadsheet()
for sheet in json.loads(${JSON.stringify(JSON.stringify(sheets))}):
    table = Table(name=sheet["name"])
    for row in sheet["rows"]:
        tr = TableRow()
        for value in row:
            if isinstance(value, (int, float)):
                cell = TableCell(valuetype="float", value=value)
            else:
                cell = TableCell(valuetype="string")
            cell.addElement(P(text=str(value)))
            tr.addElement(cell)
        table.addElement(tr)
    doc.spreadsheet.addElement(table)
doc.save("out.ods")
`,
    'out.ods',
  )
}

/** An Excel workbook made by exceljs. */
export async function makeXlsx(sheets: { name: string; rows: (string | number | Date)[][] }[], title?: string): Promise<Uint8Array> {
  const { default: ExcelJS } = await import('exceljs')
  const workbook = new ExcelJS.Workbook()
  if (title) workbook.title = title
  for (const sheet of sheets) workbook.addWorksheet(sheet.name).addRows(sheet.rows)
  return new Uint8Array(await workbook.xlsx.writeBuffer())
}

export interface Mail {
  from: string
  to: string
  subject: string
  date: string
  messageId: string
  body: string
  attachments?: { name: string; bytes: Uint8Array }[]
}

const pythonMessage = (mail: Mail) => `
msg = EmailMessage()
msg["From"] = ${JSON.stringify(mail.from)}
msg["To"] = ${JSON.stringify(mail.to)}
msg["Subject"] = ${JSON.stringify(mail.subject)}
msg["Date"] = ${JSON.stringify(mail.date)}
msg["Message-ID"] = ${JSON.stringify(mail.messageId)}
msg.set_content(${JSON.stringify(mail.body)})
for name, data in ${JSON.stringify((mail.attachments ?? []).map((a) => [a.name, Buffer.from(a.bytes).toString('base64')]))}:
    msg.add_attachment(base64.b64decode(data), maintype="application", subtype="octet-stream", filename=name)
`

/** An e-mail made by Python's email package; attachments are base64-encoded parts. */
export function makeEml(mail: Mail): Uint8Array {
  return python(`import base64\nfrom email.message import EmailMessage\n${pythonMessage(mail)}\nopen("out.eml", "wb").write(bytes(msg))\n`, 'out.eml')
}

/** An mbox of the messages, written by Python's mailbox package. */
export function makeMbox(mails: Mail[]): Uint8Array {
  return python(
    `import base64, mailbox\nfrom email.message import EmailMessage\nbox = mailbox.mbox("out.mbox")\n` +
      mails.map((mail) => `${pythonMessage(mail)}\nbox.add(msg)\n`).join('') +
      'box.flush()\nbox.close()\n',
    'out.mbox',
  )
}

/** Chromium, for rendered pages: launched once per test file, closed by `close()` (call it in afterAll). */
export class Renderer {
  private browser: Promise<Browser> | null = null

  private launch(): Promise<Browser> {
    this.browser ??= chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: CHROMIUM_ARGS })
    return this.browser
  }

  /** A screenshot of paragraphs rendered in a serif font of `fontPx` CSS pixels, on a white page. */
  async screenshot(paragraphs: string[], options: { fontPx?: number; width?: number; type?: 'png' | 'jpeg'; scale?: number } = {}): Promise<Uint8Array> {
    const browser = await this.launch()
    const page = await browser.newPage({ viewport: { width: options.width ?? 900, height: 200 }, deviceScaleFactor: options.scale ?? 1 })
    try {
      await page.setContent(`<body style="margin:0;padding:30px;background:#fff;color:#000;font:${options.fontPx ?? 16}px 'DejaVu Serif',serif">${paragraphs.map((p) => `<p>${p}</p>`).join('')}</body>`)
      return new Uint8Array(await page.screenshot({ fullPage: true, type: options.type ?? 'png' }))
    } finally {
      await page.close()
    }
  }

  /** The same image re-encoded by Chromium's canvas (`image/webp`). */
  async reencode(png: Uint8Array, type: 'image/webp'): Promise<Uint8Array> {
    const browser = await this.launch()
    const page = await browser.newPage()
    try {
      // Runs in the page (a string: this project's TypeScript has no DOM types).
      const dataUrl: string = await page.evaluate(`(async () => {
        const image = new Image()
        image.src = 'data:image/png;base64,${Buffer.from(png).toString('base64')}'
        await image.decode()
        const canvas = document.createElement('canvas')
        canvas.width = image.width
        canvas.height = image.height
        canvas.getContext('2d').drawImage(image, 0, 0)
        return canvas.toDataURL('${type}', 1)
      })()`)
      return new Uint8Array(Buffer.from(dataUrl.split(',')[1]!, 'base64'))
    } finally {
      await page.close()
    }
  }

  /**
   * A scanned document: a PDF (Chromium's page.pdf) whose pages each hold only an image of
   * rendered text, and no text layer. `textPages` adds real text pages after them, by index.
   */
  async scannedPdf(pages: string[][], options: { fontPx?: number; textPages?: Record<number, string> } = {}): Promise<Uint8Array> {
    const images = []
    for (const paragraphs of pages) images.push(await this.screenshot(paragraphs, { fontPx: options.fontPx ?? 24, width: 1275, scale: 1 }))
    const browser = await this.launch()
    const page = await browser.newPage()
    try {
      const body = images
        .map((png, i) => {
          const text = options.textPages?.[i]
          if (text !== undefined) return `<section style="page-break-after:always;font:14px serif"><p>${text}</p></section>`
          return `<section style="page-break-after:always"><img style="width:100%" src="data:image/png;base64,${Buffer.from(png).toString('base64')}"></section>`
        })
        .join('')
      await page.setContent(`<body style="margin:0">${body}</body>`)
      return new Uint8Array(await page.pdf({ format: 'Letter', printBackground: true, margin: { top: '0.5in', bottom: '0.5in', left: '0.5in', right: '0.5in' } }))
    } finally {
      await page.close()
    }
  }

  async close(): Promise<void> {
    const browser = this.browser
    this.browser = null
    if (browser) await (await browser).close()
  }
}

/**
 * A zip bomb inside a real .docx: pandoc's document plus a member that inflates to `mib` MiB of
 * zeros from ~1 KB per MiB. Python's zipfile writes it; its compressor is given the one deflate
 * block that 1 MiB of zeros makes (flushed, so every copy stands alone), which is what zlib would
 * write for each MiB anyway, without spending seconds making it (`member` names it). `lie` rewrites the member's
 * declared size to 1 KB, as a hostile file would, to hide it from a reader that trusts the directory.
 */
export function makeZipBombDocx(mib: number, options: { lie?: boolean; member?: string } = {}): Uint8Array {
  const member = options.member ?? 'word/media/image1.bin'
  const dir = tempDir('bomb')
  writeFileSync(join(dir, 'in.docx'), pandoc('# Expenses\n\nThe travel policy covers trains.', 'docx'))
  return python(
    `
import shutil, struct, zipfile, zlib

block = zlib.compressobj(9, zlib.DEFLATED, -15)
block = block.compress(bytes(1 << 20)) + block.flush(zlib.Z_FULL_FLUSH)
class Repeat:
    def compress(self, data):
        return block
    def flush(self):
        return zlib.compressobj(9, zlib.DEFLATED, -15).flush()
zipfile._get_compressor = lambda *a, **k: Repeat()
shutil.copy(${JSON.stringify(join(dir, 'in.docx'))}, "out.docx")
with zipfile.ZipFile("out.docx", "a", compression=zipfile.ZIP_DEFLATED) as z:
    with z.open(${JSON.stringify(member)}, "w", force_zip64=${mib >= 4096 ? 'True' : 'False'}) as f:
        chunk = bytes(1 << 20)
        for i in range(${mib}):
            f.write(chunk)
if ${options.lie ? 'True' : 'False'}:
    data = bytearray(open("out.docx", "rb").read())
    info = zipfile.ZipFile("out.docx").getinfo(${JSON.stringify(member)})
    struct.pack_into("<I", data, info.header_offset + 22, 1024)
    name = ${JSON.stringify(member)}.encode()
    at = data.find(b"PK\\x01\\x02")
    while at >= 0:
        length = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46 : at + 46 + length] == name:
            struct.pack_into("<I", data, at + 24, 1024)
        at = data.find(b"PK\\x01\\x02", at + 4)
    open("out.docx", "wb").write(data)
`,
    'out.docx',
  )
}
