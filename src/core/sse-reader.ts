/**
 * The `data:` payloads of a server-sent-events body, one per event (multi-line data joined with
 * newlines), as they arrive. Used by the CLI, the upstream model client, the bench and the tests.
 */
export async function* readEventData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.pipeThrough(new TextDecoderStream() as unknown as ReadableWritablePair<string, Uint8Array>).getReader()
  let buffer = ''
  try {
    while (true) {
      const { value, done } = await reader.read()
      if (done) break
      buffer += value.replaceAll('\r\n', '\n')
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
    }
  } finally {
    await reader.cancel().catch(() => {})
  }
}
