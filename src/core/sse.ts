const HEARTBEAT_MS = 15_000

/**
 * A text/event-stream Response from an async iterable of events, one `data:` JSON line each
 * (a string event is written as it is, e.g. OpenAI's closing `[DONE]`).
 * A comment heartbeat goes out every 15 s so proxies keep the connection open; when the client
 * goes away the iterator is closed (its `finally` blocks run) and `controller` is aborted.
 */
export function sseResponse(
  events: (signal: AbortSignal) => AsyncIterable<object | string>,
  headers: Record<string, string>,
  requestSignal?: AbortSignal,
): Response {
  const controller = new AbortController()
  requestSignal?.addEventListener('abort', () => controller.abort(), { once: true })
  const encoder = new TextEncoder()
  let heartbeat: ReturnType<typeof setInterval> | undefined
  let iterator: AsyncIterator<object | string> | undefined
  const body = new ReadableStream<Uint8Array>({
    start(stream) {
      heartbeat = setInterval(() => {
        try {
          stream.enqueue(encoder.encode(': ping\n\n'))
        } catch {
          clearInterval(heartbeat)
        }
      }, HEARTBEAT_MS)
    },
    async pull(stream) {
      iterator ??= events(controller.signal)[Symbol.asyncIterator]()
      try {
        const next = await iterator.next()
        if (next.done) {
          clearInterval(heartbeat)
          stream.close()
          return
        }
        stream.enqueue(encoder.encode(`data: ${typeof next.value === 'string' ? next.value : JSON.stringify(next.value)}\n\n`))
      } catch (error) {
        clearInterval(heartbeat)
        stream.error(error)
      }
    },
    async cancel() {
      clearInterval(heartbeat)
      controller.abort()
      await iterator?.return?.()
    },
  })
  return new Response(body, {
    headers: {
      ...headers,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
      connection: 'keep-alive',
    },
  })
}
