// Knowledge base: upload-and-ingest throughput (multipart upload streamed to disk, text extracted,
// chunked, embedded with the built-in embedder, written) for PDF and for plain text, in MB/s of
// uploaded bytes, through the real HTTP route in-process.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PDFDocument, StandardFonts } from 'pdf-lib'
import { buildApp, createServices } from '../src/app'

const WORDS = 'router firewall backup restore quota version sync client server certificate account password share link trash log level port token'.split(' ')
let seed = 7
const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31)
const sentence = () => `${Array.from({ length: 8 + Math.floor(random() * 10) }, () => WORDS[Math.floor(random() * WORDS.length)]).join(' ')}.`

async function pdf(pages: number): Promise<Uint8Array> {
  const doc = await PDFDocument.create()
  const font = await doc.embedFont(StandardFonts.Helvetica)
  for (let p = 0; p < pages; p++) {
    const page = doc.addPage()
    for (let line = 0; line < 40; line++) page.drawText(sentence(), { x: 40, y: 800 - line * 19, font, size: 10 })
  }
  return doc.save()
}

const text = (bytes: number) => {
  let out = ''
  while (out.length < bytes) out += `${Array.from({ length: 5 }, sentence).join(' ')}\n\n`
  return out
}

const dataDir = mkdtempSync(join(tmpdir(), 'uagent-bench-kb-'))
const services = createServices({ database: ':memory:', dataDir, adminEmail: 'bench@example.com', adminPassword: 'bench-password-1', env: {}, log: () => {} })
const app = buildApp(services)
const login = await app.handle(new Request('http://localhost/auth/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.com', password: 'bench-password-1' }) }))
const { accessToken } = (await login.json()) as { accessToken: string }

/** Uploads the files in requests of up to ~8 MB; returns MB/s of file bytes. */
async function run(label: string, collection: string, files: [string, Uint8Array | string][]) {
  const total = files.reduce((n, [, f]) => n + (typeof f === 'string' ? Buffer.byteLength(f) : f.byteLength), 0)
  const started = performance.now()
  let batch = new FormData()
  let size = 0
  let chunks = 0
  const send = async () => {
    const response = await app.handle(new Request(`http://localhost/rag/collections/${collection}/files`, { method: 'POST', headers: { authorization: `Bearer ${accessToken}` }, body: batch }))
    const body = (await response.json()) as { failed: number; files: { chunks?: number }[] }
    if (body.failed) throw new Error(`${label}: ${body.failed} files failed`)
    chunks += body.files.reduce((n, f) => n + (f.chunks ?? 0), 0)
    batch = new FormData()
    size = 0
  }
  for (const [name, bytes] of files) {
    const length = typeof bytes === 'string' ? Buffer.byteLength(bytes) : bytes.byteLength
    if (size && size + length > 8 * 1024 * 1024) await send()
    batch.append('files', new File([bytes], name))
    size += length
  }
  if (size) await send()
  const seconds = (performance.now() - started) / 1000
  const mb = total / 1024 / 1024
  console.log(`${label.padEnd(40)} ${(mb / seconds).toFixed(2).padStart(7)} MB/s  (${files.length} files, ${mb.toFixed(1)} MB, ${chunks} chunks, ${seconds.toFixed(1)} s)`)
}

console.log('\n== knowledge base: upload and ingest ==')
const pdfs: [string, Uint8Array][] = []
for (let i = 0; i < 20; i++) pdfs.push([`manual-${i}.pdf`, await pdf(10)])
await run('upload + ingest PDF (20 × 10 pages)', 'pdfs', pdfs)
await run('upload + ingest text (200 × 20 KB)', 'texts', Array.from({ length: 200 }, (_, i) => [`note-${i}.md`, text(20 * 1024)] as [string, string]))
rmSync(dataDir, { recursive: true, force: true })
