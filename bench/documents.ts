// Documents people have: OCR word recall on rendered pages per font size, pages per second of a
// 20-page scanned PDF (pdftoppm at 300 dpi, then tesseract.js), and the peak memory of refusing a
// 1 GiB zip bomb inside a 1 MB .docx. Pages are rendered by Chromium as the tests do. Then the
// same scan uploaded to a server process (an ingestion job, OCR on its work pool): GET /health
// p99 while it is read, and the server's resident memory before and after.
import { readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { chromium } from 'playwright-core'
import { extractFile, stopOcr } from '../src/modules/rag/extract'
import { OCR_DPI } from '../src/modules/rag/extract/pdf'
import { makeZipBombDocx } from '../test/modules/extract/files'
import { removeTempDirs, tempDir } from '../test/temp'
import { CHROMIUM_ARGS } from '../test/web/harness'
import { benchLogin, startServerProcess } from './server'

/** Seconds the server is left idle after the scan before its memory is read again (the OCR engine's idle stop is 60 s). */
const IDLE_WAIT_S = Number(process.env.BENCH_DOCUMENTS_IDLE_S ?? 65)
const kib = (bytes: number) => Math.round(bytes / 1024)
const status = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0) * 1024

// 1. The zip bomb first, while this process is small: VmHWM (peak resident memory) only grows.
{
  const bomb = makeZipBombDocx(1024)
  // Warm up what a Word upload loads (the extractors and mammoth), so the figure is of the bomb.
  await extractFile('warm.docx', makeZipBombDocx(1)).catch(() => {})
  Bun.gc(true)
  const idle = status('VmRSS')
  const peakBefore = status('VmHWM')
  const started = performance.now()
  const reason = await extractFile('expenses.docx', bomb).then(
    () => 'read (!)',
    (error) => error.reason,
  )
  const ms = performance.now() - started
  const peak = Math.max(status('VmHWM'), peakBefore)
  console.log(`\n## documents\n\nzip bomb (.docx of ${kib(bomb.length)} KiB holding 1 GiB): refused in ${ms.toFixed(1)} ms — "${reason}"`)
  console.log(`  memory: idle RSS ${kib(idle) >> 10} MB, peak ${kib(peak) >> 10} MB (peak above idle: ${Math.max(0, Math.round((peak - idle) / 1048576))} MB; goal ≤ 100 MB)`)
}

const TEXT = [
  'The quarterly maintenance report covers the heating plant, the ventilation ducts and the backup generator in building seven.',
  'Technicians replaced two worn pump seals, cleaned the filters on every floor and measured a supply temperature of 68 degrees.',
  'The generator started within nine seconds during the monthly test and carried the full load for forty minutes without faults.',
  'Invoices 2291 and 2304 remain open; the contractor asks for payment before the end of March so that spare parts can be ordered.',
  'Next quarter the team will inspect the cooling tower, replace the lighting in the car park and update the emergency contact list.',
]
const words = (text: string) => text.toLowerCase().match(/[a-z0-9]+/g) ?? []

/** Share of the expected words found (as a multiset), in order-free comparison. */
function recall(expected: string, found: string): number {
  const pool = new Map<string, number>()
  for (const w of words(found)) pool.set(w, (pool.get(w) ?? 0) + 1)
  const want = words(expected)
  let hit = 0
  for (const w of want) {
    const n = pool.get(w) ?? 0
    if (n > 0) {
      hit++
      pool.set(w, n - 1)
    }
  }
  return hit / want.length
}

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: CHROMIUM_ARGS })
try {
  // A Letter page (8.5 in = 816 CSS px wide) photographed at 300 dpi: what a scanner gives.
  const scale = 300 / 96
  const page = await browser.newPage({ viewport: { width: 816, height: 400 }, deviceScaleFactor: scale })
  const render = async (pt: number, paragraphs: string[]) => {
    await page.setContent(`<body style="margin:0;padding:72px;background:#fff;color:#000;font:${pt}pt 'DejaVu Serif',serif">${paragraphs.map((p) => `<p>${p}</p>`).join('')}</body>`)
    return new Uint8Array(await page.screenshot({ fullPage: true }))
  }

  // 2. Word recall per font size.
  console.log('\nOCR word recall on a rendered page at 300 dpi (tesseract.js 7, eng, LSTM):')
  await extractFile('warm.png', await render(12, ['Warm up.']))
  for (const pt of [8, 10, 12, 14]) {
    const png = await render(pt, TEXT)
    const started = performance.now()
    const out = await extractFile(`page-${pt}.png`, png)
    console.log(`  ${String(pt).padStart(2)} pt: recall ${recall(TEXT.join(' '), out.text).toFixed(3)}, confidence ${out.ocr![0]!.confidence}, ${Math.round(performance.now() - started)} ms${pt === 12 ? ' (goal ≥ 0.97)' : ''}`)
  }

  // 3. A 20-page scan: a PDF of page images without a text layer.
  const images: Uint8Array[] = []
  for (let i = 0; i < 20; i++) images.push(await render(12, [`Page ${i + 1}.`, ...TEXT.slice(0, 3)]))
  const pdfPage = await browser.newPage()
  await pdfPage.setContent(`<body style="margin:0">${images.map((png) => `<section style="page-break-after:always"><img style="width:100%" src="data:image/png;base64,${Buffer.from(png).toString('base64')}"></section>`).join('')}</body>`)
  const scan = new Uint8Array(await pdfPage.pdf({ format: 'Letter', margin: { top: '0', bottom: '0', left: '0', right: '0' } }))
  const started = performance.now()
  const cpu = process.cpuUsage()
  const out = await extractFile('scan.pdf', scan, { timeoutMs: 600_000 })
  const seconds = (performance.now() - started) / 1000
  const used = process.cpuUsage(cpu)
  const cpuPerPage = (used.user + used.system) / 1e6 / 20
  const expected = Array.from({ length: 20 }, (_, i) => [`Page ${i + 1}.`, ...TEXT.slice(0, 3)].join(' ')).join(' ')
  console.log(`\n20-page scanned PDF (${kib(scan.length)} KiB; pages rendered by pdftoppm at ${OCR_DPI} dpi): ${(20 / seconds).toFixed(2)} pages/s (${seconds.toFixed(1)} s; goal ≥ 1), recall ${recall(expected, out.text).toFixed(3)}, OCR pages ${out.ocr?.length}`)
  console.log(`  CPU of this process (OCR engine, pdf.js) per page: ${cpuPerPage.toFixed(2)} s, i.e. ${(1 / cpuPerPage).toFixed(2)} pages/s on one free core (pdftoppm runs beside it, in its own process)`)

  // 4. What rendering costs, apart from OCR: pdftoppm for one page at 150, 200 and 300 dpi.
  const dir = tempDir('bench-docs')
  await Bun.write(join(dir, 'scan.pdf'), scan)
  const renders: string[] = []
  for (const dpi of [150, 200, 300]) {
    const t = performance.now()
    let cpuMs = 0
    for (let n = 1; n <= 5; n++) {
      const child = Bun.spawnSync(['pdftoppm', '-f', String(n), '-l', String(n), '-r', String(dpi), '-gray', '-png', '-singlefile', join(dir, 'scan.pdf'), join(dir, `p${n}`)])
      cpuMs += Number(child.resourceUsage?.cpuTime.total ?? 0) / 1000
    }
    renders.push(`${dpi} dpi ${Math.round((performance.now() - t) / 5)} ms (CPU ${Math.round(cpuMs / 5)} ms)`)
  }
  console.log(`pdftoppm, one page: ${renders.join(', ')}`)

  // 5. The scan uploaded to a server: a job, read on the server's work pool, while a client polls /health.
  await stopOcr()
  await scanThroughServer(scan)
} finally {
  await browser.close()
  await stopOcr()
  removeTempDirs()
}
console.log(`(a shared 2-core machine, load average ${loadavg()[0]!.toFixed(1)} at the end: figures vary with its load)`)

/** Resident memory of a process (VmRSS, or VmHWM: its peak), in MB. */
function processMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const kb = Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0)
  return Math.round(kb / 1024)
}

async function scanThroughServer(scan: Uint8Array) {
  // The time limit of the in-process run above: a loaded machine reads a page in seconds.
  const server = await startServerProcess({ env: { UAGENT_RATE_LIMIT_MAX: '100000000', UAGENT_EXTRACT_TIMEOUT_MS: '600000' } })
  try {
    const { accessToken } = await benchLogin(server.base)
    const headers = { authorization: `Bearer ${accessToken}` }
    const health = async () => {
      const started = performance.now()
      const response = await fetch(`${server.base}/health`)
      const body = (await response.json()) as { workers?: { started: number } }
      return { ms: performance.now() - started, workers: body.workers }
    }
    const p = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * q) / 100))] ?? 0
    const idle: number[] = []
    for (const until = performance.now() + 3000; performance.now() < until; ) idle.push((await health()).ms)
    await Bun.sleep(2000)
    const settled = processMb(server.pid, 'VmRSS')
    const startedWorkers = (await health()).workers?.started
    const form = new FormData()
    form.append('files', new File([scan as BlobPart], 'scan.pdf'))
    const began = performance.now()
    const upload = await fetch(`${server.base}/rag/collections/scans/files`, { method: 'POST', headers, body: form })
    const { jobId } = (await upload.json()) as { jobId?: string }
    if (upload.status !== 202 || !jobId) throw new Error(`the scan's upload answered ${upload.status}, not a job`)
    const busy: number[] = []
    let job: { status: string; files: { status: string; pagesDone?: number; reason?: string }[] } = { status: 'queued', files: [] }
    let polled = 0
    while (!['completed', 'failed', 'cancelled'].includes(job.status)) {
      busy.push((await health()).ms)
      if (performance.now() - polled > 250) {
        polled = performance.now()
        job = (await (await fetch(`${server.base}/rag/jobs/${jobId}`, { headers })).json()) as typeof job
      }
    }
    const seconds = (performance.now() - began) / 1000
    const afterOcr = processMb(server.pid, 'VmRSS')
    const peak = processMb(server.pid, 'VmHWM')
    const p99 = p(busy, 99)
    console.log(`\nthe same scan uploaded to a server process (UAGENT_WORKERS default: ${(await health()).workers?.started} worker(s) started; ${startedWorkers} before the upload): job ${job.status}, the file ${job.files[0]?.status}${job.files[0]?.reason ? ` (${job.files[0].reason})` : ''}, pages read ${job.files[0]?.pagesDone}, ${(20 / seconds).toFixed(2)} pages/s (${seconds.toFixed(1)} s, upload to the job's end)`)
    console.log(`  GET /health idle: ${idle.length} requests, p50 ${p(idle, 50).toFixed(2)} ms, p99 ${p(idle, 99).toFixed(2)} ms`)
    console.log(`  GET /health while the scan is OCRed: ${busy.length} requests, p50 ${p(busy, 50).toFixed(2)} ms, p99 ${p99.toFixed(2)} ms (goal ≤ 10 ms: ${p99 <= 10 ? 'ok' : 'MISSED'})`)
    // The worker stops its OCR engine after 60 s idle (src/modules/rag/extract/ocr.ts).
    await Bun.sleep(IDLE_WAIT_S * 1000)
    const idleAgain = processMb(server.pid, 'VmRSS')
    console.log(`  server RSS: settled after start ${settled} MB (no worker yet), right after the OCR ${afterOcr} MB (the worker, its OCR engine loaded), peak ${peak} MB, ${IDLE_WAIT_S} s later ${idleAgain} MB (the engine stopped, the worker kept)`)
  } finally {
    await server.stop()
  }
}
