import { describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PDFDocument } from 'pdf-lib'
import { tempDir } from '../../temp'
import { extractFile } from '../../../src/modules/rag/extract'
import { PAGE_BREAK } from '../../../src/modules/rag/chunking'
import { makeEml, makeMbox, makeOdp, makeOds, makeXlsx, pandoc } from './files'

const pageTexts = (text: string, starts: number[]) => starts.map((start, i) => text.slice(start, starts[i + 1] ?? text.length).replaceAll(PAGE_BREAK, '').trim())

const DECK = `---
title: Quarterly review
---

# Revenue

- Revenue grew 12 percent
- Europe leads the growth

::: notes
Mention the currency effect on the Swiss figures.
:::

# Hiring

Four engineers joined the platform team.

# Next steps

Open the Lisbon office in May.
`

describe('slides', () => {
  test('a .pptx from pandoc: one page per slide in order, notes after the slide text, the deck title', async () => {
    const progress: unknown[] = []
    const out = await extractFile('review.pptx', pandoc(DECK, 'pptx'), { onProgress: (p) => progress.push(p) })
    expect(out).toMatchObject({ type: 'pptx', title: 'Quarterly review' })
    const pages = pageTexts(out.text, out.pageStarts!)
    expect(pages).toHaveLength(4)
    expect(pages[0]).toContain('Quarterly review')
    expect(pages[1]).toContain('Revenue grew 12 percent')
    expect(pages[1]).toMatch(/Europe leads the growth[\s\S]*Notes:[\s\S]*Mention the currency effect on the Swiss figures\./)
    expect(pages[2]).toContain('Four engineers joined the platform team.')
    expect(pages[2]).not.toContain('Notes:')
    expect(pages[3]).toContain('Open the Lisbon office in May.')
    expect(progress.at(-1)).toEqual({ pagesDone: 4, pages: 4 })
  })

  test('an .odp from python3-odf: slides in order with their notes', async () => {
    const out = await extractFile(
      'plan.odp',
      makeOdp([
        { lines: ['Roadmap 2027', 'Ship the offline installer'], notes: 'Say the date is not final.' },
        { lines: ['Risks', 'Supplier delays'] },
      ]),
    )
    expect(out.type).toBe('odp')
    const pages = pageTexts(out.text, out.pageStarts!)
    expect(pages).toHaveLength(2)
    expect(pages[0]).toMatch(/Roadmap 2027[\s\S]*Ship the offline installer[\s\S]*Notes:[\s\S]*Say the date is not final\./)
    expect(pages[1]).toContain('Supplier delays')
    expect(pages[1]).not.toContain('Notes:')
  })
})

describe('spreadsheets', () => {
  test('an .xlsx from exceljs: each sheet a page, each row as header: value lines', async () => {
    const bytes = await makeXlsx(
      [
        { name: 'Inventory', rows: [['Item', 'Quantity', 'Location'], ['Torque wrench', 4, 'Shelf B2'], ['Cable ties', 500, 'Drawer 7']] },
        { name: 'Suppliers', rows: [['Name', 'Country'], ['Acme Tools', 'Germany']] },
      ],
      'Workshop stock',
    )
    const out = await extractFile('stock.xlsx', bytes)
    expect(out).toMatchObject({ type: 'xlsx', title: 'Workshop stock' })
    const [inventory, suppliers] = pageTexts(out.text, out.pageStarts!)
    expect(inventory).toContain('## Inventory, rows 2–3')
    expect(inventory).toContain('Item: Torque wrench\nQuantity: 4\nLocation: Shelf B2')
    expect(inventory).toContain('Item: Cable ties\nQuantity: 500\nLocation: Drawer 7')
    expect(suppliers).toContain('Name: Acme Tools\nCountry: Germany')
  })

  test('a large sheet repeats its heading every 20 rows, so every block of rows says where it is from', async () => {
    const rows: (string | number)[][] = [['Order', 'Customer']]
    for (let i = 1; i <= 45; i++) rows.push([1000 + i, `Customer ${i}`])
    const out = await extractFile('orders.xlsx', await makeXlsx([{ name: 'Orders', rows }]))
    expect(out.text.match(/^## Orders, rows \d+–\d+$/gm)).toEqual(['## Orders, rows 2–21', '## Orders, rows 22–41', '## Orders, rows 42–46'])
    expect(out.text).toContain('Order: 1045\nCustomer: Customer 45')
    expect(out.pageStarts).toBeUndefined()
  })

  test('an .ods from python3-odf: sheets and rows', async () => {
    const out = await extractFile('budget.ods', makeOds([{ name: 'Budget', rows: [['Team', 'Amount'], ['Support', 1200], ['Sales', 3400.5]] }]))
    expect(out.type).toBe('ods')
    expect(out.text).toContain('Team: Support\nAmount: 1200')
    expect(out.text).toContain('Team: Sales\nAmount: 3400.5')
  })

  test('.csv (quoted fields, commas and newlines inside) and .tsv', async () => {
    const csv = 'name,role,notes\n"Doe, Jane",engineer,"on call\nweekends"\nSmith,manager,\n'
    const out = await extractFile('team.csv', new TextEncoder().encode(csv))
    expect(out.type).toBe('csv')
    expect(out.text).toContain('name: Doe, Jane\nrole: engineer\nnotes: on call / weekends')
    expect(out.text).toContain('name: Smith\nrole: manager')
    const tsv = await extractFile('rooms.tsv', new TextEncoder().encode('room\tseats\nAtlas\t12\nBoreas\t6\n'))
    expect(tsv.text).toContain('room: Boreas\nseats: 6')
  })
})

describe('documents', () => {
  const MD = `---
title: Site visit report
---

# Findings

The pump in hall 3 leaks at 4 bar — the café “Nord” reported it.

| Part | State |
|------|-------|
| Seal | worn |
`

  test('an .odt from pandoc: headings, paragraphs and tables, its title', async () => {
    const out = await extractFile('report.odt', pandoc(MD, 'odt'))
    expect(out).toMatchObject({ type: 'odt', title: 'Site visit report' })
    expect(out.text).toContain('# Findings')
    expect(out.text).toContain('The pump in hall 3 leaks at 4 bar — the café “Nord” reported it.')
    expect(out.text).toContain('Seal | worn')
  })

  test('an .rtf from pandoc: text with its non-ASCII characters, table rows', async () => {
    const out = await extractFile('report.rtf', pandoc(MD, 'rtf'))
    expect(out.type).toBe('rtf')
    expect(out.text).toContain('The pump in hall 3 leaks at 4 bar — the café “Nord” reported it.')
    expect(out.text).toContain('Seal | worn')
    expect(out.text).not.toContain('Helvetica')
  })

  test('an .epub from pandoc: chapters in reading order, each under its title', async () => {
    const book = `---\ntitle: Pump handbook\n---\n\n# Installing\n\nBolt the pump to the floor.\n\n# Servicing\n\nChange the seal every 2000 hours.\n\n# Disposal\n\nReturn the unit to the dealer.\n`
    const out = await extractFile('pump.epub', pandoc(book, 'epub'))
    expect(out).toMatchObject({ type: 'epub', title: 'Pump handbook' })
    const at = (s: string) => out.text.indexOf(s)
    expect(at('# Installing')).toBeGreaterThanOrEqual(0)
    expect(at('# Installing')).toBeLessThan(at('Bolt the pump'))
    expect(at('Bolt the pump')).toBeLessThan(at('# Servicing'))
    expect(at('# Servicing')).toBeLessThan(at('Change the seal every 2000 hours.'))
    expect(at('Change the seal')).toBeLessThan(at('# Disposal'))
    expect(out.text).not.toContain('<?xml')
  })
})

describe('e-mail', () => {
  const mail = {
    from: 'Ana Silva <ana@example.com>',
    to: 'ops@example.com',
    subject: 'Cold room temperatures',
    date: 'Tue, 03 Mar 2026 09:15:00 +0000',
    messageId: '<cold-room-1@example.com>',
    body: 'The cold room reached 9 degrees overnight. The readings are attached.',
  }

  test('an .eml: headers, body, and the text of its base64 attachments read by the same extractors', async () => {
    const readings = new TextEncoder().encode('time,celsius\n02:00,8.5\n04:00,9.1\n')
    const eml = makeEml({ ...mail, attachments: [{ name: 'readings.csv', bytes: readings }, { name: 'report.odt', bytes: pandoc('# Cause\n\nThe door seal failed.', 'odt') }] })
    expect(new TextDecoder().decode(eml)).toContain('Content-Transfer-Encoding: base64')
    const out = await extractFile('cold-room.eml', eml)
    expect(out).toMatchObject({ type: 'email', title: 'Cold room temperatures' })
    expect(out.text).toContain('From: Ana Silva <ana@example.com>\nTo: ops@example.com\nDate: 2026-03-03T09:15:00.000Z\nSubject: Cold room temperatures')
    expect(out.text).toContain('The cold room reached 9 degrees overnight.')
    expect(out.text).toContain('## Attachment: readings.csv')
    expect(out.text).toContain('time: 04:00\ncelsius: 9.1')
    expect(out.text).toContain('## Attachment: report.odt')
    expect(out.text).toContain('The door seal failed.')
  })

  test('an .mbox: one document per message, its id in the file the Message-ID', async () => {
    const box = makeMbox([
      mail,
      { ...mail, subject: 'Re: Cold room temperatures', messageId: '<cold-room-2@example.com>', body: 'From now on the door is checked every evening.' },
    ])
    const progress: unknown[] = []
    const out = await extractFile('ops.mbox', box, { onProgress: (p) => progress.push(p) })
    expect(out.text).toBe('')
    expect(out.documents!.map((d) => [d.id, d.title, d.type])).toEqual([
      ['cold-room-1@example.com', 'Cold room temperatures', 'email'],
      ['cold-room-2@example.com', 'Re: Cold room temperatures', 'email'],
    ])
    // A body line starting with "From " is kept, unescaped.
    expect(out.documents![1]!.text).toContain('From now on the door is checked every evening.')
    expect(progress.at(-1)).toEqual({ pagesDone: 2, pages: 2 })
  })
})

describe('Word', () => {
  test('a .docx with a picture (pandoc): its text is read, the picture is not inlined', async () => {
    const dir = tempDir('docx')
    // The picture: a page drawn by pdf-lib, rendered to PNG by poppler.
    const pdf = await PDFDocument.create()
    pdf.addPage([300, 150]).drawRectangle({ x: 20, y: 20, width: 200, height: 100 })
    writeFileSync(join(dir, 'chart.pdf'), await pdf.save())
    expect(Bun.spawnSync(['pdftoppm', '-png', '-singlefile', join(dir, 'chart.pdf'), join(dir, 'chart')]).exitCode).toBe(0)
    const docx = pandoc('# Sales\n\nSales rose in May.\n\n![Sales chart](chart.png)\n\nJune was flat.\n', 'docx', dir)
    const out = await extractFile('report.docx', docx)
    expect(out.type).toBe('docx')
    expect(out.text).toContain('# Sales')
    expect(out.text).toContain('Sales rose in May.')
    expect(out.text).toContain('June was flat.')
    expect(out.text).not.toContain('base64')
  }, 60_000)
})
