// /health while the server works: one client uploads a 20-page PDF in a loop through the real
// upload path (its OCR check and text extraction on the work pool, chunking, embedding; an upload
// that turns into a job, 202, is followed until it ends), another asks for speech in a loop, and a third polls GET /health, one
// request at a time, for BENCH_BUSY_SECONDS (default 15). Its p99 is read beside the same poll of
// the idle server. BENCH_BASELINE_ROOT runs that checkout's server first under the same load.
import { join } from 'node:path'
import { PDFDocument, StandardFonts } from 'pdf-lib'
import { benchLogin, startServerProcess } from './server'

const SECONDS = Number(process.env.BENCH_BUSY_SECONDS ?? 15)
const here = join(import.meta.dir, '..')
const baselineRoot = process.env.BENCH_BASELINE_ROOT

/** A 20-page PDF of prose, ~40 lines a page. */
async function twentyPagePdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create()
  doc.setTitle('Harbour Operations Manual')
  const font = await doc.embedFont(StandardFonts.Helvetica)
  for (let p = 0; p < 20; p++) {
    const page = doc.addPage()
    for (let line = 0; line < 40; line++) {
      page.drawText(`Section ${p + 1}.${line + 1}: berth ${(p * 7 + line) % 31} is cleared by the duty officer of shift ${line % 4} before the tide turns.`, { x: 40, y: 780 - line * 18, font, size: 9 })
    }
  }
  return doc.save()
}

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))] ?? 0

async function pollHealth(base: string, until: number): Promise<number[]> {
  const latencies: number[] = []
  while (performance.now() < until) {
    const started = performance.now()
    const response = await fetch(`${base}/health`)
    await response.arrayBuffer()
    latencies.push(performance.now() - started)
  }
  return latencies
}

/** Polls an ingestion job every 100 ms until it ends; its status. */
export async function jobEnd(base: string, headers: Record<string, string>, id: string): Promise<string> {
  for (;;) {
    const job = (await (await fetch(`${base}/rag/jobs/${id}`, { headers })).json()) as { status: string }
    if (['completed', 'failed', 'cancelled'].includes(job.status)) return job.status
    await Bun.sleep(100)
  }
}

async function run(serverRoot: string, pdf: Uint8Array) {
  const server = await startServerProcess({ root: serverRoot, env: { UAGENT_RATE_LIMIT_MAX: '100000000' } })
  try {
    const { accessToken } = await benchLogin(server.base)
    const headers = { authorization: `Bearer ${accessToken}` }
    const idle = await pollHealth(server.base, performance.now() + 3000)
    const deadline = performance.now() + SECONDS * 1000
    let uploads = 0
    let speeches = 0
    let failures = 0
    let jobs = 0
    const uploading = (async () => {
      for (let i = 0; performance.now() < deadline; i++) {
        const form = new FormData()
        form.append('id', `manual-${i}`)
        form.append('files', new File([pdf as BlobPart], 'manual.pdf'))
        const response = await fetch(`${server.base}/rag/collections/manuals/files`, { method: 'POST', headers, body: form })
        const body = (await response.json()) as { ingested?: number; jobId?: string }
        if (response.status === 202 && body.jobId) {
          jobs++
          if ((await jobEnd(server.base, headers, body.jobId)) === 'completed') uploads++
          else failures++
        } else if (response.ok && body.ingested === 1) uploads++
        else failures++
      }
    })()
    const speaking = (async () => {
      while (performance.now() < deadline) {
        const response = await fetch(`${server.base}/voice/tts`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ text: 'The harbour office opens at six in the morning. The keys are kept by the duty officer; ask at the front desk before you moor.', voice: 'default', language: 'en-US', speed: 1, format: 'mp3' }),
        })
        await response.arrayBuffer()
        if (response.ok) speeches++
        else failures++
      }
    })()
    const busy = await pollHealth(server.base, deadline)
    await Promise.all([uploading, speaking])
    return { idle, busy, uploads, jobs, speeches, failures }
  } finally {
    await server.stop()
  }
}

export async function benchBusy() {
  const pdf = await twentyPagePdf()
  for (const [label, serverRoot] of [...(baselineRoot ? [[`${baselineRoot} (baseline)`, baselineRoot]] : []), ['this checkout', here]] as [string, string][]) {
    const result = await run(serverRoot, pdf)
    console.log(`\n== /health while busy (${SECONDS} s: a 20-page PDF (${(pdf.length / 1024).toFixed(0)} KB) uploaded in a loop, TTS in a loop; server from ${label})`)
    console.log(`GET /health idle:  ${String(result.idle.length).padStart(6)} requests  p50 ${percentile(result.idle, 50).toFixed(2).padStart(7)} ms  p99 ${percentile(result.idle, 99).toFixed(2).padStart(7)} ms`)
    const p99 = percentile(result.busy, 99)
    console.log(`GET /health busy:  ${String(result.busy.length).padStart(6)} requests  p50 ${percentile(result.busy, 50).toFixed(2).padStart(7)} ms  p99 ${p99.toFixed(2).padStart(7)} ms  goal p99 <= 10 ms  ${p99 <= 10 ? 'ok' : 'MISSED'}`)
    console.log(`meanwhile: ${result.uploads} uploads of the PDF ingested (${result.jobs} of them went on as jobs), ${result.speeches} speeches, ${result.failures} failures`)
  }
}

if (import.meta.main) await benchBusy()
