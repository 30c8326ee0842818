const HEARTBEAT_MS = 15_000

/** Bodies of the event streams sseResponse made that no wrapper has claimed yet, and their count. */
const unclaimedBodies = new WeakSet<ReadableStream>()
let unclaimed = 0

/**
 * How many event streams sseResponse made that request recording has not yet seen leave (it
 * claims each with claimEventStream). While there are none, a response cannot be one of them, and
 * recording need not read the response's content-type, which costs every response a Headers object.
 */
export function unclaimedEventStreams(): number {
  return unclaimed
}

/** Request recording saw this event stream body leave (a body sseResponse did not make is ignored). */
export function claimEventStream(body: ReadableStream): void {
  if (unclaimedBodies.delete(body)) unclaimed--
}

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
  unclaimedBodies.add(body)
  unclaimed++
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
