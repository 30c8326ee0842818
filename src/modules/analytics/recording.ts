import { Elysia, StatusMap } from 'elysia'
import { principalOf } from '../../core/auth'
import { usageOf } from '../../core/usage'
import type { HandledMessage } from '../ws'
import { type RequestRecord, type RequestRecorder, UNMATCHED } from './recorder'

const isEventStream = (response: Response) => response.headers.get('content-type')?.startsWith('text/event-stream') === true

/** A copy of `body` that calls `end` once, when it has been read to the end or cancelled. */
function watchEnd(body: ReadableStream<Uint8Array>, end: () => void): ReadableStream<Uint8Array> {
  const reader = body.getReader()
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { value, done } = await reader.read()
        if (done) {
          controller.close()
          end()
        } else controller.enqueue(value)
      } catch (error) {
        end()
        controller.error(error)
      }
    },
    cancel(reason) {
      end()
      return reader.cancel(reason)
    },
  })
}

function statusCode(status: number | string | undefined): number {
  if (typeof status === 'number') return status
  return (status && (StatusMap as Record<string, number>)[status]) || 200
}

/**
 * The one global hook pair that records every request: its arrival is noted in onRequest, and
 * once the response has gone out the record (method, route pattern, status, duration, caller,
 * model usage) is queued on the recorder. A request that matched no route is recorded under a
 * fixed label, never its path. Streamed responses (server-sent events) are recorded when their
 * stream ends, with the tokens the route attached meanwhile (see recordUsage).
 */
export function requestRecording(recorder: RequestRecorder, enabled = true) {
  const arrivals = new WeakMap<Request, number>()
  const streams = new WeakMap<Request, Promise<void>>()
  if (!enabled) return new Elysia({ name: 'analytics:recording' })
  return new Elysia({ name: 'analytics:recording' })
    .onRequest(({ request }) => {
      arrivals.set(request, performance.now())
    })
    .mapResponse({ as: 'global' }, ({ request, responseValue }) => {
      if (!(responseValue instanceof Response) || !responseValue.body || !isEventStream(responseValue)) return
      const ended = Promise.withResolvers<void>()
      streams.set(request, ended.promise)
      return new Response(watchEnd(responseValue.body, ended.resolve), {
        status: responseValue.status,
        statusText: responseValue.statusText,
        headers: responseValue.headers,
      })
    })
    .onAfterResponse({ as: 'global' }, ({ request, route, set, responseValue }) => {
      const arrived = arrivals.get(request) ?? performance.now()
      const status = responseValue instanceof Response ? responseValue.status : statusCode(set.status)
      const finish = (): RequestRecord => {
        const durationMs = performance.now() - arrived
        const usage = usageOf(request)
        return {
          ts: Math.round(Date.now() - durationMs),
          method: request.method,
          route: route || UNMATCHED,
          status,
          durationMs: Math.round(durationMs * 100) / 100,
          userId: principalOf(request)?.user.id ?? null,
          promptTokens: usage?.promptTokens ?? 0,
          completionTokens: usage?.completionTokens ?? 0,
          model: usage?.model ?? null,
        }
      }
      const stream = streams.get(request)
      if (stream) stream.then(recorder.begin(finish))
      else recorder.record(finish())
    })
}

/** Records a WebSocket message as method `WS`, route its type (`WS stream_chat`). */
export function recordSocketMessage(recorder: RequestRecorder, message: HandledMessage): void {
  const usage = message.usageKey ? usageOf(message.usageKey) : undefined
  recorder.record({
    ts: Math.round(Date.now() - message.durationMs),
    method: 'WS',
    route: message.type,
    status: message.status,
    durationMs: Math.round(message.durationMs * 100) / 100,
    userId: message.userId,
    promptTokens: usage?.promptTokens ?? 0,
    completionTokens: usage?.completionTokens ?? 0,
    model: usage?.model ?? null,
  })
}
