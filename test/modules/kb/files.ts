// Real files for the knowledge-base tests, made here: PDFs with pdf-lib (two pages of text, an
// encrypted one, an image-only one) and a minimal .docx zipped by hand (the parts Word needs).
import { strToU8, zipSync } from 'fflate'
import { PDFDocument, StandardFonts } from 'pdf-lib'

/** A PDF with one page per entry of `pages`, each line drawn as text, and a document title. */
export async function makePdf(pages: string[][], title = 'Router Manual'): Promise<Uint8Array> {
  const doc = await PDFDocument.create()
  doc.setTitle(title)
  const font = await doc.embedFont(StandardFonts.Helvetica)
  for (const lines of pages) {
    const page = doc.addPage()
    lines.forEach((line, i) => page.drawText(line, { x: 50, y: 750 - i * 18, font, size: 12 }))
  }
  return doc.save({ useObjectStreams: false })
}

/**
 * An encrypted PDF: a real one whose trailer names a standard security handler with a user
 * password, so no reader can open it without that password.
 */
export async function makeEncryptedPdf(): Promise<Uint8Array> {
  const plain = Buffer.from(await makePdf([['Secret salaries for the whole company.']])).toString('latin1')
  const encrypt = `/Encrypt << /Filter /Standard /V 1 /R 2 /O <${'a1'.repeat(32)}> /U <${'b2'.repeat(32)}> /P -4 >> /ID [<0123456789abcdef0123456789abcdef> <0123456789abcdef0123456789abcdef>]`
  return new Uint8Array(Buffer.from(plain.replace(/trailer\s*<</, (m) => `${m} ${encrypt}`), 'latin1'))
}

/** A PDF whose pages carry only a drawing (as a scan would carry only an image): no text layer. */
export async function makeImageOnlyPdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create()
  const page = doc.addPage()
  page.drawRectangle({ x: 40, y: 40, width: 300, height: 200 })
  return doc.save({ useObjectStreams: false })
}

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

/** A .docx with a title in its core properties, a Heading 1 and paragraphs. */
export function makeDocx(title: string, heading: string, paragraphs: string[]): Uint8Array {
  const body = [
    `<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>${escapeXml(heading)}</w:t></w:r></w:p>`,
    ...paragraphs.map((p) => `<w:p><w:r><w:t xml:space="preserve">${escapeXml(p)}</w:t></w:r></w:p>`),
  ].join('')
  return zipSync({
    '[Content_Types].xml': strToU8(
      '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>' +
        '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>' +
        '<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/></Types>',
    ),
    '_rels/.rels': strToU8(
      '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>' +
        '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/></Relationships>',
    ),
    'word/document.xml': strToU8(
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${body}</w:body></w:document>`,
    ),
    'docProps/core.xml': strToU8(
      '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" ' +
        `xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>${escapeXml(title)}</dc:title></cp:coreProperties>`,
    ),
  })
}

export const HTML_PAGE = `<!doctype html><html><head><title>Office &amp; Access</title><style>body { color: red }</style>
<script>document.write("tracking beacon pixel");</script></head><body>
<h1>Badge access</h1><p>Doors open with your badge from 7:00 &ndash; 19:00. Use the &#x3C;guest&#x3E; desk &amp; sign in.</p>
<ul><li>Lost badge: call security</li><li>Visitors: register a day ahead</li></ul></body></html>`

export const MARKDOWN = `# Deploying the service

Build the image, then run it with the port published.

\`\`\`sh
docker build -t uagent .
docker run -p 3000:3000 \\
  -v data:/data uagent
\`\`\`

The health endpoint answers once the models are loaded.
`

/** A multipart body of files (name → bytes), optionally with an \`id\` field before some of them. */
export function formOf(files: [string, Uint8Array | string][], ids: Record<string, string> = {}): FormData {
  const form = new FormData()
  for (const [name, bytes] of files) {
    if (ids[name]) form.append('id', ids[name]!)
    form.append('files', new File([bytes as BlobPart], name))
  }
  return form
}

/** `n` pages of one line each, about turbine blades (for long PDFs). */
export const pagesOf = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => [`${prefix} page ${i + 1}: the turbine inspection covers blade ${i + 1}.`])
