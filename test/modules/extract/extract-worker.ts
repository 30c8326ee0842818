// A worker thread that runs extractFile, as the worker pool does: the test below checks that
// extraction (OCR included, whose engine is itself a worker) needs nothing from the main thread.
import { extractFile, stopOcr } from '../../../src/modules/rag/extract'

declare const self: Worker

self.onmessage = async (event: MessageEvent<{ name: string; bytes: Uint8Array }>) => {
  try {
    const out = await extractFile(event.data.name, event.data.bytes, { onProgress: (progress) => postMessage({ progress }) })
    postMessage({ done: { text: out.text, type: out.type, ocr: out.ocr, pageStarts: out.pageStarts } })
  } catch (error) {
    postMessage({ failed: (error as { reason?: string }).reason ?? String(error) })
  } finally {
    await stopOcr()
  }
}
