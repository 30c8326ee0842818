/** Reads a text/event-stream body, calling `onEvent` with each `data:` line's JSON. */
export async function readEvents(response: Response, onEvent: (event: Record<string, unknown>) => void): Promise<void> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    buffer += value
    let end: number
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      const data = block
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n')
      if (data && data !== '[DONE]') onEvent(JSON.parse(data))
    }
  }
}
