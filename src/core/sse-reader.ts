/**
 * The `data:` payloads of a server-sent-events body, one per event (multi-line data joined with
 * newlines), as they arrive. An event left unterminated when the body ends is dropped, as the
 * SSE standard says. Used by the CLI, the upstream model client, the bench and the tests.
 */
export async function* readEventData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.pipeThrough(new TextDecoderStream() as unknown as ReadableWritablePair<string, Uint8Array>).getReader()
  let buffer = ''
  // Lines end in \r\n, \n or \r. A \r at the end of a chunk may be the first half of a \r\n
  // split between two chunks: it is held back until the next chunk tells.
  let heldCr = false
  try {
    while (true) {
      const { value, done } = await reader.read()
      let text: string = (heldCr ? '\r' : '') + (done ? '' : value)
      heldCr = !done && text.endsWith('\r')
      if (heldCr) text = text.slice(0, -1)
      buffer += text.replace(/\r\n?/g, '\n')
      let end: number
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const data = block
          .split('\n')
          .filter((line) => line.startsWith('data:'))
          .map((line) => line.slice(5).replace(/^ /, ''))
        if (data.length) yield data.join('\n')
      }
      if (done) break
    }
  } finally {
    await reader.cancel().catch(() => {})
  }
}
